"""Backend modes, as ``triton.profiler.mode`` spells them.

Importable without Triton: the choices are our own enums, mapped to Triton's
``triton._C.libtriton.proton`` enums only when the instrumentation hook installs its compiler
passes (``to_triton``). Each mode object renders (``str()``) to the one mode grammar of the
native module, and ``parse`` reads a mode string through that grammar
(``"default:granularity=warp:buffer_size=4096:optimizations=clock32"``,
``"pcsampling:interval=N"``, ``"counters:..."``, the paper's short form
``"mma_cycle::[warpgroup::circular::all]"``); anything else raises ``ValueError`` naming the
valid parts.
"""

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import List, Optional, Union

from . import _proton


class _Choice(Enum):
    """An option value; ``str()`` gives the spelling Triton prints (``GRANULARITY.WARP``)."""

    def __str__(self):
        return f"{type(self).__name__}.{self.name}"

    @classmethod
    def parse(cls, value, what):
        if isinstance(value, cls):
            return value
        if hasattr(value, "name") and type(value).__name__ == cls.__name__:  # Triton's enum
            return cls[value.name]
        text = str(value).strip().lower()
        if "." in text:  # "GRANULARITY.WARP", as str() of Triton's enum prints it
            text = text.split(".", 1)[1]
        for member in cls:
            if member.value == text:
                return member
        raise ValueError(f"unknown {what} {value!r} (valid: {', '.join(m.value for m in cls)})")


class METRIC_TYPE(_Choice):
    CYCLE = "cycle"


class GRANULARITY(_Choice):
    CTA = "cta"
    WARP = "warp"
    WARP_2 = "warp_2"
    WARP_4 = "warp_4"
    WARP_8 = "warp_8"
    WARP_GROUP = "warp_group"
    WARP_GROUP_2 = "warp_group_2"
    WARP_GROUP_4 = "warp_group_4"
    WARP_GROUP_8 = "warp_group_8"


class BUFFER_STRATEGY(_Choice):
    CIRCULAR = "circular"
    FLUSH = "flush"


class BUFFER_TYPE(_Choice):
    SHARED = "shared"
    GLOBAL = "global"


class SAMPLING_STRATEGY(_Choice):
    NONE = "none"
    SELECTIVE = "selective"


class Optimize(Enum):
    TIMESHIFT = "time_shift"
    SCHED_STORES = "sched_stores"
    SCHED_BARRIERS = "sched_barriers"
    CLOCK32 = "clock32"

    def __str__(self):
        return self.value


# Lookup tables with Triton's names (``triton.profiler.mode.granularities`` etc.).
metric_types = {m.value: m for m in METRIC_TYPE}
granularities = {m.value: m for m in GRANULARITY}
buffer_strategies = {m.value: m for m in BUFFER_STRATEGY}
buffer_types = {m.value: m for m in BUFFER_TYPE}
sampling_strategies = {m.value: m for m in SAMPLING_STRATEGY}
optimizations = {m.value: m for m in Optimize}

# Our defaults where the caller names none: on an H100 a region per loop iteration cost 1.30x
# with Triton's defaults and 1.11x with a 32-bit clock and scheduled stores (same kernel, same run).
# A 32-bit clock wraps after ~2 s at 1.98 GHz; a region is far shorter, and the decoder
# handles one wrap between a region's start and end.
DEFAULT_OPTIMIZATIONS = (Optimize.CLOCK32, Optimize.SCHED_STORES)


def _parse_optimizations(value) -> List[Optimize]:
    if value is None:
        return list(DEFAULT_OPTIMIZATIONS)
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    else:
        items = list(value)
    out = []
    for item in items:
        if isinstance(item, Optimize):
            out.append(item)
        elif str(item) in optimizations:
            out.append(optimizations[str(item)])
        else:
            raise ValueError(f"unknown optimization {item!r} (valid: {', '.join(optimizations)})")
    return out


@dataclass(frozen=True)
class BaseMode:
    name: str


# The grammar's own defaults for what PCSampling() leaves out.
_PC_DEFAULTS = _proton.parse_mode("pcsampling")


@dataclass(frozen=True)
class PCSampling(BaseMode):
    """``pcsampling[:interval=N]...``; ``interval=None`` lets Proton choose the period."""

    name: str = field(default="pcsampling", init=False)
    interval: Optional[int] = 1000
    buffer_mb: int = 0  # 0: sized from the period
    sleep_ms: int = _PC_DEFAULTS["sleep_ms"]
    drain_ms: int = _PC_DEFAULTS["drain_ms"]
    adapt: bool = True

    def __post_init__(self):
        if self.interval is not None and (not isinstance(self.interval, int) or self.interval <= 0):
            raise ValueError("Interval must be a positive integer.")
        _proton.parse_mode(str(self))  # the grammar checks every option

    def __str__(self):
        parts = [self.name]
        if self.interval is not None:
            parts.append(f"interval={self.interval}")
        if self.buffer_mb:
            parts.append(f"buffer_mb={self.buffer_mb}")
        if self.sleep_ms != _PC_DEFAULTS["sleep_ms"]:
            parts.append(f"sleep_ms={self.sleep_ms}")
        if self.drain_ms != _PC_DEFAULTS["drain_ms"]:
            parts.append(f"drain_ms={self.drain_ms}")
        if not self.adapt:
            parts.append("adapt=0")
        return ":".join(parts)


@dataclass(frozen=True)
class InstrumentationMode(BaseMode):
    """Options of Triton's instrumentation passes (``add_convert_proton_to_protongpu``).

    ``optimizations=None`` (the default) means ``clock32,sched_stores``: the cheapest options
    that stay correct; pass ``""`` or ``[]`` for Triton's own default (none). ``buffer_type``
    defaults to ``global`` (Triton's: ``shared``): records go straight to the profile scratch,
    take no shared memory, and leave a wgmma loop pipelined (docs/instrumentation.md, Modes).
    """

    metric_type: Union[METRIC_TYPE, str] = METRIC_TYPE.CYCLE
    sampling_strategy: Union[SAMPLING_STRATEGY, str] = SAMPLING_STRATEGY.NONE
    sampling_options: str = ""
    granularity: Union[GRANULARITY, str] = GRANULARITY.WARP
    buffer_strategy: Union[BUFFER_STRATEGY, str] = BUFFER_STRATEGY.CIRCULAR
    buffer_type: Union[BUFFER_TYPE, str] = BUFFER_TYPE.GLOBAL
    buffer_size: int = 0
    optimizations: Union[List[Optimize], str, None] = None

    def __post_init__(self):
        for name, cls in (("metric_type", METRIC_TYPE), ("sampling_strategy", SAMPLING_STRATEGY),
                          ("granularity", GRANULARITY), ("buffer_strategy", BUFFER_STRATEGY),
                          ("buffer_type", BUFFER_TYPE)):
            object.__setattr__(self, name, cls.parse(getattr(self, name), name))
        object.__setattr__(self, "optimizations", _parse_optimizations(self.optimizations))
        try:
            size = int(self.buffer_size)
        except (TypeError, ValueError):
            raise ValueError(f"buffer_size must be an integer, not {self.buffer_size!r}") from None
        if size < 0 or (size & (size - 1)) != 0:
            raise ValueError(f"buffer_size must be 0 (default) or a power of two, not {size}")
        object.__setattr__(self, "buffer_size", size)
        warps = sampled_warps(self.sampling_options)
        if self.sampling_strategy == SAMPLING_STRATEGY.SELECTIVE and not warps:
            raise ValueError("sampling_strategy=selective needs sampling_options, e.g. '0,4'")
        object.__setattr__(self, "sampling_options", ",".join(str(w) for w in warps))

    def __str__(self):
        opts = ",".join(str(o) for o in self.optimizations)
        return (f"{self.name}:metric_type={self.metric_type}:sampling_strategy={self.sampling_strategy}"
                f":sampling_options={self.sampling_options}:granularity={self.granularity}"
                f":buffer_strategy={self.buffer_strategy}:buffer_type={self.buffer_type}"
                f":buffer_size={self.buffer_size}:optimizations={opts}")

    def buffer_bytes(self, num_warps: int) -> int:
        """The per-CTA buffer size handed to Triton's passes for a kernel of `num_warps`.

        An explicit buffer_size is kept; 0 with a shared buffer lets Triton size it from the
        free shared memory. 0 with a global buffer gives GLOBAL_BYTES_PER_WARP to each profiled
        warp (Triton's own global default, 16 KB a warp, reserved 8.7 MB of scratch per launch
        of a 132-CTA kernel: the pool then held seven launches and the launch loop waited)."""
        if self.buffer_size or self.buffer_type != BUFFER_TYPE.GLOBAL:
            return self.buffer_size
        compiled = self.compiled()
        units = (len(sampled_warps(compiled.sampling_options))
                 if compiled.sampling_strategy == SAMPLING_STRATEGY.SELECTIVE else num_warps)
        want = GLOBAL_BYTES_PER_WARP * max(1, units)
        return 1 << (want - 1).bit_length()

    def group_warps(self) -> int:
        """Warps one recorded unit stands for: 1 (warp), N (warp_N), 4 (warp_group), 4N
        (warp_group_N); CTA_LANE for cta."""
        return _GROUP_WARPS[self.granularity]

    def compiled(self) -> "InstrumentationMode":
        """The options handed to Triton's passes. They implement warp granularity only, so a
        coarser granularity becomes warp granularity with selective sampling of each group's
        first warp (every group_warps-th warp, up to MAX_WARPS): the same records a per-group
        lowering would write, at a fraction of the per-warp cost."""
        if self.granularity == GRANULARITY.WARP:
            return self
        step = MAX_WARPS if self.granularity == GRANULARITY.CTA else self.group_warps()
        return replace(self, granularity=GRANULARITY.WARP,
                       sampling_strategy=SAMPLING_STRATEGY.SELECTIVE,
                       sampling_options=",".join(str(w) for w in range(0, MAX_WARPS, step)))

    def to_triton(self):
        """The same options as Triton's enums (needs Triton; called when compiling)."""
        from triton._C.libtriton import proton as tp

        return dict(
            metric_type=getattr(tp.METRIC_TYPE, self.metric_type.name),
            sampling_strategy=getattr(tp.SAMPLING_STRATEGY, self.sampling_strategy.name),
            granularity=getattr(tp.GRANULARITY, self.granularity.name),
            buffer_strategy=getattr(tp.BUFFER_STRATEGY, self.buffer_strategy.name),
            buffer_type=getattr(tp.BUFFER_TYPE, self.buffer_type.name),
        )


# A CTA has at most 32 warps (1,024 threads); cta granularity records warp 0 alone.
MAX_WARPS = 32
# Each profiled warp's share of a global buffer by default: 256 events (128 regions) before it
# wraps, as Triton's shared default gives a 4-warp kernel.
GLOBAL_BYTES_PER_WARP = 2048
CTA_LANE = 0xFFFF  # group_warps of granularity cta (kWholeCta in src/data/region_metrics.h)
_GROUP_WARPS = {GRANULARITY.CTA: CTA_LANE, GRANULARITY.WARP: 1, GRANULARITY.WARP_2: 2,
                GRANULARITY.WARP_4: 4, GRANULARITY.WARP_8: 8, GRANULARITY.WARP_GROUP: 4,
                GRANULARITY.WARP_GROUP_2: 8, GRANULARITY.WARP_GROUP_4: 16,
                GRANULARITY.WARP_GROUP_8: 32}


@dataclass(frozen=True)
class Default(InstrumentationMode):
    name: str = field(default="default", init=False)


@dataclass(frozen=True)
class MMA(InstrumentationMode):
    name: str = field(default="mma", init=False)


def sampled_warps(options: str) -> List[int]:
    """``"0, 4,8"`` -> ``[0, 4, 8]``; raises ValueError on anything but warp ids."""
    out = []
    for part in str(options or "").split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit():
            raise ValueError(f"sampling_options must be warp ids like '0,4', not {options!r}")
        out.append(int(part))
    return sorted(set(out))


_MODES = {"default": Default, "mma": MMA}


def _from_grammar(text: str):
    """The mode object of a mode string, as the native grammar reads it."""
    d = _proton.parse_mode(text)
    kind = d["kind"]
    if kind == "instrumentation":
        return _MODES[d["name"]](
            metric_type=d["metric_type"], sampling_strategy=d["sampling_strategy"],
            sampling_options=d["sampling_options"], granularity=d["granularity"],
            buffer_strategy=d["buffer_strategy"], buffer_type=d["buffer_type"],
            buffer_size=d["buffer_size"], optimizations=d["optimizations"])
    if kind == "pcsampling":
        return PCSampling(interval=d["interval"] or None, buffer_mb=d["buffer_mb"],
                          sleep_ms=d["sleep_ms"], drain_ms=d["drain_ms"], adapt=d["adapt"])
    if kind == "counters":
        return Counters(d["metrics"], range=d["range"], replay=d["replay"],
                        sampling=d["sampling"], interval_us=d["interval_us"])
    return text  # graph, periodic_flushing: the string is the whole mode


def parse(mode_obj):
    """A mode object from what ``proton.start(mode=...)`` accepts (None -> Default()).

    Instrumentation modes give ``Default``/``MMA``, ``"pcsampling..."`` a ``PCSampling``,
    ``"counters..."`` a ``Counters``; ``"graph"`` and ``"periodic_flushing..."`` stay strings.
    """
    if isinstance(mode_obj, (InstrumentationMode, PCSampling, Counters)):
        return mode_obj
    if mode_obj is None or str(mode_obj).strip() == "":
        return Default()
    return _from_grammar(str(mode_obj).strip())


# Hardware counters (mode="counters"): docs/counters.md.
from ._counters_mode import Counters  # noqa: E402, F401  (proton.mode.Counters)
