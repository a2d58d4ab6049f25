"""Hardware counters: what this GPU offers, and what the last counters run cost.

``proton.start(mode="counters")`` (or ``mode=proton.mode.Counters(...)``) collects them; see
docs/counters.md.
"""

from typing import Dict, List, Tuple

from . import _proton
from ._counters_mode import Counters  # noqa: F401  (re-exported)


def list_metrics(pm: bool = False) -> Tuple[str, List[str]]:
    """``(chip, base metric names)`` of GPU 0 for per-kernel counters (``pm=True``: for PM
    sampling). Append a rollup to use one: ``.sum``, ``.avg``, ``.max``,
    ``.avg.pct_of_peak_sustained_elapsed``... Raises RuntimeError without a usable GPU."""
    chip, names = _proton._counters_list_metrics(pm)
    return chip, list(names)


def stats() -> Dict[str, int]:
    """Statistics of the running (or last) counters run: ``pm_*`` for PM sampling (samples,
    decodes, hardware-buffer overflows, errors, our thread's decode and evaluate time in ns, the
    hardware buffer and counter-data image in bytes, the interval in ns); the others for the
    Range Profiler (ranges, decode batches, time spent decoding on launching threads in ns)."""
    return dict(_proton._counters_stats())
