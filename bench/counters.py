"""Hardware counters: the target table in one GPU run.

    python bench/counters.py [--out bench/results] [--rounds 5] [--variants a,b,...]

Each variant runs in a fresh process (one CUPTI client per process) and times both workloads,
a 4096x4096 bf16 GEMM loop (100 launches) and 5,000 tiny launches (`x.add_(1)`):
  baseline       no profiler (run first and last: the spread is the noise)
  timing         proton kernel timing (mode=None)
  counters       proton mode="counters": PM sampling split over kernels (the default)
  counters_i100  the same every 100 us; counters_i1000: every 1000 us
  trace          proton data="trace", mode="counters": counter tracks and per-kernel values
  range          proton mode="counters:range=user": the Range Profiler (1 round: ~1 ms/launch)
  floor_kernels  CUPTI kernel-activity tracing alone, no profiler logic (bench/native)
  floor_pm       CUPTI PM sampling alone with Proton's settings: decode + evaluate on a thread
  floor          both: the floor of mode="counters" (kernel records and samples, nothing joined)
Reported: wall time over baseline (median of rounds), the per-launch cost of tiny launches,
peak RSS growth over kernel timing, and the mean kernel duration of each loop as the profile
records it (does PM sampling shift kernel times?), with the GPC clock PM sampling saw.
"""

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time

from lib import machine, proc
from lib import results as result_files

CHILD = r'''
import json, os, statistics, sys, time
import torch
from lib.rss import peak_rss_kb, rss_kb as vmrss
variant, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
x = torch.zeros(16, device="cuda")
def gemm_loop():
    for _ in range(100):
        torch.matmul(a, b)
def tiny_loop():
    for _ in range(5000):
        x.add_(1)
loops = {"gemm": gemm_loop, "tiny": tiny_loop}
for f in loops.values():
    f()
torch.cuda.synchronize()
rss0 = peak_rss_kb()
vm0 = vmrss()
session = None
t_start = time.perf_counter()
if variant.startswith("floor"):
    import _proton_bench as P  # bench/native
    if variant in ("floor", "floor_kernels"):
        P._floor_start()
    if variant in ("floor", "floor_pm"):
        # Our metrics, sizes and CUPTI calls at this interval (backends/cupti/pm_sampling_setup.h).
        interval_us = int(os.environ.get("PM_INTERVAL_US", "250"))
        P._pm_floor_start([], interval_us=interval_us, decode_ms=20, evaluate=True)
elif variant != "baseline" and variant != "baseline2":
    import proton
    kw = {"timing": {}, "counters": {"mode": "counters"},
          "counters_i100": {"mode": "counters:interval_us=100"},
          "counters_i1000": {"mode": "counters:interval_us=1000"},
          "trace": {"mode": "counters", "data": "tree,trace"},
          "range": {"mode": "counters:range=user"}}[variant]
    session = proton.start(os.path.join(out, variant), **kw)
start_s = time.perf_counter() - t_start
times = {}
for name, f in loops.items():
    n = 1 if variant == "range" else rounds
    ts = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        with (proton.scope(name) if session is not None else open(os.devnull)):
            f()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    times[name] = ts
vm_peak_run = vmrss()
extra = {}
t_fin = time.perf_counter()
if variant.startswith("floor"):
    if variant in ("floor", "floor_pm"):
        s = dict(P._pm_floor_stop())
        s.pop("kept", None)
        extra["pm"] = s
    if variant in ("floor", "floor_kernels"):
        P._floor_stop()
        extra["kernel_records"] = P._floor_records()
elif session is not None:
    import proton, proton.counters
    proton.finalize()
    extra = proton.counters.stats()
finalize_s = time.perf_counter() - t_fin
kernels = {}
if session is not None:
    data = json.load(open(os.path.join(out, variant + ".hatchet")))
    for scope in data[0]["children"]:
        if scope["frame"]["name"] not in loops:
            continue
        ks = [c for c in scope.get("children", []) if "count" in c.get("metrics", {})]
        if not ks:
            continue
        k = max(ks, key=lambda c: c["metrics"]["time (ns)"])
        m = k["metrics"]
        info = {"name": k["frame"]["name"][:60], "count": m["count"],
                "mean_ns": m["time (ns)"] / m["count"]}
        clock = "gpc__cycles_elapsed.avg.per_second (ns-weighted)"
        if clock in m and m.get("counter time (ns)"):
            info["gpc_hz"] = m[clock] / m["counter time (ns)"]
        for key in ("counter samples", "counter samples shared", "dram__bytes_read.sum"):
            if key in m:
                info[key] = m[key]
        kernels[scope["frame"]["name"]] = info
    root = data[0]["metrics"]
    extra["root"] = {k: v for k, v in root.items() if k.startswith("counter")}
rss = peak_rss_kb()
print(json.dumps({"times": times, "median": {k: statistics.median(v) for k, v in times.items()},
                  "rss_kb": rss, "rss_growth_kb": rss - rss0, "vmrss_growth_kb": vm_peak_run - vm0,
                  "start_s": start_s, "finalize_s": finalize_s, "kernels": kernels,
                  "extra": extra}))
'''

VARIANTS = ["baseline", "timing", "counters", "floor", "floor_kernels", "floor_pm", "trace",
            "counters_i100", "counters_i1000", "range", "baseline2"]
WORKLOADS = (("gemm", 100), ("tiny", 5000))


def run_child(script, variant, rounds, out, timeout):
    child = proc.run([sys.executable, script, variant, rounds, out], timeout,
                     env=proc.env_with_bench())
    r = {"error": child.error()} if child.error() else child.result()
    if r is None:
        return {"error": child.stdout[-1000:] + child.stderr[-1000:]}
    r["stderr"] = child.stderr[-600:]
    return r


COLUMNS = ("variant", "gemm / baseline", "tiny / baseline", "tiny: per launch above baseline",
           "peak RSS vs timing", "gemm kernel mean", "tiny kernel mean", "GPC clock")


def table(results, variants):
    base = {w: min(results[v]["median"][w] for v in ("baseline", "baseline2")
                   if "median" in results.get(v, {})) for w, _ in WORKLOADS
            if any("median" in results.get(v, {}) for v in ("baseline", "baseline2"))}
    timing = results.get("timing", {})
    rows = []
    for v in variants:
        r = results.get(v, {})
        if "median" not in r or not base:
            rows.append([v, "error"] + [""] * 6)
            continue
        cells = [v]
        for w, _ in WORKLOADS:
            cells.append(f"{r['median'][w] / base[w]:.3f}x")
        cells.append(f"{(r['median']['tiny'] - base['tiny']) / 5000 * 1e6:.2f} us")
        cells.append(f"{(r['rss_kb'] - timing['rss_kb']) / 1024:+.0f} MB"
                     if "rss_kb" in timing else "")
        for w, _ in WORKLOADS:
            k = r.get("kernels", {}).get(w)
            cells.append(f"{k['mean_ns'] / 1000:.2f} us" if k else "")
        k = r.get("kernels", {}).get("gemm", {})
        cells.append(f"{k['gpc_hz'] / 1e6:.0f} MHz" if "gpc_hz" in k else "")
        rows.append(cells)
    return "\n".join(result_files.table(COLUMNS, rows))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(result_files.DEFAULT_DIR))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--timeout", type=int, default=60, help="seconds per variant")
    ap.add_argument("--tag", default="", help="added to the result file names (e.g. a commit)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="proton_counters_bench_")
    script = os.path.join(work, "child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    variants = args.variants.split(",")
    results = {}
    for v in variants:
        t = time.time()
        r = run_child(script, v, args.rounds, work, args.timeout)
        results[v] = r
        shown = {k: r[k] for k in ("median", "rss_growth_kb", "kernels", "extra", "error",
                                   "start_s", "finalize_s") if k in r}
        print(f"{v} ({time.time() - t:.1f} s): {json.dumps(shown)[:1500]}", flush=True)
    gpu = machine.gpu_name()
    text = table(results, variants)
    print(text)
    result_files.write(result_files.stem(args.out, gpu, "counters", args.tag),
                       {"gpu": gpu, "host": platform.node(), "rounds": args.rounds,
                        "results": results},
                       f"# Hardware counters on {gpu} ({machine.today()})\n\n" + text + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
