"""mode="pcsampling": source lines with stall reasons under the right kernel and call path, at
the hardware's own cost (docs/pc-sampling.md)."""

import importlib.util
import json
import os
import pathlib
import re
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
triton = pytest.importorskip("triton")

import proton  # noqa: E402
from proton import _proton  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import pc_kernels  # noqa: E402  (the slow-line kernel, shared with bench/pc_sampling.py)

SLOW_LINE = pc_kernels.SLOW_LINE
MEMORY_STALLS = pc_kernels.MEMORY_STALLS


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    # Compiled and loaded before any session: lines come from Triton's cache.
    return pc_kernels.load(tmp_path_factory.mktemp("kernels"))


def lines_of(kernel_node):
    return {c["frame"]["name"]: c["metrics"] for c in kernel_node.get("children", [])
            if "num_samples" in c.get("metrics", {})}


def stalls(metrics):
    return {k[len("stalled_"):]: v for k, v in metrics.items() if k.startswith("stalled_")}


def only_kernel(prof, *path):
    ks = prof.kernels(prof.node(*path), match="slow_line_kernel", direct=True)
    assert len(ks) == 1, prof.render()
    return ks[0]


def test_triton_lines_land_under_the_kernel_of_their_scope(kernel, out_name, read_profile):
    proton.start(out_name, mode="pcsampling")
    with proton.scope("work"):
        for _ in range(20):
            kernel(32)
    proton.finalize()
    prof = read_profile()
    lines = lines_of(only_kernel(prof, "work"))
    assert lines, f"no source lines under the kernel: {prof.render()}\n{_proton._pc_sampling_stats()}"
    assert all(name.endswith("@slow_line_kernel") for name in lines), list(lines)
    assert any(pc_kernels.slow_line_location() in name for name in lines), list(lines)
    for name, m in lines.items():
        assert sum(stalls(m).values()) == m["num_samples"], (name, m)
        assert m["num_stalled_samples"] <= m["num_samples"], (name, m)


def test_the_slow_line_holds_most_samples_and_memory_leads(kernel, out_name, read_profile):
    proton.start(out_name, mode="pcsampling")
    for _ in range(30):
        kernel(128)
    proton.finalize()
    lines = lines_of(only_kernel(read_profile()))
    top_name, top = max(lines.items(), key=lambda kv: kv[1]["num_samples"])
    assert pc_kernels.slow_line_location() in top_name, (top_name, lines)
    top_stalls = {k: v for k, v in stalls(top).items() if k != "selected"}
    leader = max(top_stalls, key=top_stalls.get)
    assert leader in MEMORY_STALLS, top_stalls


def test_cublas_kernels_without_lines_keep_samples_on_the_kernel(out_name, read_profile):
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    a @ a
    torch.cuda.synchronize()
    proton.start(out_name, mode="pcsampling")
    with proton.scope("gemm"):
        for _ in range(50):
            a @ a
    proton.finalize()
    prof = read_profile()
    gemm = prof.kernels(prof.node("gemm"))
    assert gemm, prof.render()
    samples = sum(k["metrics"].get("num_samples", 0) for k in gemm)
    samples += sum(m["num_samples"] for k in gemm for m in lines_of(k).values())
    # CUPTI gives NVIDIA's own library kernels (cuBLAS's nvjet_*, measured on an H100 with
    # CUDA 13) no PCs: their samples come only as nonUsrKernelsTotalSamples, which Proton
    # counts on the root as pc_samples_non_user. Kernels that do get PCs but carry no line
    # tables keep them on the kernel node itself, as triton.profiler does.
    non_user = prof.root_metrics.get("pc_samples_non_user", 0)
    assert samples > 0 or non_user > 0, (prof.root_metrics, _proton._pc_sampling_stats())
    if samples > 0:
        names = [n for k in gemm for n in lines_of(k)]
        assert not any(n.startswith("pc:0x") for n in names), names[:10]
    else:
        # Written to the profile, not only counted: at most what CUPTI reported in all.
        assert 0 < non_user <= _proton._pc_sampling_stats()["non_user"], prof.root_metrics


TORCH_KERNEL_SAMPLED = """
import json, sys, torch, proton
from proton import _proton
x = torch.randn(1 << 24, device="cuda")
for _ in range(3):
    torch.sin(x)
torch.cuda.synchronize()
proton.start(sys.argv[1], mode="pcsampling")
with proton.scope("torch_ops"):
    for _ in range(200):
        torch.sin(x)
proton.finalize()
print("STATS " + json.dumps(_proton._pc_sampling_stats()))
"""


def test_torch_kernel_without_lines_has_samples_on_its_node(out_name, read_profile, run_script):
    # PyTorch's own kernels carry no line tables: triton.profiler (CuptiPCSampling) adds their
    # num_samples and stall metrics on the kernel node; so do we, summed over its PCs. In a
    # process of its own: CUPTI returns the samples of a context sampled by an earlier session
    # of the process as non-user kernels (no PCs at all).
    result = run_script(TORCH_KERNEL_SAMPLED, out_name)
    assert result.returncode == 0, result.stderr[-4000:]
    prof = read_profile()
    ks = prof.kernels(prof.node("torch_ops"), direct=True)
    assert ks, prof.render()
    k = max(ks, key=lambda n: n["metrics"]["count"])
    m = k["metrics"]
    assert m["count"] == 200, prof.render()
    assert m.get("num_samples", 0) > 0, (m, result.stdout[-2000:], result.stderr[-2000:])
    assert sum(stalls(m).values()) == m["num_samples"], m
    assert m["num_stalled_samples"] <= m["num_samples"], m
    assert not any(c["frame"]["name"].startswith("pc:0x") for c in k.get("children", [])), k


def test_samples_across_cuda_graph_replays(kernel, out_name, read_profile):
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        kernel(16)  # warm on the capture stream
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            kernel(32)
    torch.cuda.synchronize()
    proton.start(out_name, mode="pcsampling")
    with proton.scope("replay"):
        for _ in range(50):
            g.replay()
    proton.finalize()
    prof = read_profile()
    ks = prof.kernels(prof.node("replay"), match="slow_line_kernel")
    assert ks, prof.render()
    assert sum(m["num_samples"] for k in ks for m in lines_of(k).values()) > 0, prof.render()


def test_two_call_paths_share_samples_by_their_time(kernel, out_name, read_profile):
    proton.start(out_name, mode="pcsampling")
    with proton.scope("long"):
        for _ in range(20):
            kernel(96)
    with proton.scope("short"):
        for _ in range(20):
            kernel(24)
    proton.finalize()
    prof = read_profile()
    k_long, k_short = only_kernel(prof, "long"), only_kernel(prof, "short")
    s_long = sum(m["num_samples"] for m in lines_of(k_long).values())
    s_short = sum(m["num_samples"] for m in lines_of(k_short).values())
    assert s_long > 0 and s_short > 0, prof.render()
    t_ratio = k_long["metrics"]["time (ns)"] / k_short["metrics"]["time (ns)"]
    # The rule (docs/pc-sampling.md): a function's samples split by the call paths' GPU time of
    # it over the same interval, so the sample ratio follows the time ratio.
    assert s_long / s_short == pytest.approx(t_ratio, rel=0.1), (s_long, s_short, t_ratio)


def steps(kernel, n=50):
    """A loop of steps with a synchronize each, as a training loop is."""
    for _ in range(n):
        for _ in range(10):
            kernel(64)
        torch.cuda.synchronize()


def test_a_buffer_too_small_for_the_interval_samples_slower_not_nothing(kernel, out_name,
                                                                        read_profile, capfd):
    # 2^5 cycles into 1 MB would fill within microseconds, and CUPTI then drops every sample
    # until sampling is disabled: the period is raised at start until the buffer holds it.
    proton.start(out_name, mode="pcsampling:interval=32:buffer_mb=1")
    steps(kernel)
    proton.finalize()
    err = capfd.readouterr().err
    stats = _proton._pc_sampling_stats()
    assert "raised from 2^5" in err, err
    assert stats["asked_period_log2"] == 5 and stats["period_log2"] > 5, stats
    prof = read_profile()
    samples = sum(m["num_samples"] for m in lines_of(only_kernel(prof)).values())
    assert samples > 0, (stats, prof.render())
    if stats["buffer_full"]:  # not expected at this rate, but never silent
        assert prof.root_metrics.get("pc_sampling_buffer_full", 0) == stats["buffer_full"]


def test_a_full_hardware_buffer_is_counted_and_reported(kernel, out_name, read_profile, capfd):
    # adapt=0 keeps the user's 2^5 into 1 MB: the buffer fills, CUPTI answers
    # CUPTI_ERROR_OUT_OF_MEMORY from then on; the drain that sees it counts it and says so.
    proton.start(out_name, mode="pcsampling:interval=32:buffer_mb=1:adapt=0")
    steps(kernel)
    proton.finalize()
    err = capfd.readouterr().err
    stats = _proton._pc_sampling_stats()
    prof = read_profile()
    assert stats["buffer_full"] == 1, stats  # one fill: CUPTI repeats it until disable
    assert prof.root_metrics.get("pc_sampling_buffer_full", 0) == 1, prof.root_metrics
    assert "filled at 2^5 cycles" in err, err
    m = re.search(r"filled (\d+) time\(s\) at 2\^5 cycles.*; (\d+) of the fills were seen at the end",
                  err)
    assert m and int(m.group(1)) == 1 and int(m.group(2)) == 0, err
    assert only_kernel(prof)["metrics"]["count"] == 500, prof.render()  # kernel timing goes on


def test_start_and_finalize_twice(kernel, tmp_path, read_profile):
    for cycle in range(2):
        name = str(tmp_path / f"cycle{cycle}")
        proton.start(name, mode="pcsampling")
        for _ in range(10):
            kernel(32)
        proton.finalize()
        lines = lines_of(only_kernel(read_profile(name)))
        assert sum(m["num_samples"] for m in lines.values()) > 0, (cycle, lines)


def test_kernels_run_between_sessions_never_lose_the_next_sessions_samples_silently(
        kernel, tmp_path, read_profile, capfd):
    # CUDA 13's CUPTI returns every sample of a context disabled and enabled again after kernels
    # ran in between as "non-user" (no PC records; measured on an H100, for the minimal client
    # too: bench/probes/pc_load_order_probe.py floor_nt). Pausing instead keeps the records but makes
    # CUPTI refuse the next session's kernel tracing. So: lines if CUPTI gives records, else
    # the samples on the root and one line saying why (docs/pc-sampling.md, "Several sessions").
    first = str(tmp_path / "first")
    proton.start(first, mode="pcsampling")
    kernel(32)
    proton.finalize()
    for _ in range(10):  # no profiler
        kernel(32)
    torch.cuda.synchronize()
    capfd.readouterr()
    second = str(tmp_path / "second")
    proton.start(second, mode="pcsampling")
    for _ in range(20):
        kernel(32)
    proton.finalize()
    err = capfd.readouterr().err
    stats = _proton._pc_sampling_stats()
    prof = read_profile(second)
    k = only_kernel(prof)
    assert k["metrics"]["count"] == 20, prof.render()  # kernel timing is whole either way
    lines = lines_of(k)
    if stats["pc_records"] == 0:
        assert stats["all_non_user_after_earlier"], stats
        assert "earlier PC-sampling session" in err, err
        assert prof.root_metrics.get("pc_samples_non_user", 0) > 0, prof.root_metrics
    else:
        assert sum(m["num_samples"] for m in lines.values()) > 0, (stats, lines)


CUPTI_TAKEN = """
import json, sys, torch, proton
from torch.profiler import ProfilerActivity, profile
x = torch.ones(16, device="cuda")
torch.cuda.synchronize()
outcome = {}
with profile(activities=[ProfilerActivity.CUDA]):
    try:
        proton.start(sys.argv[1], mode="pcsampling")
        x + x
        proton.finalize()
        outcome["started"] = True
    except Exception as e:
        outcome["error"] = f"{type(e).__name__}: {e}"
    y = x + x
torch.cuda.synchronize()
outcome["program_went_on"] = float(y.sum().item()) == 32.0
print("OUTCOME " + json.dumps(outcome))
"""


def outcome_of(result):
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("OUTCOME ")]
    assert result.returncode == 0 and lines, f"program did not go on:\n{result.stderr[-4000:]}"
    return json.loads(lines[-1][len("OUTCOME "):])


def test_cupti_taken_by_another_tool_says_so_and_runs_on(out_name, run_script):
    result = run_script(CUPTI_TAKEN, out_name)
    outcome = outcome_of(result)
    assert outcome["program_went_on"], outcome
    said = [outcome.get("error", "")] + [ln for ln in result.stderr.splitlines()
                                         if ln.startswith("proton:")]
    assert any("CUPTI" in ln or "PC sampling" in ln for ln in said), result.stderr[-3000:]


PC_SAMPLING_REFUSED = """
import json, sys, torch, proton
x = torch.ones(16, device="cuda")
torch.cuda.synchronize()
outcome = {}
import _proton_bench  # the floor enables PC sampling on this context first
_proton_bench.pc_floor_start()
proton.start(sys.argv[1], mode="pcsampling")
with proton.scope("s"):
    y = x + x
proton.finalize()
_proton_bench.pc_floor_stop()
outcome["program_went_on"] = float(y.sum().item()) == 32.0
print("OUTCOME " + json.dumps(outcome))
"""


def test_pc_sampling_held_by_another_user_is_said_once_and_scopes_go_on(out_name, run_script):
    # Another user of CUPTI's PC sampling API on the context (the bench floor) makes CUPTI
    # refuse cuptiActivityEnable(CONCURRENT_KERNEL) too, with CUPTI_ERROR_NOT_COMPATIBLE
    # (measured on an H100, CUDA 13): only when Proton's own PC sampling is refused after its
    # activity tracing started does kernel timing go on. Either way: one line, scopes kept.
    if importlib.util.find_spec("_proton_bench") is None:
        pytest.skip("needs the bench module (scripts/gpu-test builds it)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in [os.environ.get("PYTHONPATH", "")] + [str(pathlib.Path(m).parent) for m in
                    [importlib.util.find_spec("_proton_bench").origin]] if p))
    result = run_script(PC_SAMPLING_REFUSED, out_name, env=env)
    outcome = outcome_of(result)
    assert outcome["program_went_on"], outcome
    pc_off = [ln for ln in result.stderr.splitlines() if "PC sampling is off" in ln]
    # CUPTI refuses kernel tracing (NOT_COMPATIBLE) or, as seen on the H100 since, every
    # kernel-launch callback: either way one line.
    no_gpu = [ln for ln in result.stderr.splitlines()
              if "no GPU backend is active" in ln and
              ("NOT_COMPATIBLE" in ln or "enabled none of the kernel-launch callbacks" in ln)]
    assert len(pc_off) + len(no_gpu) == 1, result.stderr[-3000:]
    if no_gpu:  # the message names the likely cause, not only a driver mismatch
        assert "PC sampling" in no_gpu[0], no_gpu[0]
    with open(out_name + ".hatchet") as f:
        root = json.load(f)[0]
    scope = [c for c in root["children"] if c["frame"]["name"] == "s"]
    assert scope, "the scope was lost"
    if pc_off:
        assert scope[0].get("children"), "PC sampling refused alone: kernel timing must go on"


def test_no_gpu_visible_runs_on(out_name, run_script):
    code = """
import sys, proton
proton.start(sys.argv[1], mode="pcsampling")
with proton.scope("cpu"):
    pass
proton.finalize()
print("OUTCOME {}")
"""
    result = run_script(code, out_name, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    outcome_of(result)
    assert "proton:" in result.stderr, result.stderr
