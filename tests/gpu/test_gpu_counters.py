"""Hardware counters on real kernels (issue 20, docs/counters.md).

Checks: a device-to-device copy's DRAM bytes within 5% of the bytes moved; a large bf16 GEMM's
tensor-pipe utilisation above 50%; values within 10% of Nsight Compute (when `ncu` is on PATH);
a CUDA graph replay; a bad metric name; PM-sampling counter tracks; scopes and several sessions.
"""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402
import proton.counters  # noqa: E402
from proton._counters_mode import Counters  # noqa: E402

READ = "dram__bytes_read.sum"
WRITE = "dram__bytes_write.sum"
GMMA = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
HMMA = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
TIME = "counter time (ns)"
WEIGHTED = " (ns-weighted)"


def counters_supported():
    try:
        proton.counters.list_metrics()
        return True
    except RuntimeError:
        return False


pytestmark = pytest.mark.skipif(not counters_supported(),
                                reason="this GPU/driver/CUPTI offers no profiler counters")


def average(node, metric):
    m = node["metrics"]
    return m[metric + WEIGHTED] / m[TIME]


def biggest(profile, under=None, match=None):
    ks = profile.kernels(under, match)
    assert ks, profile.render()
    return max(ks, key=lambda k: k["metrics"]["time (ns)"])


def gemm_and_copy(n_gemm=10, n_copy=5):
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(64 << 20, device="cuda", dtype=torch.float32)  # 256 MB
    dst = torch.empty_like(src)
    torch.matmul(a, b)
    # A copy kernel: copy_ of contiguous tensors is a cudaMemcpy (no kernel, so no range);
    # x * 1 reads and writes every byte once.
    torch.mul(src, 1.0, out=dst)
    torch.cuda.synchronize()
    return (lambda: torch.matmul(a, b)), (lambda: torch.mul(src, 1.0, out=dst)), src.numel() * 4


def test_copy_dram_bytes_and_gemm_tensor_pipe(out_name, read_profile):
    gemm, copy, nbytes = gemm_and_copy()
    proton.start(out_name, mode="counters")
    with proton.scope("gemm"):
        for _ in range(10):
            gemm()
    with proton.scope("copy"):
        for _ in range(5):
            copy()
    torch.cuda.synchronize()
    proton.finalize()
    p = read_profile()
    c = biggest(p, p.node("copy"))
    count = c["metrics"]["count"]
    moved = 2 * nbytes * count  # every byte read once and written once
    measured = c["metrics"][READ] + c["metrics"][WRITE]
    assert abs(measured - moved) / moved < 0.05, (measured, moved, p.render())
    g = biggest(p, p.node("gemm"))
    tensor = max(average(g, m) for m in (GMMA, HMMA) if m + WEIGHTED in g["metrics"])
    assert tensor > 50, (tensor, g["metrics"])


def test_mode_object_scopes_and_two_sessions(tmp_path, read_profile):
    gemm, copy, _ = gemm_and_copy()
    mode = Counters([READ, WRITE])
    a = proton.start(str(tmp_path / "a"), mode=mode)
    b = proton.start(str(tmp_path / "b"), mode=str(mode))  # same setup: shares the backend
    with proton.scope("outer"):
        copy()
    proton.deactivate(b)
    with proton.scope("only_a"):
        copy()
    torch.cuda.synchronize()
    proton.finalize()
    pa = read_profile(str(tmp_path / "a"))
    pb = read_profile(str(tmp_path / "b"))
    assert pa.kernels(pa.node("outer"))[0]["metrics"][READ] > 0
    assert pa.kernels(pa.node("only_a"))[0]["metrics"][READ] > 0
    assert pb.kernels(pb.node("outer"))[0]["metrics"][READ] > 0
    assert not pb.has("only_a")


def test_bad_metric_name_lists_valid_ones_and_timing_goes_on(out_name, read_profile):
    with pytest.raises(ValueError) as e:
        proton.start(out_name, mode="counters:metrics=dram__bytes_red.sum")
    msg = str(e.value)
    assert "dram__bytes_red.sum" in msg and "dram__bytes_read" in msg, msg
    proton.start(out_name)
    torch.ones(4, device="cuda").add_(1)
    torch.cuda.synchronize()
    proton.finalize()
    assert read_profile().count() >= 1


def test_graph_replay_values_per_launch(out_name, read_profile):
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
    torch.cuda.synchronize()
    proton.finalize()
    p = read_profile()
    # One range covers each whole replay (two copies): the values sit on the first kernel node
    # of the replay and add up to both copies' bytes.
    total = sum(k["metrics"].get(READ, 0) + k["metrics"].get(WRITE, 0)
                for k in p.kernels(p.node("replay")))
    moved = 4 * 2 * 2 * nbytes
    assert abs(total - moved) / moved < 0.05, (total, moved, p.render())


def test_pm_sampling_counter_tracks(tmp_path):
    gemm, copy, _ = gemm_and_copy()
    name = str(tmp_path / "pm")
    proton.start(name, data="tree,trace", mode="counters:sampling=pm:interval_us=100")
    for _ in range(50):
        gemm()
    torch.cuda.synchronize()
    proton.finalize()
    trace = json.load(open(name + ".chrome_trace"))
    events = trace["traceEvents"]
    counters = [e for e in events if e.get("ph") == "C"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0]
    assert counters and kernels
    # Aligned: the samples overlap the kernel boxes on the trace's time axis.
    k0 = min(e["ts"] for e in kernels)
    k1 = max(e["ts"] + e["dur"] for e in kernels)
    inside = [e for e in counters if k0 <= e["ts"] <= k1]
    assert len(inside) > len(counters) / 2, (k0, k1, counters[:3])


@pytest.mark.skipif(shutil.which("ncu") is None, reason="ncu not on PATH")
def test_within_ten_percent_of_ncu(tmp_path, run_script):
    metrics = [READ, WRITE, "sm__warps_active.avg.pct_of_peak_sustained_active", HMMA]
    script = textwrap.dedent(f"""
        import sys, torch
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        src = torch.empty(64 << 20, device="cuda"); dst = torch.empty_like(src)
        torch.cuda.synchronize()
        if sys.argv[1] == "proton":
            import proton
            proton.start(sys.argv[2], mode="counters:metrics={','.join(metrics)}")
        with torch.cuda.nvtx.range("measure"):
            torch.matmul(a, b); torch.mul(src, 1.0, out=dst)
        torch.cuda.synchronize()
        if sys.argv[1] == "proton":
            proton.finalize()
    """)
    path = tmp_path / "s.py"
    path.write_text(script)
    out = subprocess.run(["ncu", "--metrics", ",".join(metrics), "--csv", "--print-units", "base", "--nvtx",
                          "--nvtx-include", "measure/", sys.executable, str(path), "ncu"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [r for r in csv.DictReader(io.StringIO(out.stdout[out.stdout.find('"ID"'):]))]
    ncu = {}
    for r in rows:
        ncu.setdefault(r["Kernel Name"], {})[r["Metric Name"]] = float(
            r["Metric Value"].replace(",", ""))
    name = str(tmp_path / "p")
    res = run_script(script, "proton", name)
    assert res.returncode == 0, res.stderr
    from conftest import load_profile
    p = load_profile(name)
    for k in p.kernels():
        kname = k["frame"]["name"]
        ref = next((v for n, v in ncu.items() if n[:40] in kname or kname[:40] in n), None)
        if ref is None:
            continue
        for m in metrics:
            ours = k["metrics"].get(m) if m.endswith(".sum") else average(k, m)
            theirs = ref.get(m)
            if theirs and theirs > 1:
                assert abs(ours - theirs) / theirs < 0.10, (kname, m, ours, theirs)
