"""Hardware counters on real kernels (docs/counters.md).

Checks, for the default mode (PM sampling split over kernels) and the Range Profiler: a
device-to-device copy's DRAM bytes within 5% of the bytes moved; a large bf16 GEMM's tensor-pipe
utilisation above 50%; values within 10% of Nsight Compute (when `ncu` is on PATH); a CUDA graph
replay; a bad metric name; PM-sampling counter tracks; scopes and several sessions.

The GPU checks measure each kind of kernel on its own (a synchronisation and a short sleep
between loops): how samples are shared between *different* neighbouring kernels is the split's
rule, tested on the CPU (tests/cpp/counter_split_test.cpp) and measured in bench/.
"""

import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402
import proton.counters  # noqa: E402
from proton._counters_mode import Counters  # noqa: E402

READ = "dram__bytes_read.sum"
WRITE = "dram__bytes_write.sum"
TIME = "counter time (ns)"
WEIGHTED = " (ns-weighted)"
# Ours (PM sampling's names on GH100, or the plain ones elsewhere) -> Nsight Compute's name.
NCU_NAME = {
    READ: READ,
    WRITE: WRITE,
    "lts__t_sectors.sum": "lts__t_sectors.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active":
        "sm__warps_active.avg.pct_of_peak_sustained_active",
    "TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_active":
        "sm__inst_executed.avg.pct_of_peak_sustained_active",
    "sm__inst_executed.avg.pct_of_peak_sustained_active":
        "sm__inst_executed.avg.pct_of_peak_sustained_active",
    "TPC.TriageCompute.sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_sustained_active":
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active":
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
}


VIEWER = os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")


def counters_supported():
    try:
        proton.counters.list_metrics(pm=True)
        return True
    except RuntimeError:
        return False


pytestmark = pytest.mark.skipif(not counters_supported(),
                                reason="this GPU/driver/CUPTI offers no profiler counters")


def average(node, metric):
    m = node["metrics"]
    return m[metric + WEIGHTED] / m[TIME]


def tensor_pipe(node):
    names = [k[:-len(WEIGHTED)] for k in node["metrics"]
             if k.endswith(WEIGHTED) and "pipe_tensor" in k and not k.startswith("pm:")]
    assert names, node["metrics"]
    return max(average(node, n) for n in names)


def biggest(profile, under=None, match=None):
    ks = profile.kernels(under, match)
    assert ks, profile.render()
    return max(ks, key=lambda k: k["metrics"]["time (ns)"])


def settle():
    torch.cuda.synchronize()
    time.sleep(0.002)  # a few idle samples between kinds of kernels


def gemm_and_copy():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(64 << 20, device="cuda", dtype=torch.float32)  # 256 MB
    dst = torch.empty_like(src)
    torch.matmul(a, b)
    # A copy kernel: copy_ of contiguous tensors is a cudaMemcpy (copy engine, no kernel);
    # x * 1 reads and writes every byte once.
    torch.mul(src, 1.0, out=dst)
    torch.cuda.synchronize()
    return (lambda: torch.matmul(a, b)), (lambda: torch.mul(src, 1.0, out=dst)), src.numel() * 4


@pytest.mark.parametrize("mode", ["counters", "counters:range=user"])
def test_copy_dram_bytes_and_gemm_tensor_pipe(out_name, read_profile, mode):
    gemm, copy, nbytes = gemm_and_copy()
    proton.start(out_name, mode=mode)
    with proton.scope("gemm"):
        for _ in range(10):
            gemm()
    settle()
    with proton.scope("copy"):
        for _ in range(10):
            copy()
    settle()
    proton.finalize()
    p = read_profile()
    c = biggest(p, p.node("copy"))
    count = c["metrics"]["count"]
    moved = 2 * nbytes * count  # every byte read once and written once
    measured = c["metrics"][READ] + c["metrics"][WRITE]
    assert abs(measured - moved) / moved < 0.05, (measured, moved, p.render())
    g = biggest(p, p.node("gemm"))
    tensor = tensor_pipe(g)
    assert tensor > 50, (tensor, g["metrics"])
    if mode == "counters":
        # PM sampling: the kernels had their samples to themselves.
        assert c["metrics"]["counter samples shared"] < 0.1 * c["metrics"]["counter samples"]


def test_mode_object_scopes_and_two_sessions(tmp_path, read_profile):
    gemm, copy, _ = gemm_and_copy()
    mode = Counters([READ, WRITE])
    proton.start(str(tmp_path / "a"), mode=mode)
    b = proton.start(str(tmp_path / "b"), mode=str(mode))  # same setup: shares the backend
    with proton.scope("outer"):
        copy()
    settle()
    proton.deactivate(b)
    with proton.scope("only_a"):
        copy()
    settle()
    proton.finalize()
    pa = read_profile(str(tmp_path / "a"))
    pb = read_profile(str(tmp_path / "b"))
    assert pa.kernels(pa.node("outer"))[0]["metrics"][READ] > 0
    assert pa.kernels(pa.node("only_a"))[0]["metrics"][READ] > 0
    assert pb.kernels(pb.node("outer"))[0]["metrics"][READ] > 0
    assert not pb.has("only_a")


@pytest.mark.parametrize("mode", ["counters:metrics=dram__bytes_red.sum",
                                  "counters:range=user:metrics=dram__bytes_red.sum"])
def test_bad_metric_name_lists_valid_ones_and_timing_goes_on(out_name, read_profile, mode):
    with pytest.raises(ValueError) as e:
        proton.start(out_name, mode=mode)
    msg = str(e.value)
    assert "dram__bytes_red.sum" in msg and "dram__bytes_read" in msg, msg
    proton.start(out_name)
    torch.ones(4, device="cuda").add_(1)
    torch.cuda.synchronize()
    proton.finalize()
    assert read_profile().count() >= 1


def test_graph_replay_values_per_kernel(out_name, read_profile):
    gemm, copy, nbytes = gemm_and_copy()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        copy()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        copy()
        copy()
    proton.start(out_name, mode="counters")
    with proton.scope("replay"):
        for _ in range(4):
            g.replay()
    settle()
    proton.finalize()
    p = read_profile()
    # PM sampling splits by kernel record, so each of the graph's kernel nodes has its own
    # values; together they add up to both copies of every replay.
    ks = p.kernels(p.node("replay"))
    assert ks and all(READ in k["metrics"] for k in ks), p.render()
    total = sum(k["metrics"][READ] + k["metrics"][WRITE] for k in ks)
    moved = 4 * 2 * 2 * nbytes
    assert abs(total - moved) / moved < 0.05, (total, moved, p.render())


def test_pm_sampling_counter_tracks(tmp_path):
    gemm, copy, _ = gemm_and_copy()
    name = str(tmp_path / "pm")
    proton.start(name, data="tree,trace", mode="counters:interval_us=100")
    for _ in range(50):
        gemm()
    settle()
    proton.finalize()
    trace = json.load(open(name + ".chrome_trace"))
    events = trace["traceEvents"]
    counters = [e for e in events if e.get("ph") == "C"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0]
    assert counters and kernels
    assert any(e["name"] == READ + ".per_second" for e in counters)
    # Aligned: the samples overlap the kernel boxes on the trace's time axis.
    k0 = min(e["ts"] for e in kernels)
    k1 = max(e["ts"] + e["dur"] for e in kernels)
    inside = [e for e in counters if k0 <= e["ts"] <= k1]
    assert len(inside) > len(counters) / 2, (k0, k1, counters[:3])


def viewer_column(path, metric, frame):
    """The value the viewer shows in column `metric` on the row of `frame` (NaN: blank)."""
    view = subprocess.run([VIEWER, "--no-color", "-m", metric, path + ".hatchet"],
                          capture_output=True, text=True, timeout=120)
    assert view.returncode == 0, view.stderr
    print(view.stdout)
    row = next((line for line in view.stdout.splitlines() if line.rstrip().endswith(frame)), None)
    assert row is not None, view.stdout
    try:
        return float(row.split()[0])
    except ValueError:
        return math.nan  # the frame's name came first: no value in this column


@pytest.mark.skipif(VIEWER is None, reason="proton-viewer not built (set PROTON_VIEWER)")
def test_viewer_roofline_measured_beside_declared(out_name):
    """The viewer's measured roofline on a real profile: the copy's DRAM rate agrees with the
    bytes its scope declares, a near-peak share of the device's bandwidth, and a scope that
    declares 8x the bytes it moves is flagged (a wrong launch_metadata)."""
    _, copy, nbytes = gemm_and_copy()
    moved = 2 * nbytes * 10  # read once and written once, ten launches
    proton.start(out_name, mode="counters")
    with proton.scope("copy_declared_right", metrics={"bytes": moved}):
        for _ in range(10):
            copy()
    settle()
    with proton.scope("copy_declared_8x", metrics={"bytes": 8 * moved}):
        for _ in range(10):
            copy()
    settle()
    proton.finalize()
    measured = viewer_column(out_name, "dram_gbyte/s", "copy_declared_right")
    declared = viewer_column(out_name, "gbyte/s", "copy_declared_right")
    assert abs(measured - declared) / declared < 0.05, (measured, declared)
    peak = viewer_column(out_name, "dram_peak%", "copy_declared_right")
    assert 40 < peak <= 100, peak  # a streaming copy on HBM: most of the peak, never above
    assert math.isnan(viewer_column(out_name, "bytes_mismatch", "copy_declared_right"))
    flagged = viewer_column(out_name, "bytes_mismatch", "copy_declared_8x")
    assert abs(flagged - 8) < 0.5, flagged
    roofline = subprocess.run([VIEWER, "--no-color", "-m", "roofline", out_name + ".hatchet"],
                              capture_output=True, text=True, timeout=120)
    assert roofline.returncode == 0, roofline.stderr
    print(roofline.stdout)
    for column in ("gbyte/s", "dram_gbyte/s", "dram_peak%", "bytes_mismatch"):
        assert column in roofline.stdout, roofline.stdout


RANK_DEVICE_SCRIPT = """
import json, os, sys, time, torch
import proton
early = sys.argv[2] == "early"
if not early:  # the process made its context on cuda:1 before profiling started
    torch.cuda.set_device(1)
    torch.zeros(1, device="cuda")
proton.start(sys.argv[1], mode="counters")  # early: before any context, as torchrun -m proton
torch.cuda.set_device(1)
src = torch.empty(64 << 20, device="cuda")
dst = torch.empty_like(src)
torch.mul(src, 1.0, out=dst)
torch.cuda.synchronize()
time.sleep(0.002)
with proton.scope("copy"):
    for _ in range(10):
        torch.mul(src, 1.0, out=dst)
torch.cuda.synchronize()
time.sleep(0.002)
proton.finalize()
print("MOVED", 2 * src.numel() * 4 * 10)
"""


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
@pytest.mark.parametrize("when", ["early", "late"])
def test_a_rank_samples_its_own_gpu(tmp_path, when):
    """PM samples are device-wide: a process working on cuda:1 (a torchrun rank with
    LOCAL_RANK=1, started before its context or after) must sample GPU 1, not GPU 0."""
    path = tmp_path / "rank.py"
    path.write_text(RANK_DEVICE_SCRIPT)
    name = str(tmp_path / "rank")
    env = dict(os.environ, LOCAL_RANK="1")
    res = subprocess.run([sys.executable, str(path), name, when], capture_output=True, text=True,
                         timeout=180, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "(device 1)" in res.stderr, res.stderr[-2000:]
    moved = int(res.stdout.split("MOVED")[1].split()[0])
    from conftest import load_profile
    p = load_profile(name)
    c = biggest(p, p.node("copy"))
    assert str(c["metrics"]["device_id"]) == "1", c["metrics"]  # a string in the file, as Triton
    measured = c["metrics"][READ] + c["metrics"][WRITE]
    assert abs(measured - moved) / moved < 0.05, (measured, moved, p.render())


NCU_SCRIPT = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
src = torch.empty(64 << 20, device="cuda"); dst = torch.empty_like(src)
torch.matmul(a, b); torch.mul(src, 1.0, out=dst)
torch.cuda.synchronize()
if sys.argv[1] == "proton":
    import proton
    proton.start(sys.argv[2], mode=sys.argv[3])
with torch.cuda.nvtx.range("measure"):
    for f in (lambda: torch.matmul(a, b), lambda: torch.mul(src, 1.0, out=dst)):
        for _ in range(3):
            f()
        torch.cuda.synchronize(); time.sleep(0.002)
if sys.argv[1] == "proton":
    proton.finalize()
"""


def ncu_values(tmp_path, metrics):
    """Nsight Compute's values per kernel name (averaged over launches), measured as the
    program runs: no cache flush, no clock locking (ncu's defaults flush L2 before each kernel
    and lock the base clock; a profiler of the running program sees neither)."""
    path = tmp_path / "s.py"
    path.write_text(NCU_SCRIPT)
    out = subprocess.run(["ncu", "--metrics", ",".join(sorted(set(metrics))), "--csv",
                          "--print-units", "base", "--cache-control", "none",
                          "--clock-control", "none", "--nvtx", "--nvtx-include", "measure/",
                          sys.executable, str(path), "ncu"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = list(csv.DictReader(io.StringIO(out.stdout[out.stdout.find('"ID"'):])))
    sums, counts = {}, {}
    for r in rows:
        key = (r["Kernel Name"], r["Metric Name"])
        sums[key] = sums.get(key, 0.0) + float(r["Metric Value"].replace(",", ""))
        counts[key] = counts.get(key, 0) + 1
    ncu = {}
    for (kname, metric), v in sums.items():
        ncu.setdefault(kname, {})[metric] = v / counts[(kname, metric)]
    return path, ncu


@pytest.mark.skipif(shutil.which("ncu") is None, reason="ncu not on PATH")
@pytest.mark.parametrize("mode", ["counters", "counters:range=user"])
def test_within_ten_percent_of_ncu(tmp_path, run_script, mode):
    path, ncu = ncu_values(tmp_path, set(NCU_NAME.values()))
    name = str(tmp_path / "p")
    res = subprocess.run([sys.executable, str(path), "proton", name, mode], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    from conftest import load_profile
    p = load_profile(name)
    compared = []
    for k in p.kernels():
        kname = k["frame"]["name"]
        ref = next((v for n, v in ncu.items() if n[:40] in kname or kname[:40] in n), None)
        if ref is None:
            continue
        count = k["metrics"]["count"]
        for ours, theirs_name in NCU_NAME.items():
            if ours + WEIGHTED in k["metrics"]:
                value = average(k, ours)
            elif ours in k["metrics"]:
                value = k["metrics"][ours] / count  # per launch, as ncu reports
            else:
                continue
            theirs = ref.get(theirs_name)
            if theirs and theirs > 1:
                compared.append((kname[:50], ours, value, theirs))
    assert len(compared) >= 6, (compared, sorted(ncu), p.render())
    bad = [c for c in compared if abs(c[2] - c[3]) / c[3] >= 0.10]
    assert not bad, bad
