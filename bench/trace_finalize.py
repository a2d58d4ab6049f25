"""Finalize time and memory of a 1M-kernel trace: synthetic records, or real kernels on a GPU.

    python3 bench/trace_finalize.py [--kernels 1000000] [--build-dir DIR]
    python3 bench/trace_finalize.py --gpu [--kernels 1000000]

Default (no GPU needed): builds (if needed) and runs bench/micro/trace_finalize_bench.cpp, which
pushes tagged launches and their records through the real record processor and session, then
finalizes. Rows: streaming (no budget), a 64 MB flight recorder, tree+trace, and tree only.
`ingest ns/kernel` is record-thread work per kernel (for a streamed trace this includes
formatting and writing the spilled JSON).

--gpu (needs torch, a CUDA GPU and proton installed): launches `--kernels` one-element
`x.add_(1)` kernels in two scopes under proton.start(data="trace") and data="tree,trace",
synchronizes, then times proton.finalize(). `launch us/kernel` is host time per launch while
profiling (the loop, not finalize). Ends with one JSON line holding every row (--gpu rows also
give the trace's recorded events, which should be kernels + 2 scopes, and dropped records).

Each case runs in its own process. Columns shared by both modes: `finalize s` the finalize
call, `peak RSS MB` of the whole process (ru_maxrss), `RSS growth MB` its growth from just
before the session started, `trace MB` the .chrome_trace file.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from lib import ROOT, machine, proc
from lib.rss import peak_rss_mb

CPU_CASES = [("trace", 0), ("trace", 64), ("tree,trace", 0), ("tree", 0)]
GPU_CASES = [("trace", 0), ("tree,trace", 0)]
GPU_CASE_TIMEOUT_S = 150  # 1M launches take ~10 s; a hung case must not eat the run


def build(build_dir):
    binary = os.path.join(build_dir, "bench", "micro", "trace_finalize_bench")
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release", "-DPROTON_BUILD_TESTS=ON",
                        "-DPROTON_BUILD_VIEWER=OFF"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", build_dir, "trace_finalize_bench"], check=True,
                   stdout=subprocess.DEVNULL)
    return binary


def gpu_case(kernels, data, out_dir):
    """One --gpu case, in a process of its own; prints one JSON line (the C++ bench's keys)."""
    import torch

    import proton

    x = torch.zeros(1, device="cuda")
    x.add_(1)  # CUDA context and the add kernel loaded before anything is measured
    torch.cuda.synchronize()
    name = os.path.join(out_dir, f"proton_trace_gpu_bench_{os.getpid()}")
    rss_before = peak_rss_mb()
    proton.start(name, data=data)
    t0 = time.perf_counter()
    for scope, n in (("forward", kernels // 2), ("backward", kernels - kernels // 2)):
        with proton.scope(scope):
            for _ in range(n):
                x.add_(1)
    launch_s = time.perf_counter() - t0
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    proton.finalize()
    finalize_s = time.perf_counter() - t0
    trace = name + ".chrome_trace"
    trace_mb = os.path.getsize(trace) / 2**20 if os.path.exists(trace) else 0.0
    collected = trace_trailer(trace) if os.path.exists(trace) else {}
    for path in (trace, name + ".hatchet"):
        if os.path.exists(path):
            os.remove(path)
    print(json.dumps({"kernels": kernels, "data": data, "budget_mb": 0,
                      "launch_us_per_kernel": launch_s / kernels * 1e6,
                      "finalize_s": finalize_s, "peak_rss_mb": peak_rss_mb(),
                      "rss_growth_mb": peak_rss_mb() - rss_before, "trace_mb": trace_mb,
                      "recorded_events": collected.get("proton_recorded_events"),
                      "dropped_records": collected.get("dropped_records"),
                      "gpu": machine.gpu_name()}))


def trace_trailer(path):
    """The trace's otherData (collection counts), read from the file's end, not parsed whole."""
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - 4096))
        tail = f.read().decode()
    key = '"otherData":'
    return json.loads(tail[tail.rindex(key) + len(key):].rstrip()[:-1])


def run_case(cmd, timeout=None):
    r = proc.run(cmd, timeout)
    if r.error():
        sys.exit(f"case failed ({' '.join(r.cmd[1:])}): {r.error(3000)}")
    return r.result()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=int, default=1_000_000)
    p.add_argument("--gpu", action="store_true", help="real kernels on a GPU (see above)")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build", "bench-trace"))
    p.add_argument("--out-dir", default="/tmp")
    p.add_argument("--gpu-case", help=argparse.SUPPRESS)  # internal: one --gpu case's data
    args = p.parse_args()
    if args.gpu_case:
        return gpu_case(args.kernels, args.gpu_case, args.out_dir)

    if args.gpu:
        cases = GPU_CASES
        per_kernel = ("launch us/kernel", "launch_us_per_kernel")
        command = lambda data, budget: [  # noqa: E731
            sys.executable, os.path.abspath(__file__), "--gpu-case", data,
            "--kernels", str(args.kernels), "--out-dir", args.out_dir]
    else:
        binary = build(args.build_dir)
        cases = CPU_CASES
        per_kernel = ("ingest ns/kernel", "ingest_ns_per_kernel")
        command = lambda data, budget: [  # noqa: E731
            binary, str(args.kernels), data, str(budget), args.out_dir]
    print(f"{'data':<12}{'budget MB':>10}{per_kernel[0]:>18}{'finalize s':>12}"
          f"{'peak RSS MB':>13}{'RSS growth MB':>15}{'trace MB':>10}")
    rows = []
    for data, budget in cases:
        r = run_case(command(data, budget), GPU_CASE_TIMEOUT_S if args.gpu else None)
        rows.append(r)
        print(f"{data:<12}{budget:>10}{r[per_kernel[1]]:>18.2f}{r['finalize_s']:>12.3f}"
              f"{r['peak_rss_mb']:>13.1f}{r['rss_growth_mb']:>15.1f}{r['trace_mb']:>10.1f}")
        sys.stdout.flush()
    print(json.dumps({"bench": "trace_finalize", "mode": "gpu" if args.gpu else "synthetic",
                      "rows": rows}))


if __name__ == "__main__":
    main()
