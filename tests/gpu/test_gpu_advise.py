"""Known answers for the analyzer (docs/advise.md): for each rule, a program built to trigger it,
where the top finding for the right frame must be that rule, and a control where it must not
fire.

Each program runs under the `proton` command in its own process and the profile is read back
with proton.profiles (the viewer's reader and the analyzer in C++). Run on a GPU machine:

    python -m pytest -q tests/gpu/test_gpu_advise.py
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton.profiles as profiles  # noqa: E402
from conftest import run_under_proton  # noqa: E402


def run(tmp_path, name, code, flags=(), env=None):
    """Runs `code` under `proton -n NAME flags`; returns the analyzer's findings."""
    return profiles.read(run_under_proton(tmp_path, name, code, flags, env)).advise()


def answers(found):
    return [f for f in found if not f["rule"].startswith("hint.")]


def of_rule(found, rule):
    return [f for f in found if f["rule"] == rule]


# --- launch_bound: 3,000 launches of tiny elementwise kernels, against the same kernels replayed
# from one CUDA graph.
EAGER = """
import torch, proton
x = torch.zeros(256, device="cuda")
for _ in range(10):  # warm-up: allocator, lazy module loading
    x.add_(1)
torch.cuda.synchronize()
with proton.cpu_timed_scope("step"):
    for _ in range(1000):
        x.add_(1); x.mul_(0.5); x.neg_()
    torch.cuda.synchronize()
"""

GRAPHED = """
import torch, proton
x = torch.zeros(256, device="cuda")
def body(reps):
    for _ in range(reps):
        x.add_(1); x.mul_(0.5); x.neg_()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    body(1)  # warm-up: 3 eager launches, too few to be a pattern
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with proton.scope("capture"), torch.cuda.graph(g):
    body(100)
torch.cuda.synchronize()
with proton.cpu_timed_scope("step"):
    for _ in range(10):
        g.replay()
    torch.cuda.synchronize()
"""


def test_launch_bound_fires_on_tiny_eager_kernels(tmp_path):
    found = answers(run(tmp_path, "eager", EAGER))
    assert found, "no finding"
    top = found[0]
    assert top["rule"] == "launch_bound" and top["frame"] == ["step"], found
    assert top["evidence"]["launches"] >= 3000
    assert top["evidence"]["gpu_busy_share"] < 0.5
    assert top["severity"] == "high"


def test_launch_bound_is_quiet_on_a_cuda_graph_replay(tmp_path):
    found = run(tmp_path, "graphed", GRAPHED)
    assert not of_rule(found, "launch_bound"), found
    assert not [f for f in found if f["severity"] == "high"], found


# --- roofline: a copy that gathers with a stride (each 4-byte load pulls a 32-byte sector),
# against the same copy reading contiguously; both declare the bytes they need.
COPY = """
import torch, triton, triton.language as tl

def meta(grid, metadata, args):
    tag = f",V={args['V']}" if args["V"] else ""
    return {"name": f"copy[STRIDE={args['STRIDE']}{tag}]", "bytes": 8 * args["n"]}

# V changes nothing in the code: two values of it are two compiled variants that run alike.
@triton.jit(launch_metadata=meta)
def copy(x, y, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr, V: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = (offs.to(tl.int64) * STRIDE) % n
    tl.store(y + offs, tl.load(x + src, mask=mask), mask=mask)

n = 1 << 26
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
grid = (triton.cdiv(n, 1024),)
for stride, v in CONFIGS:
    copy[grid](x, y, n, STRIDE=stride, BLOCK=1024, V=v)  # compile and warm up
torch.cuda.synchronize()
import proton
with proton.scope("copies"):
    for stride, v in CONFIGS:
        for _ in range(20):
            copy[grid](x, y, n, STRIDE=stride, BLOCK=1024, V=v)
torch.cuda.synchronize()
if not FACTS:  # as for kernels loaded before profiling started: no compiled facts to join
    proton._proton._clear_compiled_kernels()
"""


def copies(tmp_path, name, strides, flags=("-k", "triton"), configs=None, facts=True):
    pytest.importorskip("triton")
    configs = configs or [(s, 0) for s in strides]
    return run(tmp_path, name, f"CONFIGS, FACTS = {configs}, {facts}\n" + COPY, flags)


def test_roofline_fires_on_a_strided_gather(tmp_path):
    found = answers(copies(tmp_path, "strided", [33]))
    top = found[0]
    assert top["rule"] == "roofline", found
    assert top["frame"][0] == "copies" and top["frame"][-1] == "copy[STRIDE=33]", top
    assert top["evidence"]["bound"] == "memory"
    assert top["evidence"]["share_of_peak"] < 0.5


def test_roofline_is_quiet_on_a_contiguous_copy(tmp_path):
    found = copies(tmp_path, "contiguous", [1])
    assert not of_rule(found, "roofline"), found


# --- variant_spread: the two configs of one kernel family, strided and contiguous, against two
# contiguous ones; without compiled facts (with them, autotune_spread answers: its tests below).
def test_variant_spread_names_the_slow_variant(tmp_path):
    found = of_rule(copies(tmp_path, "variants", [1, 33], facts=False), "variant_spread")
    # The warm-up launches (profiled from the start by the command) are siblings too.
    assert found and all(f["frame"][-1] == "copy[STRIDE=33]" for f in found), found
    inner = [f for f in found if f["frame"][0] == "copies"]
    assert len(inner) == 1, found
    assert inner[0]["evidence"]["best_variant"] == "copy[STRIDE=1]"
    assert inner[0]["evidence"]["spread"] >= 1.5


def test_variant_spread_is_quiet_on_equal_variants(tmp_path):
    # Two compiled variants of the same code. (STRIDE=n+1 reads the same addresses as STRIDE=1
    # but is a real slower variant: without the constant 1 the loads cannot be vectorized.)
    found = copies(tmp_path, "equal", None, configs=[(1, 0), (1, 1)], facts=False)
    assert not of_rule(found, "variant_spread"), found


# --- stall_hot_line: PC samples of the strided gather stall on memory; without PC sampling the
# rule is silent and the hint asks for it.
def test_stall_hot_line_names_memory_on_the_gather(tmp_path):
    found = of_rule(copies(tmp_path, "sampled", [33], ("-m", "pcsampling", "-k", "triton")),
                    "stall_hot_line")
    assert found, "no hot line"
    top = found[0]
    assert top["frame"][0] == "copies" and "copy[STRIDE=33]" in top["frame"], top
    assert top["evidence"]["family"] == "memory", top


def test_stall_hot_line_is_quiet_without_samples(tmp_path):
    found = copies(tmp_path, "unsampled", [33])
    assert not of_rule(found, "stall_hot_line")
    assert of_rule(found, "hint.pcsampling")


# --- straggler: two ranks (one GPU each when there are two, else the same one); rank 1 does
# four times the work in "step". Merged with the viewer's reader as --advise merges them.
RANKS = """
import os, torch, proton
rank = int(os.environ["RANK"])
x = torch.randn(4096, 4096, device="cuda")
x @ x
torch.cuda.synchronize()
with proton.scope("step"):
    for _ in range(REPS[rank]):
        x @ x
    torch.cuda.synchronize()
"""


def two_ranks(tmp_path, reps):
    viewer = os.environ.get("PROTON_VIEWER", "proton-viewer")
    files = []
    for rank in (0, 1):
        device = str(rank % torch.cuda.device_count())
        script = tmp_path / "ranks.py"
        script.write_text(f"REPS = {reps}\n" + textwrap.dedent(RANKS))
        r = subprocess.run([sys.executable, "-m", "proton", "-n", "ddp", str(script)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "RANK": str(rank), "WORLD_SIZE": "2",
                                "LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": device})
        assert r.returncode == 0, r.stderr
        files.append(str(tmp_path / f"ddp.rank{rank}.hatchet"))
    r = subprocess.run([viewer, "--advise", "--format", "json", *files], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_straggler_names_the_slow_rank(tmp_path):
    found = of_rule(two_ranks(tmp_path, [20, 80]), "straggler")
    assert found and found[0]["frame"][0] == "step", found
    assert found[0]["evidence"]["slowest_rank"] == 1


def test_straggler_is_quiet_on_balanced_ranks(tmp_path):
    assert not of_rule(two_ranks(tmp_path, [40, 40]), "straggler")


# --- spills and occupancy: the launch facts CUPTI's kernel records carry (grid, block,
# registers, shared and local memory) against the device map's SM limits. The programs'
# numbers were checked with Triton 3.6's ptxas for sm_90 (ptxas -v).
def launched(tmp_path, name, code):
    """Runs `code` under `proton`; returns (findings, the kernel nodes' metrics by name)."""
    found = run(tmp_path, name, code)
    with open(tmp_path / f"{name}.hatchet") as f:
        root, devices = json.load(f)
    kernels = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if "device_id" in node.get("metrics", {}):
            kernels[node["frame"]["name"]] = node["metrics"]
        stack.extend(node.get("children", []))
    return found, kernels, devices


# One warp holding an 8,192-element row across a reduction: 256 values a thread, 255 registers
# and a 176-byte stack frame of spills. The control spreads 1,024 elements over 4 warps: 27
# registers, no local memory.
REDUCE = """
import torch, triton, triton.language as tl

@triton.jit
def rownorm(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask, other=0.0)
    s = tl.sum(v * v, axis=0)
    tl.store(y + offs, tl.exp(v) * s + v, mask=mask)

n = 1 << 24
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
grid = (triton.cdiv(n, BLOCK),)
rownorm[grid](x, y, n, BLOCK=BLOCK, num_warps=WARPS)  # compile and warm up
torch.cuda.synchronize()
import proton
with proton.scope("work"):
    for _ in range(100):
        rownorm[grid](x, y, n, BLOCK=BLOCK, num_warps=WARPS)
torch.cuda.synchronize()
"""


def reduce(tmp_path, name, block, warps):
    pytest.importorskip("triton")
    return launched(tmp_path, name, f"BLOCK, WARPS = {block}, {warps}\n" + REDUCE)


def test_spills_fire_on_a_one_warp_reduction_of_8192_elements(tmp_path):
    found, kernels, _ = reduce(tmp_path, "spilling", 8192, 1)
    facts = kernels["rownorm"]
    # The compiler's count of spilled registers: the GPU's record of local memory per thread
    # has read 0 for this kernel (CUDA 13, H100 and H200), so the compile-time fact carries it.
    assert facts["block_x"] == 32 and facts.get("triton_n_spills", 0) >= 16, \
        json.dumps(facts, sort_keys=True)
    spills = of_rule(found, "spills")
    assert spills, found
    assert spills[0]["frame"][-1] == "rownorm" and spills[0]["frame"][0] == "work", spills
    assert spills[0]["evidence"]["registers_per_thread"] >= 200
    # The compiled kernel's facts joined the node (once per compiled kernel, not per launch):
    # the compiler's spill count beside the launch's local memory, and its knobs named.
    assert facts["triton_num_warps"] == 1 and facts["triton_n_spills"] >= 16, facts
    assert facts["registers_per_thread"] >= facts["triton_n_regs"] > 0, facts
    assert facts["triton_config"].startswith("BLOCK=8192, num_warps=1"), facts
    assert facts["triton_source"].rsplit(":", 1)[0].endswith(".py"), facts
    ev = spills[0]["evidence"]
    assert ev["n_spills"] == facts["triton_n_spills"] and ev["num_warps"] == 1, ev
    assert "num_warps 1 -> 2" in spills[0]["suggestion"], spills[0]
    assert "BLOCK=8192" in spills[0]["suggestion"], spills[0]


def test_spills_are_quiet_when_the_row_is_spread_over_four_warps(tmp_path):
    found, kernels, _ = reduce(tmp_path, "spread", 1024, 4)
    facts = kernels["rownorm"]
    assert facts["block_x"] == 128 and facts["local_bytes_per_thread"] < 64, facts
    assert facts["triton_num_warps"] == 4 and facts["triton_n_spills"] < 16, facts
    assert not of_rule(found, "spills"), found


# 1,024-thread blocks that transpose a [ROWS, 256] fp32 tile through shared memory. ROWS=128:
# 128 KB of shared memory a block, so one block per SM of 228 KB (sm_90) where the block size
# and the 32 registers a thread would allow two: occupancy 50%, limited by shared memory.
# ROWS=64: 64 KB, two blocks, every warp slot used.
TRANSPOSE = """
import torch, triton, triton.language as tl

@triton.jit
def transpose(x, y, n, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    v = tl.load(x + rows[:, None] * COLS + cols[None, :])
    tl.store(y + cols[:, None] * n + rows[None, :], tl.trans(v))

n = 1 << 16
x = torch.randn(n, 256, device="cuda")
y = torch.empty(256, n, device="cuda")
grid = (n // ROWS,)
transpose[grid](x, y, n, ROWS=ROWS, COLS=256, num_warps=32)  # compile and warm up
torch.cuda.synchronize()
import proton
with proton.scope("work"):
    for _ in range(200):  # ~10 ms: well above the rules' 1 ms
        transpose[grid](x, y, n, ROWS=ROWS, COLS=256, num_warps=32)
torch.cuda.synchronize()
"""


def transpose(tmp_path, name, rows):
    pytest.importorskip("triton")
    major, _ = torch.cuda.get_device_capability()
    if major < 9:
        pytest.skip("the shared-memory sizes are those of sm_90 and later (228 KB per SM)")
    return launched(tmp_path, name, f"ROWS = {rows}\n" + TRANSPOSE)


def test_occupancy_fires_on_1024_thread_blocks_limited_by_shared_memory(tmp_path):
    found, kernels, devices = transpose(tmp_path, "big_tiles", 128)
    facts = kernels["transpose"]
    assert facts["block_x"] == 1024, facts
    assert facts["static_shared_bytes"] + facts["dynamic_shared_bytes"] >= 128 * 1024, facts
    device = next(iter(devices["CUDA"].values()))
    assert device["max_warps_per_sm"] == 64 and device["shared_memory_per_sm"] > 0, device
    occ = of_rule(found, "occupancy")
    assert occ and occ[0]["frame"][-1] == "transpose", found
    ev = occ[0]["evidence"]
    assert ev["limiter"] == "shared_memory", ev
    assert ev["blocks_per_sm"] == 1 and ev["blocks_by_shared_memory"] == 1, ev
    assert ev["occupancy"] == 0.5, ev
    assert "of shared memory per block" in occ[0]["suggestion"]


def test_occupancy_is_quiet_when_two_blocks_fit(tmp_path):
    found, kernels, _ = transpose(tmp_path, "small_tiles", 64)
    assert kernels["transpose"]["block_x"] == 1024
    assert not of_rule(found, "occupancy"), found


# --- tail_effect: the same compute-bound blocks (1,024 threads, a dependent multiply-add chain of
# ITERS steps: tens of microseconds a block), launched as half as many blocks as the GPU has SMs
# (half the SMs idle through the kernel) against eight blocks per SM (whole waves whether one or
# two blocks fit an SM).
CHEW = """
import torch, triton, triton.language as tl

@triton.jit
def chew(x, y, iters, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(iters):
        acc = acc * 0.999 + v
    tl.store(y + offs, acc)

sms = torch.cuda.get_device_properties(0).multi_processor_count
grid = (max(1, sms // 2),) if HALF else (8 * sms,)
x = torch.randn(grid[0] * 1024, device="cuda")
y = torch.empty_like(x)
chew[grid](x, y, 20000, BLOCK=1024, num_warps=32)  # compile and warm up
torch.cuda.synchronize()
import proton
with proton.scope("work"):
    for _ in range(50):
        chew[grid](x, y, 20000, BLOCK=1024, num_warps=32)
torch.cuda.synchronize()
"""


def chew(tmp_path, name, half):
    pytest.importorskip("triton")
    return launched(tmp_path, name, f"HALF = {half}\n" + CHEW)


def test_tail_effect_fires_on_a_grid_of_half_the_sms(tmp_path):
    found, kernels, _ = chew(tmp_path, "half", True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert kernels["chew"]["grid_x"] == max(1, sms // 2), kernels["chew"]
    tail = of_rule(found, "tail_effect")
    assert tail and tail[0]["frame"] == ["work", "chew"], found
    ev = tail[0]["evidence"]
    assert ev["shape"] == "small_grid" and ev["num_sms"] == sms, ev
    assert ev["idle_share"] >= 0.45, ev


def test_tail_effect_is_quiet_on_whole_waves(tmp_path):
    found, kernels, _ = chew(tmp_path, "waves", False)
    assert kernels["chew"]["block_x"] == 1024, kernels["chew"]
    assert not of_rule(found, "tail_effect"), found


# --- autotune_spread: two configs of one copy kernel, each named by its launch_metadata and
# compiled with its own num_warps (so each node's compiled kernel is told apart by its block
# size): a strided gather on 2 warps against a contiguous copy on 8, one grid, no work declared
# (so roofline stays silent and the configs are compared per launch). The control runs two
# contiguous configs.
CONFIGS_COPY = """
import torch, triton, triton.language as tl

def meta(grid, metadata, args):
    return {"name": f"copy[STRIDE={args['STRIDE']},W={metadata.num_warps}]"}

@triton.jit(launch_metadata=meta)
def copy(x, y, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = (offs.to(tl.int64) * STRIDE) % n
    tl.store(y + offs, tl.load(x + src, mask=mask), mask=mask)

n = 1 << 26
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
grid = (triton.cdiv(n, 1024),)
for stride, warps in CONFIGS:
    copy[grid](x, y, n, STRIDE=stride, BLOCK=1024, num_warps=warps)  # compile and warm up
torch.cuda.synchronize()
import proton
with proton.scope("configs"):
    for stride, warps in CONFIGS:
        for _ in range(20):
            copy[grid](x, y, n, STRIDE=stride, BLOCK=1024, num_warps=warps)
torch.cuda.synchronize()
"""


def configs(tmp_path, name, pairs):
    pytest.importorskip("triton")
    found = run(tmp_path, name, f"CONFIGS = {pairs}\n" + CONFIGS_COPY, ("-k", "triton"))
    with open(tmp_path / f"{name}.hatchet") as f:
        root, _ = json.load(f)
    scope = next(c for c in root["children"] if c["frame"]["name"] == "configs")
    kernels = {c["frame"]["name"]: c["metrics"] for c in scope["children"]}
    return found, kernels


def test_autotune_spread_names_the_worst_and_best_config(tmp_path):
    found, kernels = configs(tmp_path, "autotuned", [(1, 8), (33, 2)])
    assert kernels["copy[STRIDE=33,W=2]"]["triton_config"] == (
        "STRIDE=33, BLOCK=1024, num_warps=2, num_stages=3"), kernels
    slow = [f for f in answers(found) if f["frame"] == ["configs", "copy[STRIDE=33,W=2]"]]
    assert slow and slow[0]["rule"] == "autotune_spread", found
    ev = slow[0]["evidence"]
    assert ev["worst_config"].startswith("STRIDE=33,") and "num_warps=2" in ev["worst_config"]
    assert ev["best_config"].startswith("STRIDE=1,") and "num_warps=8" in ev["best_config"]
    assert ev["unit"] == "launch" and ev["spread"] >= 1.5, ev
    assert not of_rule(found, "variant_spread"), found


def test_autotune_spread_is_quiet_on_two_contiguous_configs(tmp_path):
    found, kernels = configs(tmp_path, "even_configs", [(1, 8), (1, 4)])
    # Not vacuous: both nodes carry their config.
    assert all("triton_config" in m for m in kernels.values()), kernels
    assert not of_rule(found, "autotune_spread"), found


# --- kernel_time_variance: one kernel, one grid, one path, whose loop count is read from
# memory: launches alternate between 0 and 3,000 iterations (tens of us against over a ms on an
# H100). The control runs 1,000 iterations every time.
SPIN = """
import torch, triton, triton.language as tl

@triton.jit
def spin(x, iters_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    for _ in range(tl.load(iters_ptr)):
        v = v * 0.999 + 0.5
    tl.store(x + offs, v, mask=mask)

n = 1 << 24
x = torch.randn(n, device="cuda")
counts = [torch.tensor([c], dtype=torch.int32, device="cuda") for c in ITERS]
grid = (triton.cdiv(n, 1024),)
spin[grid](x, counts[0], n, BLOCK=1024)  # compile and warm up
torch.cuda.synchronize()
import proton
with proton.scope("work"):
    for i in range(40):
        spin[grid](x, counts[i % len(counts)], n, BLOCK=1024)
torch.cuda.synchronize()
"""


def spins(tmp_path, name, iters):
    pytest.importorskip("triton")
    return run(tmp_path, name, f"ITERS = {iters}\n" + SPIN)


def test_kernel_time_variance_fires_on_data_dependent_launch_times(tmp_path):
    found = answers(spins(tmp_path, "varied", [0, 3000]))
    mine = [f for f in found if f["frame"] == ["work", "spin"]]
    assert mine and mine[0]["rule"] == "kernel_time_variance", found
    ev = mine[0]["evidence"]
    assert ev["count"] == 40 and ev["launch_config_varies"] == "no", ev
    assert ev["mean_over_min"] >= 1.5 and ev["max_over_min"] >= 3, ev
    assert "contention" in mine[0]["suggestion"]


def test_kernel_time_variance_is_quiet_on_even_launches(tmp_path):
    found = spins(tmp_path, "steady", [1000])
    assert not of_rule(found, "kernel_time_variance"), found


# --- region_imbalance: one region ("skew") around a clock spin whose length depends on the warp:
# warp 0 of each CTA spins 200,000 cycles, the other three 2,000 (instrumentation mode, one
# record per warp). The control spins 2,000 cycles on every warp.
SKEW = """
import torch, triton, triton.language as tl
import proton.language as pl

pl.enable_semantic("triton")

ASM = '''{
.reg .u32 %w;
.reg .u64 %t, %lim;
.reg .pred %first, %more;
mov.u32 %w, %tid.x;
shr.u32 %w, %w, 5;
setp.eq.u32 %first, %w, 0;
selp.u64 %lim, LONG, SHORT, %first;
mov.u64 %t, %clock64;
add.u64 %lim, %lim, %t;
SPIN_LOOP:
mov.u64 %t, %clock64;
setp.lt.u64 %more, %t, %lim;
@%more bra SPIN_LOOP;
mov.b32 $0, $1;
}'''.replace("LONG", str(LONG)).replace("SHORT", str(SHORT))

@triton.jit
def skewed(x, out, ASM_TEXT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    with pl.scope("skew"):
        v = tl.inline_asm_elementwise(ASM_TEXT, "=r,r", [v], dtype=tl.float32, is_pure=False,
                                      pack=1)
    tl.store(out + offs, v)

x = torch.randn(128 * 264, device="cuda")
out = torch.empty_like(x)
import proton
with proton.scope("work"):
    for _ in range(10):
        skewed[(264,)](x, out, ASM_TEXT=ASM, BLOCK=128, num_warps=4)
torch.cuda.synchronize()
assert torch.equal(out, x)
"""


def skew(tmp_path, name, long, short):
    pytest.importorskip("triton")
    code = f"LONG, SHORT = {long}, {short}\n" + SKEW
    found = run(tmp_path, name, code, ("-b", "instrumentation"))
    with open(tmp_path / f"{name}.hatchet") as f:
        root, _ = json.load(f)
    stack = [root]
    while stack:
        node = stack.pop()
        if node["frame"]["name"] == "skew":
            return found, node["metrics"]
        stack.extend(node.get("children", []))
    raise AssertionError(f"no region 'skew' in {name}.hatchet")


def test_region_imbalance_names_the_region_one_warp_holds_up(tmp_path):
    found, m = skew(tmp_path, "skewed", 200000, 2000)
    # 4 warps a CTA: (200,000 + 3 x 2,000) / 4 cycles on average, 200,000 on the slowest.
    assert m["max_warp_cycles"] >= 3 * m["mean_warp_cycles"], m
    mine = [f for f in answers(found) if f["frame"][-1] == "skew"]
    assert mine and mine[0]["rule"] == "region_imbalance", found
    assert mine[0]["evidence"]["imbalance"] >= 3, mine[0]
    assert mine[0]["severity"] == "medium"


def test_region_imbalance_is_quiet_on_even_warps(tmp_path):
    found, m = skew(tmp_path, "even_warps", 2000, 2000)
    assert m["max_warp_cycles"] < 1.5 * m["mean_warp_cycles"], m
    assert not of_rule(found, "region_imbalance"), found


# --- The compiled kernel's facts under a real Autotuner: the node of the tuned kernel carries the
# config the autotuner chose (its kwargs, num_warps, num_stages), found when Triton loaded it.
AUTOTUNED = """
import json, torch, triton, triton.language as tl

@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=1, num_stages=2),
                          triton.Config({"BLOCK": 1024}, num_warps=8, num_stages=3)], key=["n"])
@triton.jit
def scale(x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x + offs, tl.load(x + offs, mask=mask) * 0.5, mask=mask)

n = 1 << 24
x = torch.randn(n, device="cuda")
grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
scale[grid](x, n)  # tunes: both configs compiled, loaded and timed
torch.cuda.synchronize()
import proton
with proton.scope("tuned"):
    for _ in range(10):
        scale[grid](x, n)
torch.cuda.synchronize()
best = scale.best_config
from proton import _proton
json.dump({"kwargs": best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages,
           "compiled": _proton._compiled_kernels()}, open("best.json", "w"), default=str)
"""


def test_the_tuned_kernel_carries_the_autotuners_chosen_config(tmp_path):
    pytest.importorskip("triton")
    run(tmp_path, "tuned", AUTOTUNED)
    best = json.loads((tmp_path / "best.json").read_text())
    with open(tmp_path / "tuned.hatchet") as f:
        root, _ = json.load(f)
    scope = next(c for c in root["children"] if c["frame"]["name"] == "tuned")
    (node,) = [c for c in scope["children"] if c["frame"]["name"] == "scale"]
    m = node["metrics"]
    want = (f"BLOCK={best['kwargs']['BLOCK']}, num_warps={best['num_warps']}, "
            f"num_stages={best['num_stages']}")
    assert m.get("triton_config") == want, json.dumps({"node": m, "compiled": best["compiled"]})
    assert m["triton_num_warps"] == best["num_warps"] and m["block_x"] == 32 * best["num_warps"]
    assert m["triton_source"].rsplit(":", 1)[0].endswith("tuned.py"), m
    assert m["registers_per_thread"] >= m["triton_n_regs"] > 0, m
