#!/usr/bin/env python3
"""Scale check for merging many rank profiles: generates, times, and reports peak memory.

    bench/rank_merge.py PROTON_VIEWER [--ranks 1024] [--nodes 10000] [--dir DIR] [--keep]
                        [--json OUT.json]

Generates --ranks Hatchet files of --nodes nodes each, one per rank of one program (the same
call tree, per-rank times drawn around a common mean, every 50th frame missing on a few ranks,
each file with its rank block on the root frame as a multi-process run writes it). Then runs
`proton-viewer merge -o OUT rank*.hatchet` pinned to one core (taskset, when present) and
reports wall time, CPU time and peak resident memory (GNU time's %M), against the target:
under 10 s, and peak memory below 3x the largest input plus the output. Memory is judged as the
growth above the executable's idle resident size (`proton-viewer --version`: its code and
libraries, ~3.5 MB, which no input changes); both numbers are reported.

Deterministic for a given --seed. The files take about --ranks x 2 MB on disk; they are
deleted afterwards unless --keep.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from lib import results as result_files


def make_shape(nodes, rng):
    """Returns [(parent index, name, is_kernel)] in pre-order-compatible order (parents first)."""
    shape = [(-1, "ROOT", False)]
    frontier = [(0, 0)]
    while len(shape) < nodes and frontier:
        parent, depth = frontier.pop(0)
        for i in range(rng.randint(2, 8)):
            if len(shape) >= nodes:
                break
            leaf = depth >= 3 and rng.random() < 0.5
            if leaf:
                name = f"kernel_{rng.randrange(5000)}_{i}_BLOCK_M_{rng.choice([64, 128])}"
            else:
                name = f"/src/model/layer_{depth}.py:{rng.randint(1, 900)}@fn_{i}_{len(shape)}"
            shape.append((parent, name, leaf))
            if not leaf:
                frontier.append((len(shape) - 1, depth + 1))
    return shape


def write_rank(path, shape, children, rank, ranks, rng, means):
    out = []
    dropped = set()
    if rank % 7 == 3:  # a few ranks skip some frames (rank-0-only logging, early exits, ...)
        dropped = {i for i in range(1, len(shape)) if i % 50 == 0}

    def emit(i):
        parent, name, kernel = shape[i]
        frame = {"name": name, "type": "function"}
        if i == 0:
            frame.update(rank=rank, world_size=ranks, local_rank=rank % 8, host=f"node{rank // 8}",
                         device=str(rank % 8), proton_version="0.1.0")
            metrics = '{"count":0,"time (ns)":0}'
        elif kernel:
            t = max(1, int(means[i] * rng.uniform(0.8, 1.25)))
            metrics = ('{"count":%d,"device_id":"%d","device_type":"CUDA","time (ns)":%d}'
                       % (rng.randint(1, 100), rank % 8, t))
        else:
            metrics = "{}"
        out.append('{"frame":%s,"metrics":%s,"children":[' % (json.dumps(frame), metrics))
        first = True
        for c in children[i]:
            if c in dropped:
                continue
            if not first:
                out.append(",")
            first = False
            emit(c)
        out.append("]}")

    sys.setrecursionlimit(10000)
    out.append("[")
    emit(0)
    out.append(',{"CUDA":{"%d":{"arch":"90","bus_width":5120,"clock_rate":1980000,'
               '"memory_clock_rate":2619000,"num_sms":132}}}]' % (rank % 8))
    with open(path, "w") as f:
        f.write("".join(out))


def run_measured(cmd, pin):
    """Wall s, CPU s, peak RSS bytes. Peak RSS comes from GNU time when present: wait4's
    ru_maxrss of a child forked from this Python process would include this process's own
    pages before exec."""
    if pin and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0"] + cmd
    gnu_time = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    fd, stats = tempfile.mkstemp(suffix=".time")
    os.close(fd)
    if gnu_time:
        cmd = [gnu_time, "-o", stats, "-f", "%M"] + cmd
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(cmd[:6])} ... failed ({code}): {err}")
    rss = usage.ru_maxrss * 1024
    if gnu_time:
        with open(stats) as f:
            rss = int(f.read().split()[-1]) * 1024
    os.remove(stats)
    return wall, usage.ru_utime + usage.ru_stime, rss, err


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("viewer")
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--reuse", action="store_true",
                    help="keep rank files already in --dir (same --ranks/--nodes/--seed)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    work = args.dir or tempfile.mkdtemp(prefix="proton_rank_merge_")
    os.makedirs(work, exist_ok=True)
    shape = make_shape(args.nodes, rng)
    children = [[] for _ in shape]
    for i, (parent, _, _) in enumerate(shape):
        if parent >= 0:
            children[parent].append(i)
    means = [rng.randint(1_000, 5_000_000) for _ in shape]
    t0 = time.perf_counter()
    paths = []
    for r in range(args.ranks):
        p = os.path.join(work, f"bench.rank{r}.hatchet")
        paths.append(p)
        if args.reuse and os.path.exists(p):
            continue
        write_rank(p, shape, children, r, args.ranks, random.Random(args.seed * 100003 + r),
                   means)
    gen_s = time.perf_counter() - t0
    sizes = [os.path.getsize(p) for p in paths]
    out = os.path.join(work, "merged.hatchet")

    _, _, idle_rss, _ = run_measured([args.viewer, "--version"], pin=True)
    _, _, base_rss, _ = run_measured([args.viewer, "merge", "-o", out + ".one", paths[0]],
                                     pin=True)
    runs = []
    for _ in range(args.runs):
        wall, cpu, rss, err = run_measured([args.viewer, "merge", "-o", out] + paths, pin=True)
        runs.append((wall, cpu, rss))
    out_size = os.path.getsize(out)
    best = min(runs)
    peak = max(r[2] for r in runs)
    limit = 3 * max(sizes) + out_size
    result = {
        "ranks": args.ranks,
        "nodes_per_rank": len(shape),
        "input_bytes_total": sum(sizes),
        "input_bytes_largest": max(sizes),
        "output_bytes": out_size,
        "generate_s": round(gen_s, 1),
        "merge_wall_s": [round(r[0], 3) for r in runs],
        "merge_cpu_s": [round(r[1], 3) for r in runs],
        "merge_wall_best_s": round(best[0], 3),
        "merge_cpu_best_s": round(min(r[1] for r in runs), 3),
        "peak_rss_bytes": peak,
        "single_file_peak_rss_bytes": base_rss,
        "idle_rss_bytes": idle_rss,
        "peak_growth_bytes": peak - idle_rss,
        "memory_limit_bytes": limit,
        "peak_growth_over_limit": round((peak - idle_rss) / limit, 3),
        "target_time_s": 10,
        "time_ok": best[0] < 10,
        "cpu_time_ok": min(r[1] for r in runs) < 10,
        "memory_ok": peak - idle_rss < limit,
        "pinned_to_one_core": bool(shutil.which("taskset")),
        "warnings": err.strip().splitlines()[:5],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        result_files.write_json(args.json, result, indent=2)
    if not args.keep and args.dir is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
