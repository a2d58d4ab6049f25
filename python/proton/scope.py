"""Scopes: named regions whose kernels and metrics are grouped under one frame."""

import contextlib
import threading
import time
from collections.abc import Mapping
from typing import Optional, Sequence, Union

from . import _args, _proton

# The metric values triton.profiler's annotations name (ours also take strings and tensors).
MetricValueType = Union[float, int, Sequence[float], Sequence[int]]

_enter = _proton.enter_scope
_exit = _proton.exit_scope
_add_metrics = _proton.add_metrics
_local = threading.local()


def _enter_named(where, name):
    try:
        return _enter(name)
    except TypeError:
        _args.refused_name(where, name)
        raise


def _add_metrics_or_leave(where, name, metrics):
    # A rejected metric must not leave the scope open: the caller's `with` never runs __exit__.
    try:
        _add_metrics(metrics)
    except TypeError:
        if type(metrics) is dict:  # a value the engine refused: its message names the metric
            _exit(name)
            raise
        try:
            _add_metrics(_args.refused_metrics(where, metrics))
        except BaseException:
            _exit(name)
            raise
    except BaseException:
        _exit(name)
        raise


class scope(contextlib.ContextDecorator):
    """A named region, as a context manager or a decorator.

    ``metrics`` (name -> int, float or list of them) are added to the scope's frame on entry.
    Names ending ``(exc)`` are exclusive, ``(pty)`` overwrite, others are summed.

    A ``name`` that is not a str, or ``metrics`` that are not a dict (or other mapping), is a
    one-line ``TypeError`` naming the argument, raised on entry, with or without a session.
    Empty or falsy ``metrics`` add nothing, as in triton.profiler.
    """

    __slots__ = ("name", "metrics")

    def __init__(self, name: str, metrics: Optional[dict] = None) -> None:
        self.name = name
        self.metrics = metrics

    def __enter__(self):
        try:  # no check up front: a wrong type costs nothing until the engine refuses it
            _enter(self.name)
        except TypeError:
            _args.refused_name("proton.scope", self.name)
            raise
        if self.metrics:
            _add_metrics_or_leave("proton.scope", self.name, self.metrics)
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _exit(self.name)


class cpu_timed_scope(scope):
    """A scope that also records its wall-clock CPU time as ``cpu_time (ns)``, and one
    ``cpu_calls`` per run so ``proton-viewer -m avg_cpu_time/us`` gives the time per run.

    Both are exclusive, as triton.profiler writes them (``"cpu_time (ns)(exc)"``): a node's time
    already contains its nested timed scopes' time, so no viewer adds theirs to it again.
    ``cpu_time`` in ``metrics`` is refused (``ValueError``), as in triton.profiler.
    """

    __slots__ = ("_start",)

    def __init__(self, name: str, metrics: Optional[dict] = None) -> None:
        if isinstance(metrics, Mapping) and "cpu_time" in metrics:  # others: refused on entry
            raise ValueError("The metric name 'cpu_time' is reserved.")
        super().__init__(name, metrics)

    def __enter__(self):
        super().__enter__()
        self._start = time.perf_counter_ns()
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _add_metrics({"cpu_time (ns)(exc)": time.perf_counter_ns() - self._start, "cpu_calls(exc)": 1})
        _exit(self.name)


class ScopeMismatchError(ValueError, RuntimeError):
    """exit_scope(name) named another scope than the innermost one open on this thread.

    A ValueError as in triton.profiler (and a RuntimeError, as Proton raised before).
    """


def enter_scope(name: str, *, triton_op: bool = False, metrics: Optional[dict] = None) -> int:
    """Opens a scope on this thread; close it with :func:`exit_scope`. Returns its id.

    ``name`` must be a str and ``metrics`` a dict (or other mapping): else ``TypeError``.
    """
    scope_id = _enter_named("proton.enter_scope", name)
    stack = getattr(_local, "names", None)
    if stack is None:
        stack = _local.names = []
    if metrics:
        _add_metrics_or_leave("proton.enter_scope", name, metrics)
    stack.append(name)
    return scope_id


def exit_scope(name: Optional[str] = None, *, metrics: Optional[dict] = None,
               triton_op: bool = False) -> int:
    """Closes the innermost scope opened by :func:`enter_scope` on this thread.

    ``metrics`` are added to the scope before it closes. ``name`` (as in triton.profiler)
    checks that it is the scope being closed: a mismatch raises ``ScopeMismatchError`` (a
    ValueError) naming both scopes and closes nothing. RuntimeError when no scope is open.
    """
    if isinstance(name, bool):  # an old positional triton_op argument
        name = None
    stack = getattr(_local, "names", None)
    if not stack:
        raise RuntimeError("exit_scope: no scope opened with enter_scope is open on this thread")
    innermost = _proton.innermost_scope()
    expected = innermost if innermost is not None else stack[-1]
    if name is not None and name != expected:
        raise ScopeMismatchError(
            f"Scope name mismatch: exit_scope('{name}') but the innermost open scope of this "
            f"thread is '{expected}'")
    if innermost is not None and innermost != stack[-1]:
        raise ScopeMismatchError(
            f"Scope name mismatch: exit_scope() would close '{stack[-1]}' (opened by "
            f"enter_scope) but the innermost open scope of this thread is '{innermost}'")
    if metrics:
        try:
            _add_metrics(metrics)
        except TypeError:
            if type(metrics) is dict:
                raise
            _add_metrics(_args.refused_metrics("proton.exit_scope", metrics))
    _exit(stack[-1])
    stack.pop()
    return 0
