"""Hardware counters: the issue-20 target table and correctness checks in one GPU run.

    python bench/counters.py [--out bench/results] [--rounds 5]

Each variant runs in a fresh process (one CUPTI client per process):
  baseline   no profiler
  timing     proton kernel timing (mode=None)
  counters   proton mode="counters" (default set, user ranges)
  auto       proton mode="counters:range=auto" (CUPTI auto ranges: a sync per launch)
  floor      the counters floor: CUPTI's Range Profiler alone, ranges pushed/popped around each
             launch and decoded in batches, no profiler logic (bench/native/counters_floor.h)
  pm         proton data="trace", mode="counters" (PM-sampling counter tracks)
Workloads: a 4096x4096 bf16 GEMM loop and 5,000 tiny launches. Reported: wall time (median of
rounds) over baseline, the per-kernel cost of tiny launches, peak RSS growth over kernel timing.
Checks: a device-to-device copy's DRAM bytes within 5% of the bytes moved, a large bf16 GEMM's
tensor-pipe utilisation > 50%, and (with ncu on PATH) values within 10% of ncu.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, os, resource, statistics, sys, time
import torch
variant, workload, rounds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
x = torch.zeros(16, device="cuda")
def gemm_loop():
    for _ in range(100):
        torch.matmul(a, b)
def tiny_loop():
    for _ in range(5000):
        x.add_(1)
region = gemm_loop if workload == "gemm" else tiny_loop
region(); torch.cuda.synchronize()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
session = None
if variant == "floor":
    import _proton_bench as P  # the floor lives in the bench module (bench/native)
    P._counters_floor_start(["dram__bytes_read.sum", "dram__bytes_write.sum",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "lts__t_sectors.sum"], 512)
elif variant != "baseline":
    import proton
    kw = {"timing": {}, "counters": {"mode": "counters"},
          "auto": {"mode": "counters:range=auto"},
          "pm": {"mode": "counters", "data": "trace"}}[variant]
    session = proton.start(os.path.join(out, f"{variant}_{workload}"), **kw)
times = []
for _ in range(rounds):
    torch.cuda.synchronize()
    t = time.perf_counter()
    region()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t)
extra = {}
if variant == "floor":
    extra = dict(P._counters_floor_stop())
elif session is not None:
    import proton
    proton.finalize()
    if variant in ("counters", "auto"):
        import proton.counters
        extra = proton.counters.stats()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"times": times, "median": statistics.median(times), "rss_kb": rss,
                  "rss_growth_kb": rss - rss0, "extra": extra}))
'''

VARIANTS = ["baseline", "timing", "counters", "auto", "floor", "pm"]


def run_child(script, variant, workload, rounds, out):
    p = subprocess.run([sys.executable, script, variant, workload, str(rounds), out],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return {"error": p.stderr[-2000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--checks", action="store_true", help="also run tests/gpu/test_gpu_counters.py")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="proton_counters_bench_")
    script = os.path.join(work, "child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    results = {}
    for workload in ("gemm", "tiny"):
        for variant in args.variants.split(","):
            r = run_child(script, variant, workload, args.rounds, work)
            results[f"{variant}/{workload}"] = r
            print(variant, workload, {k: v for k, v in r.items() if k != "times"}, flush=True)
    import torch
    gpu = torch.cuda.get_device_name(0)
    lines = [f"# Hardware counters on {gpu} ({time.strftime('%Y-%m-%d')})", "",
             "| workload | variant | time / baseline | per kernel above baseline | peak RSS growth |",
             "|---|---|---|---|---|"]
    for workload, kernels in (("gemm", 100), ("tiny", 5000)):
        base = results.get(f"baseline/{workload}", {}).get("median")
        timing_rss = results.get(f"timing/{workload}", {}).get("rss_kb")
        for variant in args.variants.split(","):
            r = results.get(f"{variant}/{workload}", {})
            if "median" not in r or not base:
                lines.append(f"| {workload} | {variant} | error | | |")
                continue
            ratio = r["median"] / base
            per = (r["median"] - base) / kernels * 1e6
            rss = "" if timing_rss is None else f"{(r['rss_kb'] - timing_rss) / 1024:+.1f} MB vs timing"
            lines.append(f"| {workload} | {variant} | {ratio:.3f}x | {per:.2f} us | {rss} |")
    table = "\n".join(lines)
    print(table)
    stamp = time.strftime("%Y-%m-%d") + "-" + gpu.lower().replace(" ", "-") + "-counters"
    with open(os.path.join(args.out, stamp + ".json"), "w") as f:
        json.dump({"gpu": gpu, "host": platform.node(), "results": results}, f, indent=1)
    with open(os.path.join(args.out, stamp + ".md"), "w") as f:
        f.write(table + "\n")
    if args.checks:
        tests = os.path.join(os.path.dirname(__file__), "..", "tests", "gpu", "test_gpu_counters.py")
        subprocess.run([sys.executable, "-m", "pytest", "-q", tests])
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
