"""Kernel-side regions (``import proton.language as pl``), as ``triton.profiler.language``.

Inside a ``@triton.jit`` kernel::

    pl.enter_scope("load")      # or: with pl.scope("load"):
    ...
    pl.exit_scope("load")

Each call emits Triton's ``proton.record start|end "name"`` op while an instrumentation
session is on, and nothing otherwise (a kernel compiled with no session carries no record).
Only Gluon kernels are instrumented by default, as in Triton: call
``pl.enable_semantic("triton")`` for ``@triton.jit`` kernels.

Triton 3.8+ also has asynchronous events (``allocate_event``, ``start_event``, ``end_event``,
``record_event``); with an older Triton they raise an error naming the installed version.
This module needs Triton; ``proton`` itself imports without it.
"""

import triton
from triton.language import core as tl
from triton.language.core import builtin
from triton._C.libtriton import proton as _tp

from . import _instr_state

_ALL_SEMANTICS = {}
try:
    from triton.language.semantic import TritonSemantic

    _ALL_SEMANTICS["triton"] = TritonSemantic
except ImportError:  # pragma: no cover - very old Triton
    pass
try:
    from triton.experimental.gluon.language._semantic import GluonSemantic

    _ALL_SEMANTICS["gluon"] = GluonSemantic
except ImportError:  # pragma: no cover
    pass

# Gluon only by default, as triton.profiler: Triton's own rewrites (pipelining, reordering)
# can move ops across plain Triton regions, so instrumenting them is opt-in.
_SEMANTICS = {_ALL_SEMANTICS["gluon"]} if "gluon" in _ALL_SEMANTICS else set()

_HAS_EVENTS = hasattr(_tp, "create_proton_allocate_event") and hasattr(_tp, "create_proton_event")


def enable_semantic(semantic_name: str) -> None:
    if semantic_name not in _ALL_SEMANTICS:
        raise ValueError(f"unknown semantic {semantic_name!r} (valid: {', '.join(_ALL_SEMANTICS)})")
    _SEMANTICS.add(_ALL_SEMANTICS[semantic_name])


def disable_semantic(semantic_name: str) -> None:
    if semantic_name not in _ALL_SEMANTICS:
        raise ValueError(f"unknown semantic {semantic_name!r} (valid: {', '.join(_ALL_SEMANTICS)})")
    _SEMANTICS.discard(_ALL_SEMANTICS[semantic_name])


def _check_supported_semantic(semantic):
    if not isinstance(semantic, tuple(_SEMANTICS)):
        raise TypeError(f"Unsupported semantic type: {type(semantic)}. Supported semantics are: "
                        f"{_SEMANTICS} (call proton.language.enable_semantic('triton') for "
                        f"@triton.jit kernels)")


def record(is_start: tl.constexpr, scope_name: tl.constexpr, semantic):
    if not _instr_state.on:
        return None
    _check_supported_semantic(semantic)
    is_start = tl._unwrap_if_constexpr(is_start)
    scope_name = tl._unwrap_if_constexpr(scope_name)
    handle = _tp.create_proton_record(semantic.builder, is_start, scope_name)
    # 3.6 returns the op's value; 3.9 returns nothing.
    return tl.tensor(handle, tl.void) if handle is not None else None


@builtin
def enter_scope(name: tl.constexpr, _semantic=None):
    record(is_start=True, scope_name=name, semantic=_semantic)


@builtin
def exit_scope(name: tl.constexpr, _semantic=None):
    record(is_start=False, scope_name=name, semantic=_semantic)


class scope:
    """``with pl.scope("name"):`` inside a kernel: enter_scope / exit_scope around the block."""

    def __init__(self, name: str, _semantic=None):
        self.name = name
        self.semantic = _semantic

    def __enter__(self):
        enter_scope(self.name, _semantic=self.semantic)

    def __exit__(self, exc_type, exc_value, traceback):
        exit_scope(self.name, _semantic=self.semantic)


def _no_events():
    raise NotImplementedError(
        f"proton.language events (allocate_event/start_event/end_event/record_event) need "
        f"Triton 3.8 or newer; the installed Triton is {triton.__version__}, whose proton "
        f"dialect has no event ops. Use enter_scope/exit_scope instead.")


if _HAS_EVENTS:
    from triton.profiler.language import Event, allocate_event as _t_allocate  # noqa: F401

    @builtin
    def allocate_event(name: tl.constexpr, _semantic=None):
        if not _instr_state.on:
            return Event(handle=None)
        _check_supported_semantic(_semantic)
        name = tl._unwrap_if_constexpr(name)
        return Event(_tp.create_proton_allocate_event(_semantic.builder, name))

    def record_event(event, is_start: tl.constexpr, _semantic=None):
        if not _instr_state.on:
            return
        _check_supported_semantic(_semantic)
        if not isinstance(event, Event):
            raise TypeError("expected an event returned by allocate_event")
        _tp.create_proton_event(_semantic.builder, tl._unwrap_if_constexpr(is_start), event.handle)

    @builtin
    def start_event(event, _semantic=None):
        record_event(event, is_start=True, _semantic=_semantic)

    @builtin
    def end_event(event, _semantic=None):
        record_event(event, is_start=False, _semantic=_semantic)

else:

    class Event:
        """Triton 3.8+'s opaque event type; with this Triton, making one raises."""

        def __init__(self, handle=None):
            _no_events()

    @builtin
    def allocate_event(name: tl.constexpr, _semantic=None):
        _no_events()

    def record_event(event, is_start: tl.constexpr, _semantic=None):
        _no_events()

    @builtin
    def start_event(event, _semantic=None):
        _no_events()

    @builtin
    def end_event(event, _semantic=None):
        _no_events()
