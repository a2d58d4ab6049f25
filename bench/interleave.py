"""Launch overhead measured in one process, the profiler variants taking turns.

bench/run.py gives each variant its own processes, which is the only fair way to compare with
triton.profiler (another libcupti) and to see start-up and memory; but on a shared host the
speed of a whole process drifts by tens of percent, more than the microseconds at stake for
launch-bound workloads. Here every variant runs the same workload in the same process, one
slot after another: a cycle visits every variant once (the order rotates from cycle to cycle),
and a slot starts the variant, times the region `--repeats` times (keeping each meter's
smallest reading), and stops it. Differences are taken within a cycle, so slow drifts cancel;
the report gives their median over cycles with its 95% confidence interval (and, in the JSON,
their quartiles).

Variants: none, the CUPTI floors (bench/variants.py) and proton; not triton.profiler, whose
own libcupti must not meet ours in one process. "none" runs after CUPTI was loaded: what a
process that had a profiler once pays for nothing (the cold "none" of bench/run.py is the
other reference).

    python3 bench/interleave.py --out DIR [--workloads tiny_torch,tiny_triton]
        [--variants none,floor,floor_cb,proton] [--cycles 40] [--repeats 3] [--cpus 1,2,3,4]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import variants  # noqa: E402
from lib import machine  # noqa: E402
from lib import results as result_files  # noqa: E402

DEFAULT_WORKLOADS = "tiny_torch,tiny_triton"
DEFAULT_VARIANTS = "none,floor,floor_cb,floor_cb_all,proton,proton_allcb,proton_bufthread"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="./bench-out")
    p.add_argument("--workloads", default=DEFAULT_WORKLOADS)
    p.add_argument("--variants", default=DEFAULT_VARIANTS)
    p.add_argument("--cycles", type=int, default=40)
    p.add_argument("--repeats", type=int, default=3,
                   help="timed regions per slot (smallest reading kept)")
    p.add_argument("--cpus", default=None,
                   help="pin the process to these CPUs (e.g. 1,2,3,4: the launching thread and "
                        "the profiler's threads)")
    p.add_argument("--launches", type=int, default=0,
                   help="time regions of this many launches instead of the workload's own "
                        "(tiny workloads only): many short cycles narrow the confidence "
                        "intervals faster than a few long ones")
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


# What each region is measured in. Time meters report µs per launch; the hardware counters
# (the launching thread's user-mode instructions and cycles, where the host allows them)
# report counts per launch. Instructions hardly vary with host load, so they tell work added to
# the launching thread apart from noise; cycles add what that work costs in stalls.
METERS = {"wall": ("ms", 1e3, 1e6), "cpu": ("ms", 1e3, 1e6),
          "instructions": ("/launch", None, 1), "cycles": ("/launch", None, 1)}


def median_ci(values, z=1.96):
    """(low, median, high): a distribution-free 95% confidence interval of the median (order
    statistics of a binomial count), where quartiles say how single pairs spread. With n pairs
    it narrows as 1/sqrt(n): many short pairs beat a few long ones."""
    s = sorted(values)
    n = len(s)
    k = int((n - z * n ** 0.5) / 2)
    if n < 6 or k < 0:
        return quartiles(values)
    return s[k], statistics.median(s), s[n - 1 - k]


def summarize(slots, names, kernels, meter="wall"):
    """slots[cycle][variant] = the region's smallest reading of `meter`. Per-variant rows."""
    _, region_scale, launch_scale = METERS[meter]
    rows = {}
    for v in names:
        values = [c[v] for c in slots if v in c]
        if not values:
            continue
        mid = statistics.median(values)
        row = {"region": mid * region_scale if region_scale else mid / (kernels or 1),
               "slots": len(values)}
        for ref in ("none", "floor"):
            if ref == v or ref not in names or v == "none":
                continue
            pairs = [(c[v], c[ref]) for c in slots if v in c and ref in c]
            if not pairs:
                continue
            ratios = [a / b for a, b in pairs]
            row[f"ratio_vs_{ref}"] = median_ci(ratios)
            row[f"ratio_vs_{ref}_quartiles"] = quartiles(ratios)
            if kernels:
                diffs = [(a - b) / kernels * launch_scale for a, b in pairs]
                row[f"per_launch_vs_{ref}"] = median_ci(diffs)
                row[f"per_launch_vs_{ref}_quartiles"] = quartiles(diffs)
        rows[v] = row
    return rows


COLUMNS = ("workload (meter)", "variant", "region", "vs none", "per launch vs none",
           "per launch vs floor", "kernels seen")


def markdown(meta, results):
    lines = [f"## In-process launch overhead — {meta['gpu']}, {meta['date']}", "",
             f"torch {meta['torch']}, triton {meta['triton']}; commit {meta['commit']}; "
             f"{meta['cycles']} cycles x {meta['repeats']} regions per slot (smallest kept) of "
             f"{meta.get('launches', 'the workload')} launches, "
             f"CPUs {meta['cpu']}; {meta['seconds']:.0f} s in all; hardware counters: "
             f"{meta.get('counters', 'not read')}.",
             "Ratios and per-launch differences are medians over cycles of same-cycle pairs "
             "[95% confidence interval of that median; the JSON has quartiles too]. wall: "
             "elapsed time; cpu: the launching thread's CPU time (blind to time spent "
             "descheduled); instructions, cycles: retired by the launching "
             "thread in user mode (instructions barely move with host load: the work a variant "
             "adds to the launching thread).",
             ""]
    lines += result_files.table(COLUMNS, [])

    def fmt(q, spec):
        if q is None:
            return ""
        lo, mid, hi = q
        return f"{mid:{spec}} [{lo:{spec}}–{hi:{spec}}]"

    for meter, (unit, _, _) in METERS.items():
        counted = unit == "/launch"
        spec = "+.0f" if counted else "+.3f"
        suffix = "" if counted else " µs"
        for w, res in results.items():
            for v, row in res.get("meters", {}).get(meter, {}).items():
                ratio = row.get("ratio_vs_none")
                region = f"{row['region']:.0f} {unit}" if counted else f"{row['region']:.3f} ms"
                none, floor = row.get("per_launch_vs_none"), row.get("per_launch_vs_floor")
                lines.append(
                    f"| {w} ({meter}) | {v} | {region} | "
                    f"{fmt(ratio, '.3f') + 'x' if ratio else ''} | "
                    f"{fmt(none, spec) + suffix if none else ''} | "
                    f"{fmt(floor, spec) + suffix if floor else ''} | "
                    f"{row.get('kernels_seen', '') if meter == 'wall' else ''} |")
    for w, res in results.items():
        t = res.get("toggle")
        if t:
            lo, mid, hi = t["us_active_minus_paused"]
            lines.append(f"\n{w}: proton active minus deactivated (CUPTI still tracing), "
                         f"{t['pairs']} pairs of {t['block']}-launch blocks: "
                         f"{mid:+.3f} µs/launch [95% CI {lo:+.3f}–{hi:+.3f}] wall")
            for m in ("cpu", "instructions", "cycles"):
                if f"{m}_active_minus_paused" in t:
                    lo, mid, hi = t[f"{m}_active_minus_paused"]
                    unit = ("{:+.3f} µs" if m == "cpu" else "{:+.0f}").format
                    scale = 1e6 if m == "cpu" else 1
                    lines.append(f"  {m}: {unit(mid * scale)} [{unit(lo * scale)}–"
                                 f"{unit(hi * scale)}] per launch")
    for w, res in results.items():
        for v, note in (res.get("notes") or {}).items():
            lines.append(f"\n{w}, {v}: " + ", ".join(
                f"{k} {x:.1f}" if isinstance(x, float) else f"{k} {x}" for k, x in note.items()))
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
    try:
        _proton = variants.bench_module()  # the floors live in the bench module (bench/native)
    except variants.Unavailable:
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
    meters = Meters()
    with tempfile.TemporaryDirectory() as tmp:
        proton.start(os.path.join(tmp, "toggle"))
        diffs = {m: [] for m in meters.names}
        for i in range(pairs + 2):  # the first two pairs warm up
            used = {}
            for active in ((True, False) if i % 2 else (False, True)):
                (proton.activate if active else proton.deactivate)()
                sync()
                before = meters.read()
                w.region_n(block)
                sync()
                used[active] = meters.since(before)
            if i >= 2:
                for m in meters.names:
                    diffs[m].append((used[True][m] - used[False][m]) / block)
        proton.finalize()
    result = {"pairs": pairs, "block": block,
              "us_active_minus_paused": [x * 1e6 for x in median_ci(diffs["wall"])],
              "us_active_minus_paused_quartiles": [x * 1e6 for x in quartiles(diffs["wall"])]}
    for m in meters.names[1:]:
        result[f"{m}_active_minus_paused"] = median_ci(diffs[m])
    return result


def run_workload(workload, names, args, sync):
    w = workload()
    w.setup()
    region, kernels = w.region, w.kernels
    if args.launches:
        if not hasattr(w, "region_n"):
            raise SystemExit(f"--launches: {w.name} has no region of a chosen length")
        region, kernels = (lambda: w.region_n(args.launches)), args.launches
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
    meters = Meters()
    slots = {m: [] for m in meters.names}
    seen = {}
    with tempfile.TemporaryDirectory() as tmp:
        for cycle in range(args.cycles + 1):  # cycle 0 warms every variant up, untimed
            k = cycle % len(order)
            best = {m: {} for m in meters.names}
            for n in order[k:] + order[:k]:
                v = loaded[n]
                out_dir = os.path.join(tmp, n)
                os.makedirs(out_dir, exist_ok=True)
                v.start(out_dir)
                w.after_start()
                for _ in range(args.repeats):
                    sync()
                    before = meters.read()
                    region()
                    sync()
                    for m, value in meters.since(before).items():
                        best[m][n] = min(best[m].get(n, value), value)
                v.stop()
                seen[n] = kernels_seen(v, out_dir)  # the floor's counts reset at its next start
            if cycle:
                for m in meters.names:
                    slots[m].append(best[m])
    results = {m: summarize(slots[m], order, kernels, m) for m in meters.names}
    expected = (kernels or 0) * args.repeats
    for n, row in results["wall"].items():
        if seen.get(n) is not None:
            row["kernels_seen"] = f"{seen[n]} / {expected}" if expected else seen[n]
    notes = {n: v.notes() for n, v in loaded.items() if v.notes()}
    if notes:
        print(f"  notes: {notes}", flush=True)
    return {"kernels": kernels, "census": counts, "toggle": toggled, "meters": results,
            "slots": slots, "counters": meters.counters_note, "notes": notes}


class Meters:
    """Reads every meter at once: wall, the thread's CPU time, and its hardware counters when
    the bench module is built and the host has them (_proton_bench.thread_counters)."""

    def __init__(self):
        self.names = ["wall", "cpu"]
        self.counters = None
        try:
            counters = variants.bench_module().thread_counters
            counters()
            self.counters = counters
            self.names += ["instructions", "cycles"]
            self.counters_note = "instructions and cycles of the launching thread"
        except (variants.Unavailable, AttributeError, RuntimeError) as e:
            self.counters_note = f"not read ({e})"

    def read(self):
        values = {"wall": time.perf_counter(), "cpu": time.thread_time()}
        if self.counters:
            values["instructions"], values["cycles"] = self.counters()
        return values

    def since(self, before):
        now = self.read()
        return {m: now[m] - before[m] for m in self.names}


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
        "gpu": machine.gpu_name(),
        "date": machine.today(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "commit": os.environ.get("PROTON_COMMIT", "unknown"),
        "cycles": args.cycles,
        "repeats": args.repeats,
        "launches": args.launches or "the workload's",
        "cpu": args.cpus or "any",
        "seconds": time.time() - t0,
        "counters": next((r["counters"] for r in results.values()), "not read"),
    }
    table = markdown(meta, results)
    result_files.write(result_files.stem(args.out, meta["gpu"], args.label, date=meta["date"]),
                       {"meta": meta, "results": results}, table)
    print(table)


if __name__ == "__main__":
    main()
