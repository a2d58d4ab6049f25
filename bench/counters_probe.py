"""GPU probe for hardware counters (issue 20): one command, every stage in its own process.

    python bench/counters_probe.py --out $OUT/counters

Stages (each a subprocess with a timeout, so one crash does not hide the rest; each writes
<stage>.json and <stage>.log under --out): metric enumeration, per-kernel counters with user
and auto ranges on a bf16 GEMM and a device-to-device copy (values, per-kernel cost), a CUDA
graph replay, a bad metric name, PM sampling counter tracks, and ncu on the same kernels.
"""

import argparse
import json
import os
import subprocess
import sys
import time

STAGE = r'''
import json, os, sys, time
import torch
import proton
import proton.counters as pc
OUT = sys.argv[1]
stage = sys.argv[2]
res = {"stage": stage}

def save():
    with open(os.path.join(OUT, stage + ".json"), "w") as f:
        json.dump(res, f, indent=1, default=str)

def walk(node, path=""):
    name = node["frame"]["name"]
    p = path + "/" + name
    yield p, node
    for c in node.get("children", []):
        yield from walk(c, p)

def kernels(path):
    data = json.load(open(path))
    out = {}
    for p, n in walk(data[0]):
        m = n.get("metrics", {})
        if m.get("count", 0) and not n.get("children"):
            out[p] = m
    return out

def timed(fn, n):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t

torch.manual_seed(0)
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
src = torch.empty(64 << 20, device="cuda", dtype=torch.float32)  # 256 MB
dst = torch.empty_like(src)
tiny = torch.zeros(16, device="cuda")
gemm = lambda: torch.matmul(a, b)
# A copy *kernel*: torch's copy_ of a contiguous tensor is a cudaMemcpy (copy engine, no
# kernel, no range); x * 1 reads and writes every byte once in an elementwise kernel.
copy = lambda: torch.mul(src, 1.0, out=dst)
small = lambda: tiny.add_(1)
for f in (gemm, copy, small):
    f()
torch.cuda.synchronize()

try:
    if stage == "list":
        chip, names = pc.list_metrics()
        res["chip"] = chip
        res["count"] = len(names)
        res["names"] = names
        try:
            pchip, pnames = pc.list_metrics(pm=True)
            res["pm_count"] = len(pnames)
            res["pm_names"] = pnames
        except Exception as e:
            res["pm_error"] = repr(e)
        res["tensor"] = [n for n in names if "tensor" in n]
    elif stage in ("user", "auto"):
        import resource
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        mode = "counters" if stage == "user" else "counters:range=auto"
        base = {"gemm": timed(gemm, 50), "copy": timed(copy, 20), "tiny": timed(small, 5000)}
        res["baseline_s"] = base
        t0 = time.perf_counter()
        s = proton.start(os.path.join(OUT, "prof_" + stage), mode=mode)
        res["start_s"] = time.perf_counter() - t0
        with proton.scope("gemm_loop"):
            g = timed(gemm, 50)
        with proton.scope("copy_loop"):
            c = timed(copy, 20)
        with proton.scope("tiny_loop"):
            t = timed(small, 5000)
        res["counters_s"] = {"gemm": g, "copy": c, "tiny": t}
        res["ratio"] = {k: res["counters_s"][k] / base[k] for k in base}
        res["per_tiny_launch_us"] = (t - base["tiny"]) / 5000 * 1e6
        t0 = time.perf_counter()
        proton.finalize()
        res["finalize_s"] = time.perf_counter() - t0
        res["stats"] = pc.stats()
        res["rss_growth_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
        res["kernels"] = kernels(os.path.join(OUT, "prof_" + stage + ".hatchet"))
        res["copy_bytes_moved"] = 2 * src.numel() * 4 * 20
    elif stage == "graph":
        s = proton.start(os.path.join(OUT, "prof_graph"), mode="counters")
        st = torch.cuda.Stream()
        with torch.cuda.stream(st):
            gemm(); copy()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            with proton.scope("captured"):
                gemm(); copy()
        for _ in range(10):
            graph.replay()
        torch.cuda.synchronize()
        proton.finalize()
        res["stats"] = pc.stats()
        res["kernels"] = kernels(os.path.join(OUT, "prof_graph.hatchet"))
    elif stage == "badname":
        try:
            proton.start(os.path.join(OUT, "prof_bad"), mode="counters:metrics=dram__bytes_red.sum")
            res["error"] = None
            gemm(); torch.cuda.synchronize()
            proton.finalize()
        except Exception as e:
            res["error"] = f"{type(e).__name__}: {e}"
        # Kernel timing must still work afterwards.
        proton.start(os.path.join(OUT, "prof_after_bad"))
        gemm(); torch.cuda.synchronize()
        proton.finalize()
        res["after_bad"] = kernels(os.path.join(OUT, "prof_after_bad.hatchet"))
    elif stage == "pm":
        base = timed(gemm, 200)
        res["baseline_s"] = base
        # Kernel time of the same loop under plain kernel timing, for the shift with PM on.
        proton.start(os.path.join(OUT, "prof_pm_plain"))
        res["plain_s"] = timed(gemm, 200)
        proton.finalize()
        res["plain_kernels"] = kernels(os.path.join(OUT, "prof_pm_plain.hatchet"))
        s = proton.start(os.path.join(OUT, "prof_pm"), data="tree,trace",
                         mode="counters:sampling=pm:interval_us=100")
        g = timed(gemm, 200)
        c = timed(copy, 20)
        proton.finalize()
        res["pm_s"] = g
        res["ratio"] = g / base
        tr = json.load(open(os.path.join(OUT, "prof_pm.chrome_trace")))
        ev = tr["traceEvents"]
        cev = [e for e in ev if e.get("ph") == "C"]
        kev = [e for e in ev if e.get("ph") == "X" and e.get("cat") != "cpu"]
        res["counter_events"] = len(cev)
        res["counter_names"] = sorted({e["name"] for e in cev})
        res["counter_first"] = cev[:5]
        res["counter_ts_range"] = [min(e["ts"] for e in cev), max(e["ts"] for e in cev)] if cev else None
        res["kernel_ts_range"] = [min(e["ts"] for e in kev), max(e["ts"] + e.get("dur", 0) for e in kev)] if kev else None
        res["kernel_events"] = len(kev)
        res["kernels"] = kernels(os.path.join(OUT, "prof_pm.hatchet"))
    elif stage in ("floor", "timing"):
        import resource
        base = {"gemm": timed(gemm, 50), "tiny": timed(small, 5000)}
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if stage == "floor":
            import _proton_bench as P  # the floor lives in the bench module (bench/native)
            P._counters_floor_start(["dram__bytes_read.sum", "dram__bytes_write.sum",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "lts__t_sectors.sum"], 512)
        else:
            proton.start(os.path.join(OUT, "prof_timing"))
        g = timed(gemm, 50)
        t = timed(small, 5000)
        if stage == "floor":
            res["floor_stats"] = dict(P._counters_floor_stop())
        else:
            proton.finalize()
        res["baseline_s"] = base
        res["variant_s"] = {"gemm": g, "tiny": t}
        res["ratio"] = {"gemm": g / base["gemm"], "tiny": t / base["tiny"]}
        res["per_tiny_launch_us"] = (t - base["tiny"]) / 5000 * 1e6
        res["rss_growth_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
    elif stage == "ncu_target":
        for _ in range(3):
            gemm(); copy()
        torch.cuda.synchronize()
except Exception as e:
    import traceback
    res["exception"] = traceback.format_exc()
save()
print(json.dumps({k: v for k, v in res.items() if k not in ("names", "pm_names", "kernels")}, default=str)[:4000])
'''

NCU_METRICS = ("dram__bytes_read.sum,dram__bytes_write.sum,"
               "sm__warps_active.avg.pct_of_peak_sustained_active,"
               "sm__inst_executed.avg.pct_of_peak_sustained_active,"
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,"
               "lts__t_sectors.sum,lts__t_sector_hit_rate.pct,"
               "sm__throughput.avg.pct_of_peak_sustained_elapsed")


def run(cmd, out, name, timeout):
    t = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text, rc = p.stdout + "\n--- stderr ---\n" + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text, rc = f"TIMEOUT after {timeout}s\n{e.stdout}\n{e.stderr}", 124
    with open(os.path.join(out, name + ".log"), "w") as f:
        f.write(text)
    print(f"== {name}: rc={rc} {time.time() - t:.1f}s")
    print(text[-1500:])
    return rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "counters"))
    ap.add_argument("--stages", default="list,user,floor,timing,auto,graph,badname,pm,ncu")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    script = os.path.join(args.out, "stage.py")
    with open(script, "w") as f:
        f.write(STAGE)
    py = sys.executable
    # Typical: 8-15 s a stage; the limits only stop a hang from eating the lead's GPU time.
    timeouts = {"list": 20, "user": 30, "auto": 30, "graph": 20, "badname": 20, "pm": 25,
                "floor": 20, "timing": 20}
    for stage in args.stages.split(","):
        if stage == "ncu":
            run(["ncu", "--metrics", NCU_METRICS, "--csv", "--print-units", "base", "--launch-skip", "3",
                 "--launch-count", "4", py, script, args.out, "ncu_target"],
                args.out, "ncu", 45)
        else:
            run([py, script, args.out, stage], args.out, stage, timeouts.get(stage, 30))


if __name__ == "__main__":
    main()
