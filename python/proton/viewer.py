"""``proton.viewer``: the ``proton-viewer`` command, and triton.profiler.viewer's library functions.

Two halves that share nothing but the file format:

* ``main()`` / ``view()`` run the native ``proton-viewer`` binary (C++: reading, deriving,
  filtering and drawing all live there), so ``python -m proton.viewer ...`` behaves exactly like
  the command.
* ``read``, ``parse``, ``get_raw_metrics``, ``derive_metrics``, ``format_frames``,
  ``filter_frames``, ``print_tree``, ``apply_diff_profile`` (and ``match_available_metrics``,
  ``get_min_time_flops``, ``get_min_time_bytes``, ``show_metrics``) keep the signatures and
  results of ``triton.profiler.viewer``: they build llnl-hatchet GraphFrames, so scripts and
  notebooks written against Triton's module run unchanged. They need ``llnl-hatchet`` and
  ``pandas``; without them each raises ImportError naming the packages.

For reading profiles without those packages, use ``proton.profiles`` (the viewer's own C++
reader; its names never clash with these).
"""

import json
import os
import subprocess
import sys
import sysconfig
from collections import namedtuple

from . import specs

# -- the command ----------------------------------------------------------------------------


def _binary() -> str:
    from . import _proton  # PROTON_* variables are read by the native module

    override = _proton.env_value("PROTON_VIEWER")
    if override:
        return override
    return os.path.join(sysconfig.get_path("scripts"), "proton-viewer")


def main(argv=None) -> int:
    """Runs proton-viewer with ``argv`` (default: this process's arguments)."""
    args = sys.argv[1:] if argv is None else list(argv)
    return subprocess.call([_binary(), *args])


def view(path: str, *args: str) -> str:
    """Returns what ``proton-viewer [args] path`` prints; raises CalledProcessError on failure."""
    done = subprocess.run([_binary(), *args, str(path)], capture_output=True, text=True,
                          check=True)
    return done.stdout


# -- triton.profiler.viewer's library functions --------------------------------------------

# As in triton.profiler.hooks.launch: the state under which launch metadata is computed, and
# the flop widths a launch can report.
COMPUTE_METADATA_SCOPE_NAME = "__proton_launch_metadata"
FLOPS_WIDTHS = (8, 16, 32, 64)

# triton.profiler.viewer's tables of derivable metrics: a request's unit -> its factor.
FactorDict = namedtuple("FactorDict", ["name", "factor"])
time_factor_dict = FactorDict("time", {"time/s": 1, "time/ms": 1e-3, "time/us": 1e-6, "time/ns": 1e-9})
avg_time_factor_dict = FactorDict("avg_time", {f"avg_{k}": v for k, v in time_factor_dict.factor.items()})
cpu_time_factor_dict = FactorDict("cpu_time", {f"cpu_{k}": v for k, v in time_factor_dict.factor.items()})
avg_cpu_time_factor_dict = FactorDict("avg_cpu_time",
                                      {f"avg_{k}": v for k, v in cpu_time_factor_dict.factor.items()})
bytes_factor_dict = FactorDict("bytes", {"byte/s": 1, "gbyte/s": 1e9, "tbyte/s": 1e12})
default_flop_factor_dict = {"flop/s": 1, "gflop/s": 1e9, "tflop/s": 1e12}
derivable_metrics = {
    **{k: bytes_factor_dict for k in bytes_factor_dict.factor},
    **{k: FactorDict("flops", default_flop_factor_dict) for k in default_flop_factor_dict},
    **{f"{p}flop{w}/s": FactorDict(f"flops{w}", {f"flop{w}/s": 1, f"gflop{w}/s": 1e9, f"tflop{w}/s": 1e12})
       for w in FLOPS_WIDTHS for p in ("", "g", "t")},
}

_NEEDS = "proton.viewer's hatchet functions need llnl-hatchet and pandas: " \
    "pip install llnl-hatchet pandas"


def _libs():
    """(hatchet, pandas, numpy), imported on first use so the command works without them."""
    try:
        import hatchet
        import numpy
        import pandas
    except ImportError as e:
        raise ImportError(f"{_NEEDS} ({e})") from None
    return hatchet, pandas, numpy


def match_available_metrics(metrics, inclusive_metrics, exclusive_metrics):
    """The data-frame columns for the requested raw metrics (case and unit ignored).

    Inclusive metrics come back with their " (inc)" column suffix. RuntimeError when none match.
    """
    requested = metrics if isinstance(metrics, list) else [metrics]
    found = []
    metric = None
    for metric in requested or []:
        metric = metric.lower()
        for raw in inclusive_metrics + exclusive_metrics:
            bare = raw.split("(")[0].strip().lower()
            if metric == raw or metric == bare:
                found.append(raw + (" (inc)" if raw in inclusive_metrics else ""))
                break
    if not found:
        raise RuntimeError(
            f"Metric {metric} is not found. Use the --list flag to list available metrics")
    return found


def remove_frames(database):
    """triton.profiler.viewer's name: the profile ``[root, device_map]`` without launch-metadata
    frames and empty leaves (and parents left with no children)."""
    return _drop_hidden_frames(database)


def _drop_hidden_frames(database):
    """Drops launch-metadata frames and empty leaves, then parents left with no children."""

    def keep(node):
        if "frame" not in node:
            return node
        name = node["frame"]["name"]
        # Triton 3.9 names metadata frames "<scope>:<kernel>" (state.metadata_state).
        if name.split(":", 1)[0] == COMPUTE_METADATA_SCOPE_NAME:
            return None
        children = node.get("children", [])
        # Hatchet needs "metrics" on every node; a file may leave it out where it is empty
        # (triton.profiler's viewer fails there with KeyError).
        node.setdefault("metrics", {})
        if not node["metrics"] and not children:
            return None
        kept = [k for k in (keep(c) for c in children) if k is not None]
        if children and not kept:
            return None
        node["children"] = kept
        return node

    return [k for k in (keep(n) for n in database) if k is not None]


def get_raw_metrics(file):
    """(gf, inclusive_metrics, exclusive_metrics, device_info) from a profile.

    ``file`` is an open file (Triton 3.6's form) or the already parsed ``[root, device_map]``
    list (Triton 3.9's form, where the argument is named ``database``); a list is consumed.
    """
    hatchet, _, _ = _libs()
    database = json.load(file) if hasattr(file, "read") else file
    database = _drop_hidden_frames(database)
    device_info = database.pop(1) if len(database) > 1 else {}
    gf = hatchet.GraphFrame.from_literal(database)
    inclusive = gf.show_metric_columns()
    exclusive = [c for c in gf.dataframe.columns if c not in inclusive]
    return gf, inclusive, exclusive, device_info


def _devices(device_info):
    for device_type, devices in device_info.items():
        for device_id, device in devices.items():
            yield device_type, device_id, device


def get_min_time_flops(df, device_info):
    """Per frame: the seconds its flops would take at the device's peak, summed over widths."""
    _, pd, _ = _libs()
    out = pd.DataFrame(0.0, index=df.index, columns=["min_time"])
    for device_type, device_id, device in _devices(device_info):
        rows = df["device_id"] == device_id
        for width in FLOPS_WIDTHS:
            column = f"flops{width}"
            if column not in df.columns:
                continue
            peak = specs.max_flops(device_type, device["arch"], width, device["num_sms"],
                                   device["clock_rate"])
            out.loc[rows, "min_time"] += df[rows][column].fillna(0) / peak
    return out


def get_min_time_bytes(df, device_info):
    """Per frame: the seconds its bytes would take at the device's peak bandwidth."""
    _, pd, _ = _libs()
    out = pd.DataFrame(0.0, index=df.index, columns=["min_time"])
    for device_type, device_id, device in _devices(device_info):
        rows = df["device_id"] == device_id
        peak = specs.max_bps(device_type, device["arch"], device["bus_width"],
                             device["memory_clock_rate"])
        out.loc[rows, "min_time"] += df[rows]["bytes"] / peak
    return out


_SECONDS = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_RATE_SCALE = {"": 1, "g": 1e9, "t": 1e12}


def _time_request(metric):
    """(source metric, is_average) for time/cpu_time/avg_time/avg_cpu_time in s..ns."""
    stem, _, unit = metric.partition("/")
    if unit not in _SECONDS:
        return None
    average = stem.startswith("avg_")
    base = stem[4:] if average else stem
    return (base, average) if base in ("time", "cpu_time") else None


def _rate_request(metric):
    """(source metric, scale) for byte/s, gbyte/s, tbyte/s, [g|t]flop[width]/s."""
    if not metric.endswith("/s"):
        return None
    stem = metric[:-2]
    for prefix, scale in _RATE_SCALE.items():
        if stem == f"{prefix}byte":
            return "bytes", scale
        for width in ("",) + tuple(str(w) for w in FLOPS_WIDTHS):
            if stem == f"{prefix}flop{width}":
                return f"flops{width}", scale
    return None


def derive_metrics(gf, metrics, inclusive_metrics, exclusive_metrics, device_info):
    """Adds the derived columns of ``metrics`` to ``gf`` and returns the column names to show."""
    _, _, np = _libs()
    df = gf.dataframe

    def seconds(source, average):
        column = match_available_metrics(source, inclusive_metrics, exclusive_metrics)[0]
        unit = column.split("(")[1].split(")")[0]  # "time (ns) (inc)" -> "ns"
        return df[column] * _SECONDS[unit]

    names = []
    for metric in metrics:
        timed = _time_request(metric)
        rate = _rate_request(metric)
        if metric == "util":
            busy = get_min_time_flops(df, device_info)["min_time"].combine(
                get_min_time_bytes(df, device_info)["min_time"], max)
            df["util"] = busy / seconds("time", False)
            df.loc[df["device_id"].isna(), "util"] = np.nan  # scopes have no peak
            names.append("util")
        elif rate is not None:
            source, scale = rate
            column = match_available_metrics(source, inclusive_metrics, exclusive_metrics)[0]
            df[f"{metric} (inc)"] = df[column] / seconds("time", False) / scale
            names.append(f"{metric} (inc)")
        elif timed is not None:
            source, average = timed
            value = seconds(source, average)
            if average:
                value = value / df["count (inc)"]
            df[f"{metric} (inc)"] = value / _SECONDS[metric.split("/")[1]]
            names.append(f"{metric} (inc)")
        elif "/" in metric:
            source, unit = metric.split("/")[:2]
            if unit != "%":
                raise ValueError(f"Unsupported unit {unit}")
            column = match_available_metrics(source, inclusive_metrics, exclusive_metrics)[0]
            inclusive = "(inc)" in column
            total = df[column].iloc[0] if inclusive else df[column].sum()
            name = metric + (" (inc)" if inclusive else "")
            df[name] = df[column] / total * 100.0
            names.append(name)
        else:
            names.append(match_available_metrics(metric, inclusive_metrics, exclusive_metrics)[0])
    for name in names:
        (gf.inc_metrics if name.endswith("(inc)") else gf.exc_metrics).append(name)
    return names


def format_frames(gf, format):
    """Shortens frame names in place: file_function_line, function_line or file_function."""
    shorten = {
        "file_function_line": lambda x: x.split("/")[-1],
        "function_line": lambda x: x.split(":")[-1],
        "file_function":
        lambda x: x.split("/")[-1].split(":")[0] + "@" + x.split("@")[-1].split(":")[0],
    }.get(format)
    if shorten is not None:
        gf.dataframe["name"] = gf.dataframe["name"].apply(shorten)
    return gf


def filter_frames(gf, include=None, exclude=None, threshold=None, metric=None):
    """Keeps paths through frames matching ``include``, drops subtrees matching ``exclude``,
    and drops frames whose ``metric`` is below ``threshold`` (hatchet queries, squashed)."""
    if include:
        gf = gf.filter(f'MATCH ("*")->(".", p)->("*")\nWHERE p."name" =~ "{include}"',
                       squash=True)
    if exclude:
        from hatchet.query import NegationQuery

        matches = f'MATCH (".", p)->("*")\nWHERE p."name" =~ "{exclude}"'
        gf = gf.filter(NegationQuery(matches), squash=True)
    if threshold:
        gf = gf.filter(["*", {metric: f">= {threshold}"}], squash=True)
    return gf


def print_tree(gf, metrics, depth=100, format=None, print_sorted=False):
    """Prints the tree with ``metrics`` (and, if asked, frames sorted by the first one)."""
    _, _, np = _libs()
    gf = format_frames(gf, format)
    print(gf.tree(metric_column=metrics, expand_name=True, depth=depth, render_header=False))
    if print_sorted:
        print("Sorted kernels by metric " + metrics[0])
        ordered = gf.dataframe.sort_values(by=[metrics[0]], ascending=False)
        for row in range(1, len(ordered)):  # row 0 is the root
            name = ordered.iloc[row]["name"]
            name = name[:100] + "..." if len(name) > 100 else name
            print("{:105} {:.4}".format(name, ordered.iloc[row][metrics[0]]))
    emit_warnings(gf, metrics)


def emit_warnings(gf, metrics):
    """Warns (on stdout, as triton.profiler) when a shown byte count is negative (an overflow)."""
    _, _, np = _libs()
    if "bytes (inc)" in metrics and np.nanmin(gf.dataframe["bytes (inc)"].values) < 0:
        print("Warning: Negative byte values detected, this is usually the result of a "
              "datatype overflow\n")


def read(filename):
    """(gf, inclusive_metrics, exclusive_metrics, device_info), inclusive columns filled."""
    with open(filename, "r") as f:
        gf, inclusive, exclusive, device_info = get_raw_metrics(f)
    assert inclusive + exclusive, "No metrics found in the input file"
    gf.update_inclusive_columns()
    return gf, inclusive, exclusive, device_info


def parse(metrics, filename, include=None, exclude=None, threshold=None):
    """Reads, derives ``metrics`` and filters (the threshold applies to the first): (gf, names)."""
    gf, inclusive, exclusive, device_info = read(filename)
    names = derive_metrics(gf, metrics, inclusive, exclusive, device_info)
    return filter_frames(gf, include, exclude, threshold, names[0]), names


def apply_diff_profile(gf, derived_metrics, diff_file, metrics, include, exclude, threshold):
    """``gf`` minus the profile in ``diff_file``, both restricted to ``derived_metrics``."""
    other, _ = parse(metrics, diff_file, include, exclude, threshold)
    inclusive = [m for m in derived_metrics if m.endswith("(inc)")]
    exclusive = [m for m in derived_metrics if not m.endswith("(inc)")]
    for frame in (gf, other):
        frame.inc_metrics = list(inclusive)
        frame.exc_metrics = list(exclusive)
    return gf.sub(other)


def show_metrics(file_name):
    """Prints the raw metrics of a profile, without units, as ``proton-viewer --list`` does."""
    with open(file_name, "r") as f:
        _, inclusive, exclusive, _ = get_raw_metrics(f)
    for title, names in (("inclusive", inclusive), ("exclusive", exclusive)):
        print(f"Available {title} metrics:")
        for name in names:
            print(f"- {name.split('(')[0].strip().lower()}")


if __name__ == "__main__":
    sys.exit(main())
