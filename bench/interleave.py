"""Launch overhead measured in one process, the profiler variants taking turns.

bench/run.py gives each variant its own processes, which is the only fair way to compare with
triton.profiler (another libcupti) and to see start-up and memory; but on a shared host the
speed of a whole process drifts by tens of percent, more than the microseconds at stake for
launch-bound workloads. Here every variant runs the same workload in the same process, one
slot after another: a cycle visits every variant once (the order rotates from cycle to cycle),
and a slot starts the variant, times the region `--repeats` times (keeping the fastest), and
stops it. Differences are taken within a cycle, so slow drifts cancel; the report gives their
median and quartiles over cycles.

Variants: none, the CUPTI floors (bench/variants.py) and proton; not triton.profiler, whose
own libcupti must not meet ours in one process. "none" runs after CUPTI was loaded: what a
process that had a profiler once pays for nothing (the cold "none" of bench/run.py is the
other reference).

    python3 bench/interleave.py --out DIR [--workloads tiny_torch,tiny_triton]
        [--variants none,floor,floor_cb,proton] [--cycles 40] [--repeats 3] [--cpus 1,2,3,4]
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import variants  # noqa: E402

DEFAULT_WORKLOADS = "tiny_torch,tiny_triton"
DEFAULT_VARIANTS = "none,floor,floor_cb,floor_cb_all,proton,proton_allcb,proton_bufthread"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="./bench-out")
    p.add_argument("--workloads", default=DEFAULT_WORKLOADS)
    p.add_argument("--variants", default=DEFAULT_VARIANTS)
    p.add_argument("--cycles", type=int, default=40)
    p.add_argument("--repeats", type=int, default=3, help="timed regions per slot (fastest kept)")
    p.add_argument("--cpus", default=None,
                   help="pin the process to these CPUs (e.g. 1,2,3,4: the launching thread and "
                        "the profiler's threads)")
    p.add_argument("--label", default="interleave", help="file name suffix")
    p.add_argument("--toggle-pairs", type=int, default=0,
                   help="also time proton active vs deactivated in this many alternating "
                        "pairs of 1,000-launch blocks (see toggle())")
    return p.parse_args(argv)


def quartiles(values):
    if len(values) < 2:
        return (values[0],) * 3 if values else (float("nan"),) * 3
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def summarize(slots, names, kernels):
    """slots[cycle][variant] = seconds of the fastest region. Returns per-variant rows."""
    rows = {}
    for v in names:
        times = [c[v] for c in slots if v in c]
        row = {"region_ms": statistics.median(times) * 1e3, "slots": len(times)}
        for ref in ("none", "floor"):
            if ref == v or ref not in names or v == "none":
                continue
            pairs = [(c[v], c[ref]) for c in slots if v in c and ref in c]
            ratio = quartiles([a / b for a, b in pairs])
            row[f"ratio_vs_{ref}"] = ratio
            if kernels:
                row[f"us_vs_{ref}"] = quartiles([(a - b) / kernels * 1e6 for a, b in pairs])
        rows[v] = row
    return rows


def markdown(meta, results):
    lines = [f"## In-process launch overhead — {meta['gpu']}, {meta['date']}", "",
             f"torch {meta['torch']}, triton {meta['triton']}; commit {meta['commit']}; "
             f"{meta['cycles']} cycles x {meta['repeats']} regions per slot (fastest kept), "
             f"CPUs {meta['cpu']}; {meta['seconds']:.0f} s in all.",
             "Ratios and µs are medians over cycles of same-cycle pairs [lower–upper quartile]; "
             "wall: elapsed time, cpu: the launching thread's CPU time (blind to time spent "
             "descheduled, which is most of a shared host's noise).",
             ""]
    lines.append("| workload | variant | region ms | vs none | µs/launch vs none | "
                 "µs/launch vs floor | kernels seen |")
    lines.append("|---|---|---|---|---|---|---|")

    def fmt(q, unit):
        if q is None:
            return ""
        lo, mid, hi = q
        return f"{mid:{unit}} [{lo:{unit}}–{hi:{unit}}]"

    for key, label in (("variants", "wall"), ("cpu_variants", "cpu")):
        for w, res in results.items():
            for v, row in res.get(key, {}).items():
                ratio = row.get("ratio_vs_none")
                lines.append(
                    f"| {w} ({label}) | {v} | {row['region_ms']:.3f} | "
                    f"{fmt(ratio, '.3f') + 'x' if ratio else ''} | "
                    f"{fmt(row.get('us_vs_none'), '+.3f')} | "
                    f"{fmt(row.get('us_vs_floor'), '+.3f')} | {row.get('kernels_seen', '')} |")
    for w, res in results.items():
        t = res.get("toggle")
        if t:
            lo, mid, hi = t["us_active_minus_paused"]
            lines.append(f"\n{w}: proton active minus deactivated (CUPTI still tracing), "
                         f"{t['pairs']} pairs of {t['block']}-launch blocks: "
                         f"{mid:+.3f} µs/launch [{lo:+.3f}–{hi:+.3f}]")
    for w, res in results.items():
        if res.get("census"):
            lines.append(f"\n{w}, one region under the counting floors: {res['census']}")
    return "\n".join(lines) + "\n"


def kernels_seen(variant, out_dir):
    try:
        return variant.kernels_seen(out_dir)
    except (OSError, ValueError, KeyError):
        return None


# What one region's launches look like to CUPTI: callbacks entered per domain, which domain's
# correlation id the kernel records carry, and how many API and external-correlation records
# the record-based variant produces. Tells which launch ids a profiler must subscribe to.
CENSUS = {"callbacks": {"callbacks": "all", "count": True},
          "api_records": {"api_records": "all", "external": True}}


def census(w, sync):
    from proton import _proton

    if not hasattr(_proton, "_floor_counts"):
        return None
    found = {}
    for label, options in CENSUS.items():
        try:
            _proton._floor_start(**options)
        except RuntimeError as e:
            found[label] = str(e)
            continue
        w.region()
        sync()
        _proton._floor_stop()
        found[label] = _proton._floor_counts()
    return found


def toggle(w, pairs, sync, block=1000):
    """Proton's cost above CUPTI's, at a fine grain: one session, deactivated and activated in
    turn between blocks of `block` launches. Deactivated, CUPTI still traces every kernel and
    Proton still processes the records; only the launch callbacks are off. So active minus
    deactivated is what the callbacks cost per launch (CUPTI's dispatch and our tagging), with
    pairs 10-20 ms apart instead of a cycle of processes or sessions."""
    import proton

    if not hasattr(w, "region_n"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        proton.start(os.path.join(tmp, "toggle"))
        diffs = []
        for i in range(pairs + 2):  # the first two pairs warm up
            t = {}
            for active in ((True, False) if i % 2 else (False, True)):
                (proton.activate if active else proton.deactivate)()
                sync()
                t0 = time.perf_counter()
                w.region_n(block)
                sync()
                t[active] = time.perf_counter() - t0
            if i >= 2:
                diffs.append((t[True] - t[False]) / block * 1e6)
        proton.finalize()
    lo, mid, hi = quartiles(diffs)
    return {"pairs": pairs, "block": block, "us_active_minus_paused": [lo, mid, hi]}


def run_workload(workload, names, args, sync):
    w = workload()
    w.setup()
    counts = census(w, sync)
    print(f"  census: {counts}", flush=True)
    toggled = toggle(w, args.toggle_pairs, sync) if args.toggle_pairs else None
    if toggled:
        print(f"  toggle: {toggled}", flush=True)
    loaded = {}
    for n in names:
        v = variants.ALL[n]()
        try:
            v.load()
        except variants.Unavailable as e:
            print(f"  {n}: unavailable ({e})", flush=True)
            continue
        loaded[n] = v
    order = list(loaded)
    slots, cpu_slots, seen = [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for cycle in range(args.cycles + 1):  # cycle 0 warms every variant up, untimed
            k = cycle % len(order)
            times, cpu = {}, {}
            for n in order[k:] + order[:k]:
                v = loaded[n]
                out_dir = os.path.join(tmp, n)
                os.makedirs(out_dir, exist_ok=True)
                v.start(out_dir)
                w.after_start()
                best = best_cpu = float("inf")
                for _ in range(args.repeats):
                    sync()
                    t0, c0 = time.perf_counter(), time.thread_time()
                    w.region()
                    sync()
                    best = min(best, time.perf_counter() - t0)
                    best_cpu = min(best_cpu, time.thread_time() - c0)
                v.stop()
                seen[n] = kernels_seen(v, out_dir)  # the floor's counts reset at its next start
                times[n], cpu[n] = best, best_cpu
            if cycle:
                slots.append(times)
                cpu_slots.append(cpu)
    rows = summarize(slots, order, w.kernels)
    cpu_rows = summarize(cpu_slots, order, w.kernels)
    expected = (w.kernels or 0) * args.repeats
    for n, row in rows.items():
        if seen.get(n) is not None:
            row["kernels_seen"] = f"{seen[n]} / {expected}" if expected else seen[n]
    return {"kernels": w.kernels, "census": counts, "toggle": toggled, "variants": rows, "cpu_variants": cpu_rows,
            "slots": slots, "cpu_slots": cpu_slots}


def main(argv=None):
    args = parse_args(argv)
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    import torch
    import workloads

    names = [n for n in args.variants.split(",") if n]
    unknown = [n for n in names if n not in variants.ALL] + [
        w for w in args.workloads.split(",") if w not in workloads.ALL]
    if unknown:
        sys.exit(f"unknown variant or workload: {', '.join(unknown)}")
    t0 = time.time()
    results = {}
    for wname in args.workloads.split(","):
        print(f"{wname}: {len(names)} variants x {args.cycles} cycles", flush=True)
        results[wname] = run_workload(workloads.ALL[wname], names, args, torch.cuda.synchronize)
    import triton

    meta = {
        "gpu": torch.cuda.get_device_name(0),
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "commit": os.environ.get("PROTON_COMMIT", "unknown"),
        "cycles": args.cycles,
        "repeats": args.repeats,
        "cpu": args.cpus or "any",
        "seconds": time.time() - t0,
    }
    os.makedirs(args.out, exist_ok=True)
    stem = f"{meta['date']}-{meta['gpu'].lower().replace(' ', '-')}-{args.label}"
    with open(os.path.join(args.out, stem + ".json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    table = markdown(meta, results)
    with open(os.path.join(args.out, stem + ".md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
