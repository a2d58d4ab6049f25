"""Sessions: start, activate, deactivate, finalize, and the ``profile`` decorator."""

import atexit
import functools
import os
import warnings
from typing import Optional

from . import _args, _exit, _flags, _knobs, _proton, _ranks, hooks, metric
from .hooks.hook import Hook

# Interpreter teardown frees the thread states the Python-context walker reads.
atexit.register(_proton._python_context_shutdown)

DEFAULT_PROFILE_NAME = "proton"
# backend= values start() takes (None picks this machine's GPU backend): the engine's registry.
BACKENDS = tuple(_proton.backend_names())


class StartError(ValueError, RuntimeError):
    """start() refused a value of its arguments (backend, context, data, mode).

    A ValueError, and a RuntimeError as triton.profiler raises for the same values ("Unknown
    profiler: ...", "Unknown context source: ...", "Unknown data: ..."), so either catches it.
    """


def _check_start_args(name, context, data, backend) -> str:
    """Fails before any session exists; returns the output path without extension."""
    if name is None:
        name = DEFAULT_PROFILE_NAME
    elif isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        raise _args.type_error("proton.start", "name", "a str or path (or None)", name)
    if not os.path.basename(name):
        raise ValueError(f"proton.start: name {name!r} names no file: give the output path "
                         "without extension, e.g. 'my_profile' (writes my_profile.hatchet)")
    for argument, value in (("context", context), ("data", data)):
        if value is not None and not isinstance(value, str):
            raise _args.type_error("proton.start", argument, "a str (or None)", value)
    if backend is not None and backend not in BACKENDS:
        raise StartError(f"proton.start: unknown backend {backend!r} (available: "
                           + ", ".join(repr(b) for b in BACKENDS)
                           + "; None picks this machine's)")
    return name


def _library_dirs():
    """Folders where pip-installed CUDA wheels (nvidia-cuda-cupti, triton) may keep libcupti."""
    import site
    import sys

    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = getattr(site, "getusersitepackages", lambda: None)()
    dirs += [user] if user else []
    dirs += [p for p in sys.path if p.endswith("site-packages")]
    return list(dict.fromkeys(dirs))


_proton.set_library_search_paths(_library_dirs())


def start(
    name: Optional[str] = None,
    *,
    context: Optional[str] = "shadow",
    data: Optional[str] = "tree",
    backend: Optional[str] = None,
    mode: Optional[str] = None,
    hook=None,
) -> Optional[int]:
    """Starts a profiling session and returns its id.

    Args:
        name: output path without extension (default ``"proton"`` -> ``proton.hatchet``).
            Starting a name that already has a session reactivates that session.
            Not a str or path: TypeError; one that names no file (``""``, ``"out/"``):
            ValueError.
        context: ``"shadow"`` (scopes and states) or ``"python"`` (Python call paths).
        data: ``"tree"`` (aggregated call tree), ``"trace"`` (timeline, written as a Chrome
            trace) or ``"tree,trace"`` (both from one run). A trace streams to disk; set
            ``PROTON_TRACE_BUDGET_MB`` to keep only its newest N MB instead (a flight
            recorder; what was dropped is reported in the file). See docs/trace.md.
        backend: ``None`` picks the GPU backend of this machine; ``"cupti"`` for NVIDIA;
            ``"instrumentation"`` for Triton's intra-kernel regions. Anything else raises
            ``StartError`` listing these.
        mode: backend-specific mode; ``None`` for kernel timing.
            ``"periodic_flushing[:format=hatchet|hatchet_msgpack]"`` writes each completed
            phase (see ``proton.data.advance_phase``) to ``<name>.part_<N>.<format>``.
            ``"graph"`` records one node per CUDA graph launch (``<cuda graph>`` under the
            launch site) instead of every kernel of the graph: graph-heavy programs at
            near-zero cost. Sessions running together must agree on it. See docs/graphs.md.
        hook: ``None``, ``"triton"`` (attach each Triton kernel's ``launch_metadata``: its
            ``name`` renames the kernel, numbers become metrics) or a ``proton.hooks.Hook``
            instance (called on kernel load/unload and launch while the session is active).
            Any other value is a ValueError.

    Returns the session id: ids count up from 0 and are never reused. Returns None, recording
    nothing, under the ``proton`` command (it owns the session) or when
    ``triton.knobs.proton.disable`` (``TRITON_PROTON_DISABLE=1``) is set.

    Without a usable GPU backend the session records CPU-side scopes and metrics and says
    why once on stderr.
    """
    if _flags.command_line or _knobs.disabled():
        return None
    name = _check_start_args(name, context, data, backend)
    if hook is not None and hook != "triton" and not isinstance(hook, Hook):
        raise ValueError(f"Unsupported hook: {hook!r} (expected None, 'triton' or a "
                         "proton.hooks.Hook instance)")
    if hook is not None:
        hooks._runtime_knobs()  # no Triton: fail before a session exists
    # Tensor-metric accumulators, allocated outside any graph capture and before the session
    # exists, so their zero-fill kernels are never part of the profile.
    metric.preallocate()
    try:
        # The engine checks every argument (an instrumentation mode for backend=
        # "instrumentation" included) and opens what the backend records from.
        session = _proton.start(
            _ranks.session_name(name),
            "shadow" if context is None else context,
            "tree" if data is None else data,
            "" if backend is None else backend,
            "" if mode is None else str(mode),
            **_knobs.start_args(),
        )
    except ValueError as e:  # an unknown context, data or mode, a bad PROTON_* value: StartError
        raise StartError(str(e)) from None
    try:
        hooks.instrumentation.attach(session)  # Triton's compiler hooks, if the session needs them
    except Exception:
        _proton.finalize(session, "")
        raise
    hooks.register(session, hook)
    hooks.compiled.install()  # each compiled kernel's facts, once per load (hooks/compiled.py)
    _exit.started(session)  # exit, signals and fork write the profile: see docs/durability.md
    return session


def activate(session: Optional[int] = None) -> None:
    """Resumes recording for ``session`` (all sessions when None).

    Without an id, an always-on window is left as its controller has it (docs/always-on.md),
    as ``finalize()`` leaves it."""
    if session is None:
        _proton.activate_all(windows=False)
    else:
        _proton.activate(session)
    hooks.HookManager.activate(session)


def deactivate(session: Optional[int] = None, flushing: bool = False) -> None:
    """Stops recording for ``session`` (all when None); its data stays in memory.

    With ``flushing=True`` the records of kernels launched so far are collected first.
    Without an id, an open always-on window keeps recording (docs/always-on.md): it is opened
    and closed from outside the program, as ``finalize()`` leaves it.
    """
    if session is None:
        _proton.deactivate_all(flushing, windows=False)
    else:
        _proton.deactivate(session, flushing)
    hooks.HookManager.deactivate(session)


def finalize(session: Optional[int] = None, output_format: Optional[str] = "") -> None:
    """Writes the profile of ``session`` (all when None) and ends it.

    ``output_format``: ``"hatchet"``, ``"hatchet_msgpack"``, ``"chrome_trace"`` or a
    comma-separated list of them; ``""`` writes what the session records (``hatchet`` for a
    tree, ``chrome_trace`` for a trace, both for ``data="tree,trace"``); None is ``""``. A session that
    advanced phases writes one tree file per phase, ``<name>.part_<N>.<ext>``.

    Without an id, an open always-on window (opened by ``proton-ctl``, the toggle signal or a
    schedule) is left recording: it is written when it closes or at exit (docs/always-on.md).
    """
    if _flags.command_line:
        return
    if session is None and _exit.forked():  # a fork child writes only the sessions it started
        for own in _exit.own_sessions():
            finalize(own, output_format)
        return
    if _exit.inherited(session):  # never write over the parent's profile
        return
    lost = hooks.instrumentation.detach(session)  # Triton's hooks out before the last drain
    _ranks.before_finalize()  # one rank of a job: record its device (docs/multiprocess.md)
    try:
        metric.fold()  # device tensor metrics: one read-back
    except Exception as e:  # never lose the rest of the profile over them
        warnings.warn(f"proton: device tensor metrics could not be read back: {e}")
    output_format = output_format or ""
    if session is None:  # each session's regions in flight reach its tree first
        # Not an always-on window: it was opened from outside the program (proton-ctl, the
        # toggle signal, a schedule) and is written when it closes or at exit.
        _proton.finalize_all(output_format, windows=False)
    else:
        _proton.finalize(session, output_format)
    lost()  # what the instrumentation runtime lost, now that it has drained
    hooks.unregister(session)
    _exit.finalized(session)


def _profiling(func, **start_args):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        session = start(**start_args)
        try:
            return func(*args, **kwargs)
        finally:
            if session is not None:
                deactivate(session)

    return wrapper


def profile(
    func=None,
    *,
    name: Optional[str] = None,
    context: Optional[str] = "shadow",
    data: Optional[str] = "tree",
    backend: Optional[str] = None,
    mode: Optional[str] = None,
    hook=None,
):
    """Decorator that profiles each call of a function (``@profile`` or ``@profile(...)``).

    The session is deactivated after the call; ``finalize()`` writes it.
    """
    options = dict(name=name, context=context, data=data, backend=backend, mode=mode, hook=hook)
    if func is None:
        return lambda f: _profiling(f, **options)
    return _profiling(func, **options)
