#!/usr/bin/env python3
"""Times proton-viewer loading and printing a profile, pinned to one core.

Usage: time_viewer.py PROTON_VIEWER PROFILE [--runs 7] [-- extra viewer args]
Prints the median and best wall time of each command and its median CPU time (user + system,
which stays meaningful when other jobs share the machine); output goes to /dev/null so the
terminal's speed is not measured.
"""
import os
import resource
import statistics
import subprocess
import sys
import time

COMMANDS = [
    ["-m", "time/ms"],
    ["-m", "time/ms,count,util,tflop16/s,avg_time/us"],
    ["-m", "time/ms", "--print-sorted"],
    ["-m", "time/ms", "-e", "layer_2"],
    ["--output-format", "html", "-m", "time/ms"],
]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    viewer, profile = sys.argv[1], sys.argv[2]
    runs = 7
    if "--runs" in sys.argv:
        runs = int(sys.argv[sys.argv.index("--runs") + 1])
    pin = ["taskset", "-c", "0"] if os.path.exists("/usr/bin/taskset") else []
    size = os.path.getsize(profile) / 1e6
    print(f"profile {profile}: {size:.1f} MB; {runs} runs each, pinned to one core: {bool(pin)}")
    for args in COMMANDS:
        times, cpu = [], []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(pin + [viewer, *args, profile], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        print(f"{' '.join(args):50s} wall median {statistics.median(times)*1e3:6.0f} ms"
              f" best {min(times)*1e3:6.0f} ms | cpu median {statistics.median(cpu)*1e3:6.0f} ms")


if __name__ == "__main__":
    main()
