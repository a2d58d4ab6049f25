"""Which orders of sessions leave PC sampling with PC records, and which with none?

A full bench run gave every sample as CUPTI's "non-user kernel" total (no PC records, no cubin
seen), while the GPU tests, each in a fresh session, resolve lines. The table bench runs many
sessions in one process: kernel timing, the floor (the minimal CUPTI client) and ours, in turns.
This probe runs one Triton kernel in a fresh process per scenario and prints what each
PC-sampling session of it saw:

  after          the kernel is loaded after start
  before         the kernel is loaded (and run) before start
  twice          two PC-sampling sessions one after the other
  timing_first   a kernel-timing session, then a PC-sampling one
  floor_first    the floor (bench module, _proton_bench) started and stopped, then ours
  floor_beside   ours, then the floor, then ours again (the table's rotation)
  empty_first    a PC-sampling session with no kernel in it first (the table bench reads our
                 settings from such a session before anything else)
  gemm_first     a cuBLAS GEMM and a torch kernel run before the first session
  act_floor      the CUPTI kernel-activity floor (_floor_start/_floor_stop) first
  mlp_first      an MLP training step (torch.nn, cuBLAS, autograd, SGD) before the first session,
                 then one inside it too (the table bench warms every workload so)
  mlp_inside     the MLP step's kernels first loaded inside the session
  empty_timing   an empty PC-sampling session, a kernel-timing session, then ours (the table
                 bench's order: settings read from an empty session, then timing before pcs)
  pcs_timing     ours, a kernel-timing session, ours again
  bench_start    the table bench's own start (bench/pc_sampling.py): torch.cuda.init(), its
                 Kernels(), every workload warmed, pc_kernels.load, then ours on its GEMM loop
                 and on the probe kernel; the table bench's process got no PC records at all
  bench_no_pck   the same without pc_kernels.load
  bench_no_warm  the same without warming the workloads (Kernels() and pc_kernels.load only)
  late_import    the probe kernel and a GEMM loaded and run before `import proton` (the table
                 bench imports proton only when its first session starts)
  bench_late     bench_start with proton imported after the start, as the table bench does
  bench_table    bench_late, then the table's order: an empty PC-sampling session (settings),
                 the loop with no profiler, a kernel-timing session, then ours (no PC records
                 on the H100, as in the table bench itself)
  bench_table_ne / _nt / _e   the same without the empty session / without the timing
                 session / with only the empty session before ours
  late_table     late_import, then the table's order (no bench start)
  floor_nt / floor_nt_keep   the floor alone: a session, bare kernels, a session; the floor
                 disabling at stop (no PC records in the second: CUPTI's behaviour) / pausing
                 with start/stop control (keep_enabled: records kept)

    python bench/probes/pc_load_order_probe.py [scenario ...]
"""

import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # bench/

from lib import BENCH, proc  # noqa: E402

CHILD = r'''
import json, sys, tempfile, os
import torch, triton, triton.language as tl
# The table bench imports proton only after its kernels are loaded and warm: these scenarios do too.
LATE = (sys.argv[1] in ("late_import", "late_table", "bench_late")
        or sys.argv[1].startswith("bench_table"))
if not LATE:
    import proton
    from proton import _proton

@triton.jit
def spin(o, N: tl.constexpr):
    acc = tl.program_id(0).to(tl.float32)
    for i in range(N):
        acc = acc * 1.0001 + 0.5
    tl.store(o + tl.program_id(0), acc)

o = torch.empty(132 * 8, device="cuda")

def empty():
    name = os.path.join(tempfile.mkdtemp(), "e")
    proton.start(name, mode="pcsampling")
    proton.finalize()

def mlp_step():
    global mlp, opt, inp
    if "mlp" not in globals():
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
        mlp = torch.nn.Sequential(*layers).cuda()
        opt = torch.optim.SGD(mlp.parameters(), lr=1e-3)
        inp = torch.randn(512, 2048, device="cuda")
    for _ in range(5):
        opt.zero_grad(set_to_none=True)
        mlp(inp).square().mean().backward()
        opt.step()
    torch.cuda.synchronize()

def run():
    if sys.argv[1] in ("mlp_first", "mlp_inside"):
        mlp_step()
    for _ in range(20):
        spin[(132 * 8,)](o, N=20000)
    torch.cuda.synchronize()

def ours(label, mode="pcsampling"):
    name = os.path.join(tempfile.mkdtemp(), "p")
    proton.start(name, mode=mode) if mode else proton.start(name)
    run()
    proton.finalize()
    if not mode:
        return
    st = _proton._pc_sampling_stats()
    root = json.load(open(name + ".hatchet"))[0]
    total, stack = 0, [root]
    while stack:
        n = stack.pop()
        total += int(n.get("metrics", {}).get("num_samples", 0))
        stack.extend(n.get("children", []))
    print(json.dumps({"scenario": sys.argv[1], "session": label, "profile_samples": total,
                      **{k: st.get(k) for k in ("samples", "pc_records", "non_user", "binaries",
                                                "period_log2")}}), flush=True)

def floor(keep=False):
    import _proton_bench as B
    B.pc_floor_start(keep_enabled=keep)
    run()
    st = B.pc_floor_stop()
    print(json.dumps({"scenario": sys.argv[1], "session": "floor",
                      **{k: v for k, v in st.items() if isinstance(v, (int, float))}}), flush=True)

s = sys.argv[1]
if s.startswith("bench_"):
    sys.path.insert(0, sys.argv[2])  # bench/
    import pc_sampling as bench, pc_kernels
    torch.cuda.init()
    k = bench.Kernels()
    sizes = {"gemm": 100, "tiny": 5000, "mlp": 50,
             "only": ["gemm", "tiny_triton", "tiny_torch", "mlp"]}
    loads = bench.workloads(k, sizes)
    if s != "bench_no_warm":
        for fn in loads.values():
            fn()
    if s != "bench_no_pck":
        pc_kernels.load(tempfile.mkdtemp())
    if LATE:
        import proton
        from proton import _proton
    gemm_loop = loads["gemm"]
    _run = run
    def run():
        gemm_loop()
        _run()
if s in ("late_import", "late_table"):
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        spin[(132 * 8,)](o, N=20000)
        a @ a
    torch.cuda.synchronize()
    import proton
    from proton import _proton
if s in ("floor_nt", "floor_nt_keep"):  # the floor alone: empty, bare kernels, then a session
    keep = s == "floor_nt_keep"
    import _proton_bench as B
    B.pc_floor_start(keep_enabled=keep)
    B.pc_floor_stop()
    run()
    floor(keep)
    sys.exit(0)
if s == "bench_table_nt":
    empty()
    run()
if s in ("bench_table", "late_table"):  # the table's order: settings, no profiler, timing, ours
    empty()
    run()
    ours("timing", mode=None)
if s == "bench_table_ne":  # without the empty settings session
    run()
    ours("timing", mode=None)
if s == "bench_table_e":  # the empty session alone before ours
    empty()
if s == "before":
    run()
if s == "timing_first":
    ours("timing", mode=None)
if s == "floor_first":
    floor()
if s == "empty_first":
    empty()
if s == "gemm_first":
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum()
    torch.cuda.synchronize()
if s == "empty_timing":
    empty()
    ours("timing", mode=None)
if s == "mlp_first":
    mlp_step()
if s == "act_floor":
    import _proton_bench as B
    B._floor_start()
    run()
    B._floor_stop()
ours("first")
if s == "twice":
    ours("second")
if s == "pcs_timing":
    ours("timing", mode=None)
    ours("second")
if s == "floor_beside":
    floor()
    ours("after floor")
'''

# Triton's @jit needs its kernel in a file: the child is written to one.
child = pathlib.Path(tempfile.mkdtemp()) / "pc_load_order_child.py"
child.write_text(CHILD)
scenarios = sys.argv[1:] or ["after", "before", "twice", "timing_first", "floor_first",
                             "floor_beside", "empty_first", "gemm_first", "act_floor", "mlp_first",
                             "mlp_inside", "empty_timing",
                             "pcs_timing", "bench_start", "bench_no_pck", "bench_no_warm",
                             "late_import", "bench_late", "bench_table", "bench_table_ne",
                             "bench_table_nt", "bench_table_e", "late_table",
                             "floor_nt", "floor_nt_keep"]
for s in scenarios:
    r = proc.run([sys.executable, child, s, BENCH], timeout=180)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    print("\n".join(lines) if lines else "", flush=True)
    if r.error():
        print(f"{s}: {r.error(800)}", flush=True)
