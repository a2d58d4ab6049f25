"""Turns the children's measurements into one row per (workload, variant), a table, and the
targets.

Each run (one process) is reduced to one time by its workload's statistic (`stat` in the run:
"q1", the lower quartile of its timed regions, for launch-bound workloads; else the median).
Everything that compares two variants is paired within a round (variant over `none`, or minus
`floor`, in the same round) and the median over rounds is reported, so drift between rounds
cancels out. Needs nothing but the standard library: it also runs on recorded JSON.
"""

import statistics

from lib import results as result_files

COLUMNS = ("workload", "variant", "region ms", "ratio", "ratio range", "µs/kernel added",
           "µs/kernel over floor", "start ms", "finalize ms", "RSS +MB", "RSS net MB", "output",
           "kernels seen", "runs")


def lower_quartile(values):
    """The 25th percentile, interpolated between order statistics (numpy's default)."""
    values = sorted(values)
    at = (len(values) - 1) / 4
    below = int(at)
    above = min(below + 1, len(values) - 1)
    return values[below] + (values[above] - values[below]) * (at - below)


STATISTICS = {"median": statistics.median, "q1": lower_quartile}
STATISTIC_NAMES = {"median": "median", "q1": "lower quartile"}


def run_ms(run):
    """One run's time: its workload's statistic over its timed regions."""
    if not run.get("region_ms"):
        return run["median_ms"]
    return STATISTICS[run.get("stat", "median")](run["region_ms"])


def _ok(run):
    return "median_ms" in run


def _by_round(results, workload, variant, value):
    """{round: value(run)} over the successful runs of (workload, variant)."""
    return {r["round"]: value(r) for r in results
            if r["workload"] == workload and r["variant"] == variant and _ok(r)}


def paired(results, workload, a, b, combine, value=run_ms):
    """combine(value of a, value of b) for every round in which both ran."""
    va, vb = _by_round(results, workload, a, value), _by_round(results, workload, b, value)
    return [combine(va[k], vb[k]) for k in sorted(va) if k in vb]


def _ratio(x, y):
    return x / y


def _diff(x, y):
    return x - y


def summarize(results):
    """[{workload, variant, ...medians...}] in the order the workloads/variants first ran."""
    rows = []
    for workload, variant in _keys(results):
        runs = [r for r in results if (r["workload"], r["variant"]) == (workload, variant)]
        rows.append(_row(workload, variant, runs, results))
    return rows


def _keys(results):
    seen = {}
    for r in results:
        seen.setdefault((r["workload"], r["variant"]), None)
    return list(seen)


def _row(workload, variant, runs, results):
    row = {"workload": workload, "variant": variant}
    ok = [r for r in runs if _ok(r)]
    failed = [r for r in runs if "error" in r]
    if failed:
        row["errors"] = len(failed)
        row["error"] = failed[0]["error"]
    if not ok:
        if "skipped" in runs[0]:
            row["skipped"] = runs[0]["skipped"]
        return row

    row.update(runs=len(ok), stat=ok[0].get("stat", "median"),
               median_ms=_median(run_ms(r) for r in ok),
               start_ms=_median(r["start_ms"] for r in ok),
               finalize_ms=_median(r["finalize_ms"] for r in ok),
               rss_growth_mb=_median(r["rss_growth_mb"] for r in ok),
               output_bytes=_median(r["output_bytes"] for r in ok),
               kernels_seen=_median(r["kernels_seen"] for r in ok
                                    if r.get("kernels_seen") is not None),
               kernels_expected=ok[0].get("kernels_expected"))
    ratios = paired(results, workload, variant, "none", _ratio)
    if ratios:
        row.update(ratio=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios))
    rss_net = paired(results, workload, variant, "none", _diff, lambda r: r["rss_growth_mb"])
    if rss_net:
        row["rss_net_mb"] = statistics.median(rss_net)
    kernels = ok[0].get("kernels")
    if kernels:
        for key, base in (("us_per_kernel", "none"), ("us_over_floor", "floor")):
            us = us_per_kernel(results, workload, variant, base)
            if us and variant not in ("none", base):
                row[key] = statistics.median(us)
    return row


def us_per_kernel(results, workload, variant, base):
    """Per round: (time of variant - time of base) per kernel of one region, in µs."""
    kernels = next((r.get("kernels") for r in results
                    if r["workload"] == workload and _ok(r)), None)
    if not kernels:
        return []
    return paired(results, workload, variant, base, lambda x, y: (x - y) * 1e3 / kernels)


def _median(values):
    values = list(values)
    return statistics.median(values) if values else None


# The targets, all about `proton`: (label, workload or None for the worst over all
# workloads, measure, limit, unit). Each measure returns (value, [per-round values], note) or
# None when the run did not measure it.
TARGETS = (
    ("tiny_torch ratio", "tiny_torch", "ratio", 1.20, "x"),
    ("tiny_torch above floor", "tiny_torch", "over_floor", 0.15, " µs/launch"),
    ("tiny_triton above floor", "tiny_triton", "over_floor", 0.15, " µs/launch"),
    ("mlp_train vs triton", "mlp_train", "vs_triton", 1.00, "x"),
    ("gemm_bf16 ratio", "gemm_bf16", "ratio", 1.01, "x"),
    ("RSS net of none", None, "rss_net", 32.0, " MB"),
    ("output vs triton", None, "output_vs_triton", 1.00, "x"),
)
SUBJECT = "proton"


def _measure_ratio(results, workload):
    values = paired(results, workload, SUBJECT, "none", _ratio)
    return (statistics.median(values), values, "") if values else None


def _measure_over_floor(results, workload):
    values = us_per_kernel(results, workload, SUBJECT, "floor")
    if not values:
        return None
    # The split: CUPTI's dispatch of the launch callbacks, and what our callback and the rest
    # of proton add on top. Medians of paired differences: they need not sum to the total.
    dispatch = us_per_kernel(results, workload, "floor_cb", "floor")
    ours = us_per_kernel(results, workload, SUBJECT, "floor_cb")
    note = ""
    if dispatch and ours:
        note = (f"CUPTI dispatch {statistics.median(dispatch):+.3f}, "
                f"ours {statistics.median(ours):+.3f}")
    return statistics.median(values), values, note


def _measure_vs_triton(results, workload):
    values = paired(results, workload, SUBJECT, "triton", _ratio)
    return (statistics.median(values), values, "") if values else None


def _worst(results, per_workload):
    """The largest per-workload value over the workloads measured, and which one it was."""
    found = []
    for workload in dict.fromkeys(r["workload"] for r in results):
        value = per_workload(workload)
        if value is not None:
            found.append((value, workload))
    if not found:
        return None
    value, workload = max(found)
    return value, [], f"worst of {len(found)}: {workload}"


def _measure_rss_net(results, _):
    def net(workload):
        values = paired(results, workload, SUBJECT, "none", _diff, lambda r: r["rss_growth_mb"])
        return statistics.median(values) if values else None

    return _worst(results, net)


def _measure_output_vs_triton(results, _):
    def relative(workload):
        ours = _by_round(results, workload, SUBJECT, lambda r: r["output_bytes"])
        theirs = _by_round(results, workload, "triton", lambda r: r["output_bytes"])
        if not ours or not theirs or not statistics.median(theirs.values()):
            return None
        return statistics.median(ours.values()) / statistics.median(theirs.values())

    return _worst(results, relative)


MEASURES = {"ratio": _measure_ratio, "over_floor": _measure_over_floor,
            "vs_triton": _measure_vs_triton, "rss_net": _measure_rss_net,
            "output_vs_triton": _measure_output_vs_triton}


def targets(results):
    """[{label, value, low, high, note, limit, unit, met}] for the targets this run measured,
    and the labels of those it did not."""
    measured, missing = [], []
    for label, workload, measure, limit, unit in TARGETS:
        got = MEASURES[measure](results, workload)
        if got is None:
            missing.append(label)
            continue
        value, per_round, note = got
        measured.append({"label": label, "value": value, "note": note, "limit": limit,
                         "unit": unit, "met": value <= limit,
                         "low": min(per_round) if per_round else None,
                         "high": max(per_round) if per_round else None})
    return measured, missing


def targets_markdown(results):
    measured, missing = targets(results)
    lines = [f"Targets for `{SUBJECT}` (median over rounds [range over rounds]):", ""]
    for t in measured:
        signed = t["unit"].startswith(" µs")
        value = _number(t["value"], t["unit"], signed)
        spread = ("" if t["low"] is None else
                  f" [{_number(t['low'], '', signed)}–{_number(t['high'], '', signed)}]")
        note = f" ({t['note']})" if t["note"] else ""
        verdict = "met" if t["met"] else "**not met**"
        lines.append(f"- {t['label']}: {value}{spread}{note}; target ≤ "
                     f"{_number(t['limit'], t['unit'], signed)}: {verdict}")
    if missing:
        lines.append(f"- not measured in this run: {', '.join(missing)}")
    return "\n".join(lines) + "\n"


def _number(value, unit, signed):
    digits = 1 if unit == " MB" else 3
    value = _no_minus_zero(value, digits)
    return f"{value:+.{digits}f}{unit}" if signed else f"{value:.{digits}f}{unit}"


def markdown(meta, results):
    versions = ", ".join(f"{k} {v}" for k, v in sorted(meta.get("versions", {}).items()))
    cfg = meta.get("config", {})
    rounds = len({r["round"] for r in results})
    cpus = cfg.get("cpus")
    preset = f"preset {cfg['preset']}: " if "preset" in cfg else ""
    pinning = f"pinned to CPUs {_cpu_text(cpus)}" if cpus else "not pinned"
    lines = [
        f"## Profiler overhead — {meta.get('device') or 'unknown GPU'}, {meta.get('date')}",
        "",
        f"{versions}; commit {meta.get('commit') or '?'}; {preset}{rounds} of "
        f"{cfg.get('rounds')} rounds x {cfg.get('loops')} timed regions per process "
        f"({cfg.get('isolation')}, {pinning}); {meta.get('wall_s')} s in all.",
        f"Time of a run: {_statistics_text(results)} of its timed regions.",
        "",
        *result_files.table(COLUMNS, []),
    ]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in summarize(results)]
    return "\n".join(lines) + "\n\n" + targets_markdown(results)


def _statistics_text(results):
    by_stat = {}
    for r in results:
        if _ok(r):
            by_stat.setdefault(r.get("stat", "median"), {}).setdefault(r["workload"], None)
    return "; ".join(f"{STATISTIC_NAMES.get(s, s)} ({', '.join(w)})" for s, w in by_stat.items())


def _cpu_text(cpus):
    return ",".join(str(c) for c in cpus)


def _cells(row):
    head = [row["workload"], row["variant"]]
    if "median_ms" not in row:
        why = f"skipped: {row['skipped']}" if "skipped" in row else f"error: {row.get('error')}"
        return head + [why.replace("|", "/")[:120]] + [""] * (len(COLUMNS) - 3)
    spread = (f"{row['ratio_min']:.3f}–{row['ratio_max']:.3f}" if "ratio" in row else "")
    runs = f"{row['runs']}" + (f" ({row['errors']} failed)" if row.get("errors") else "")
    return head + [
        f"{row['median_ms']:.3f}",
        f"{row['ratio']:.3f}x" if "ratio" in row else "",
        spread,
        _signed(row.get("us_per_kernel")),
        _signed(row.get("us_over_floor")),
        f"{row['start_ms']:.1f}",
        f"{row['finalize_ms']:.1f}",
        f"{row['rss_growth_mb']:.1f}",
        (f"{_no_minus_zero(row['rss_net_mb'], 1):+.1f}"
         if row["variant"] != "none" and "rss_net_mb" in row else ""),
        _size(row["output_bytes"]),
        _seen(row),
        runs,
    ]


def _seen(row):
    """Kernels in the profile (median over runs), against those launched where known."""
    seen, expected = row.get("kernels_seen"), row.get("kernels_expected")
    if seen is None:
        return ""
    return f"{seen:.0f}" + (f" / {expected}" if expected else "")


def _signed(value):
    return "" if value is None else f"{_no_minus_zero(value, 3):+.3f}"


def _no_minus_zero(value, digits):
    return 0.0 if round(value, digits) == 0 else value


def _size(n):
    if n < 1024:
        return f"{n:.0f} B"
    if n < 2**20:
        return f"{n / 1024:.1f} KB"
    return f"{n / 2**20:.1f} MB"
