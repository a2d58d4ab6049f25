"""Turns the children's measurements into one row per (workload, variant) and a table.

Ratios are taken within a round (variant's median region time over `none`'s in the same
round) and the median over rounds is reported, so drift between rounds cancels out.
"""

import statistics

COLUMNS = ("workload", "variant", "region ms", "ratio", "ratio range", "µs/kernel added",
           "start ms", "finalize ms", "RSS +MB", "output", "kernels seen", "runs")


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
    ok = [r for r in runs if "median_ms" in r]
    failed = [r for r in runs if "error" in r]
    if failed:
        row["errors"] = len(failed)
        row["error"] = failed[0]["error"]
    if not ok:
        if "skipped" in runs[0]:
            row["skipped"] = runs[0]["skipped"]
        return row

    baseline = {r["round"]: r["median_ms"] for r in results
                if r["workload"] == workload and r["variant"] == "none" and "median_ms" in r}
    ratios = [r["median_ms"] / baseline[r["round"]] for r in ok if r["round"] in baseline]
    row.update(runs=len(ok), median_ms=_median(r["median_ms"] for r in ok),
               start_ms=_median(r["start_ms"] for r in ok),
               finalize_ms=_median(r["finalize_ms"] for r in ok),
               rss_growth_mb=_median(r["rss_growth_mb"] for r in ok),
               output_bytes=_median(r["output_bytes"] for r in ok),
               kernels_seen=_median(r["kernels_seen"] for r in ok
                                    if r.get("kernels_seen") is not None),
               kernels_expected=ok[0].get("kernels_expected"))
    if ratios:
        row.update(ratio=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios))
    kernels = ok[0].get("kernels")
    if kernels and baseline:
        added_ms = row["median_ms"] - statistics.median(baseline.values())
        row["us_per_kernel"] = added_ms * 1e3 / kernels
    return row


def _median(values):
    values = list(values)
    return statistics.median(values) if values else None


def markdown(meta, results):
    versions = ", ".join(f"{k} {v}" for k, v in sorted(meta.get("versions", {}).items()))
    cfg = meta.get("config", {})
    lines = [
        f"## Profiler overhead — {meta.get('device') or 'unknown GPU'}, {meta.get('date')}",
        "",
        f"{versions}; commit {meta.get('commit') or '?'}; {cfg.get('rounds')} rounds x "
        f"{cfg.get('loops')} timed regions per process ({cfg.get('isolation')}); "
        f"{meta.get('wall_s')} s in all.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in summarize(results)]
    return "\n".join(lines) + "\n"


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
        _signed(row.get("us_per_kernel")) if row["variant"] != "none" else "",
        f"{row['start_ms']:.1f}",
        f"{row['finalize_ms']:.1f}",
        f"{row['rss_growth_mb']:.1f}",
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
    return "" if value is None else f"{value:+.3f}"


def _size(n):
    if n < 1024:
        return f"{n:.0f} B"
    if n < 2**20:
        return f"{n / 1024:.1f} KB"
    return f"{n / 2**20:.1f} MB"
