"""Finalize time and memory of a 1M-kernel trace, on synthetic records (no GPU needed).

    python3 bench/trace_finalize.py [--kernels 1000000] [--build-dir DIR]

Builds (if needed) and runs tests/cpp/trace_finalize_bench.cpp, which pushes tagged launches
and their records through the real record processor and session, then finalizes. Rows:
streaming (no budget), a 64 MB flight recorder, and tree+trace. Columns: `ingest ns/kernel`
is record-thread work per kernel (for a streamed trace this includes formatting and writing
the spilled JSON), `finalize s` the finalize call, `peak RSS MB` of the whole process.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [("trace", 0), ("trace", 64), ("tree,trace", 0), ("tree", 0)]


def build(build_dir):
    binary = os.path.join(build_dir, "tests", "cpp", "trace_finalize_bench")
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release", "-DPROTON_BUILD_TESTS=ON",
                        "-DPROTON_BUILD_VIEWER=OFF"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", build_dir, "trace_finalize_bench"], check=True,
                   stdout=subprocess.DEVNULL)
    return binary


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=int, default=1_000_000)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build", "bench-trace"))
    p.add_argument("--out-dir", default="/tmp")
    args = p.parse_args()
    binary = build(args.build_dir)
    print(f"{'data':<12}{'budget MB':>10}{'ingest ns/kernel':>18}{'finalize s':>12}"
          f"{'peak RSS MB':>13}{'trace MB':>10}")
    for data, budget in CASES:
        line = subprocess.run([binary, str(args.kernels), data, str(budget), args.out_dir],
                              check=True, capture_output=True, text=True).stdout
        r = json.loads(line)
        print(f"{data:<12}{budget:>10}{r['ingest_ns_per_kernel']:>18.1f}{r['finalize_s']:>12.3f}"
              f"{r['peak_rss_mb']:>13.1f}{r['trace_mb']:>10.1f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
