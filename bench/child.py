"""What one benchmark process does: one workload under one profiler variant.

    python3 bench/child.py '{"variant": "proton", "workload": "tiny_torch", "loops": 7}'

prints one JSON line with the measurements. bench/run.py calls run_job() in a forked copy of
itself instead (same code, without paying for `import torch` in every process).

Order of events, so that every variant is measured the same way:
  pin to the job's CPUs (if any)  ->  setup workload (compile, warm up)  ->  RSS before  ->
  import + start profiler  ->  after_start (graph capture)  ->  warm-up regions  ->
  timed regions  ->  RSS steady  ->  stop profiler (output written)  ->  RSS after, output size.
"""

import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback

import variants
import workloads
from lib import machine
from lib.machine import versions
from lib.rss import rss_bytes

DEFAULT_JOB = {"loops": 7, "warmup": 2, "round": 0, "cpus": None}


def run_job(job):
    """Runs one job; never raises: failures come back as {"error": ...}."""
    job = {**DEFAULT_JOB, **job}
    result = {"variant": job["variant"], "workload": job["workload"], "round": job["round"]}
    try:
        pin(job["cpus"])
        result.update(_measure(job))
    except variants.Unavailable as e:
        result["skipped"] = str(e)
    except BaseException as e:  # a crashing profiler is a result too
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc(limit=8)
    return result


def pin(cpus):
    """Keeps this process, and every thread it starts from now on (CUDA's, CUPTI's, the
    profiler's), on `cpus`. Called before CUDA starts any thread: affinity is inherited at
    thread creation, and a thread that already exists keeps its own."""
    if cpus:
        os.sched_setaffinity(0, cpus)


def _measure(job):
    import torch

    torch.cuda.init()
    workload = workloads.ALL[job["workload"]]()
    variant = variants.ALL[job["variant"]]()
    workload.setup()
    torch.cuda.synchronize()

    import_ms, _ = _timed(variant.load)
    gc.collect()
    rss_before = rss_bytes()
    out_dir = tempfile.mkdtemp(prefix="proton-bench-")
    try:
        start_ms, _ = _timed(lambda: variant.start(out_dir))
        workload.after_start()
        times = _time_regions(workload, variant, job["warmup"], job["loops"])
        rss_steady = rss_bytes()
        finalize_ms, _ = _timed(variant.stop)
        rss_after = rss_bytes()
        output_bytes = _dir_bytes(out_dir)
        kernels_seen = variant.kernels_seen(out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)

    return {
        "region_ms": times,
        "median_ms": statistics.median(times),
        "stat": workload.statistic,  # how the report reduces region_ms (workloads.py)
        "kernels": workload.kernels,
        "kernels_expected": (workload.kernels * (job["warmup"] + job["loops"])
                             if workload.kernels else None),
        "kernels_seen": kernels_seen,
        "import_ms": import_ms,
        "start_ms": start_ms,
        "finalize_ms": finalize_ms,
        "rss_before_mb": rss_before / 2**20,
        "rss_growth_mb": (rss_steady - rss_before) / 2**20,
        "rss_growth_after_finalize_mb": (rss_after - rss_before) / 2**20,
        "output_bytes": output_bytes,
        "device": machine.gpu_name(),
        "versions": versions(),
    }


def _time_regions(workload, variant, warmup, loops):
    """Host wall time of each region, bracketed by device synchronization (ms)."""
    import torch

    times = []
    for i in range(warmup + loops):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with variant.scope(workload.name):
            workload.region()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def _timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return (time.perf_counter() - t0) * 1e3, value


def _dir_bytes(path):
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(path) for name in names)


def main(argv):
    job = json.loads(argv[1]) if len(argv) > 1 else {"variant": "none", "workload": "tiny_torch"}
    result = run_job(job)
    sys.stdout.flush()
    print(json.dumps(result), flush=True)
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
