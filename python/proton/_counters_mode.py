"""``proton.mode.Counters``: hardware counters per kernel (and counter tracks on a trace).

A mode object is a readable way to spell the mode string: ``str(Counters(...))`` is what
``proton.start(mode=...)`` receives, e.g. ``"counters:metrics=dram__bytes_read.sum"``.
See docs/counters.md.
"""

from typing import Iterable, Optional

from . import _proton


class Counters:
    """Hardware counters on each kernel node of the call tree.

    Args:
        metrics: CUPTI metric names (``None``: the default set — DRAM bytes read and written,
            achieved occupancy, SM instruction issue %, tensor-pipe utilisation %, L2 sectors
            for the L2 hit rate, and the GPC clock).
            An unknown name makes ``proton.start`` raise, listing this GPU's metrics.
        range: ``None`` (default): PM sampling, each sample's counts split over the kernels
            that ran in it — no synchronisation, a few percent of cost. ``"user"`` or
            ``"auto"``: exact values per launch from CUPTI's Range Profiler instead, at about
            1 ms per launch (``"user"``: a range around each launch, kernels running
            concurrently on other streams count into it) or a synchronisation after every
            launch (``"auto"``). The cost is said at start.
        replay: allow metric sets that need several passes (Range Profiler kernel replay:
            every kernel runs once per pass; implies ``range="auto"``). Off by default.
        sampling: ``"pm"`` (default), ``"range"`` (same as ``range="user"``) or ``"both"``
            (Range-Profiler values per kernel and PM sampling beside them, its values named
            ``pm:<metric>``).
        interval_us: PM sampling period in microseconds.
    """

    def __init__(self, metrics: Optional[Iterable[str]] = None, *, range: Optional[str] = None,
                 replay: bool = False, sampling: Optional[str] = None,
                 interval_us: Optional[int] = None):
        if isinstance(metrics, str):
            metrics = [m for m in metrics.split(",") if m]
        self.metrics = None if metrics is None else [str(m) for m in metrics]
        if self.metrics is not None and not self.metrics:
            raise ValueError("Counters(metrics=[]): give at least one metric, or None for the "
                             "default set")
        for m in self.metrics or []:
            if not m or any(c in m for c in ",: "):  # would change what the string says
                raise ValueError(f"Counters: bad metric name {m!r}")
        self.range = range
        self.replay = bool(replay)
        self.sampling = sampling
        self.interval_us = None if interval_us is None else int(interval_us)
        # The native mode grammar checks the options; canonical() is what a session runs.
        self._canonical = _proton.parse_mode(str(self))["canonical"]

    def __str__(self) -> str:
        parts = ["counters"]
        if self.metrics is not None:
            parts.append("metrics=" + ",".join(self.metrics))
        if self.range is not None:
            parts.append("range=" + self.range)
        if self.replay:
            parts.append("replay")
        if self.sampling is not None:
            parts.append("sampling=" + self.sampling)
        if self.interval_us is not None:
            parts.append(f"interval_us={self.interval_us}")
        return ":".join(parts)

    def __repr__(self) -> str:
        return f"Counters({str(self)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Counters) and self._canonical == other._canonical

    def __hash__(self) -> int:
        return hash(self._canonical)
