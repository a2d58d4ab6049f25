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
    """Ranges, decode batches and time spent decoding on launching threads (ns) of the running
    (or last) per-kernel counters run."""
    return dict(_proton._counters_stats())
