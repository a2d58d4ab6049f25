"""Always on: windows of profiling in a process that keeps Proton loaded.

Each window is a session of its own, written to ``NAME.w<k>.hatchet`` (``k`` counts up and a
number whose file exists is skipped, so no window overwrites another). Between windows no session
runs, so no GPU backend is subscribed. Windows open and close through a step schedule
(``schedule`` and ``step``), or from outside the process (``proton-ctl``, see ``serve``).
The engine does the work (``src/control``); this module only passes arguments. See
docs/always-on.md.
"""

import atexit
import os
import sys
import warnings
from typing import Optional

from . import _args, _exit, _knobs, _proton, _ranks, hooks
from .profile import DEFAULT_PROFILE_NAME, StartError, _check_start_args

_exit_hook = False


def _close_at_exit():
    path = _proton.control_close_if_open()
    _proton.control_stop_serving()  # the socket goes with the process
    if path:
        print(f"proton: window written to {path}", file=sys.stderr)


def _flush_ms(value) -> int:
    """``flush_every`` in milliseconds: seconds as a number, or "2s", "500ms", "1m"."""
    if value is None:
        return 0
    if isinstance(value, str):
        ms = _proton.control_parse_duration_ms(value)
        if ms is None:
            raise ValueError(f"flush_every '{value}' is not a time from 1ms to 24h (e.g. '2s', "
                             "'500ms', or seconds as a number)")
        return ms
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _args.type_error("proton.control", "flush_every", "seconds or a time string",
                               value)
    if value < 0 or value > 86400:
        raise ValueError(f"flush_every must be 0 (off) to 86400 seconds, got {value}")
    return 0 if value == 0 else max(1, round(value * 1000))


def configure(name: Optional[str] = None, *, context: Optional[str] = "shadow",
              data: Optional[str] = "tree", backend: Optional[str] = None,
              mode: Optional[str] = None, flush_every=None) -> None:
    """The options every window starts with, as ``proton.start`` takes them; windows are
    written to ``<name>.w<k>``. ``flush_every`` (seconds, or "2s"/"500ms"; None or 0: off)
    writes an open window's tree to its file that often while it records, so a process killed
    by SIGKILL leaves what it recorded up to the last flush. Refuses what ``start`` would
    refuse, before anything changes."""
    global _exit_hook
    flush_ms = _flush_ms(flush_every)
    name = _check_start_args(name, context, data, backend)
    if backend == "instrumentation":
        raise StartError("windows do not take backend='instrumentation' yet (Triton's compiler "
                         "hooks are attached by proton.start only)")
    try:
        _proton.control_configure(
            # Absolute now: windows land where the process started, and messages say where.
            os.path.abspath(_ranks.session_name(name)),
            "shadow" if context is None else context,
            "tree" if data is None else data,
            "" if backend is None else backend,
            "" if mode is None else str(mode),
            flush_ms,
            **_knobs.start_args(),
        )
    except ValueError as e:
        raise StartError(str(e)) from None
    # Kernels compiled while idle keep their compiled facts for the windows that launch them.
    hooks.compiled.install()
    if not _exit_hook:  # an open window is written when the process ends
        _exit_hook = True
        atexit.register(_close_at_exit)


def _uint(func: str, argument: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _args.type_error(func, argument, "an int", value)
    if value < 0:
        raise ValueError(f"{func}: {argument} must be >= 0, got {value}")
    return value


class Schedule:
    """A running step schedule: ``step()`` once per iteration; a context manager that ends
    the schedule (writing a window it has open) on exit, like ``torch.profiler.profile``."""

    def step(self) -> Optional[str]:
        return step()

    def stop(self) -> None:
        _proton.control_clear_schedule()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def schedule(*, wait: int = 0, warmup: int = 0, active: int = 1, repeat: int = 0,
             skip_first: int = 0, phases: bool = False, name: Optional[str] = None,
             **start_args) -> Schedule:
    """Profiles some steps of a loop, with torch.profiler's schedule: after ``skip_first``
    steps, each cycle waits ``wait`` steps, records ``warmup`` steps that are thrown away (so the
    first kept step is not skewed), then keeps ``active`` steps as one window; ``repeat``
    cycles (0: until the schedule ends). Call ``proton.step()`` once at the end of every
    iteration. Each window is its own profile, ``<name>.w<k>.hatchet``, whose root frame holds
    ``window``, ``first_step`` and ``last_step`` (steps count from 0, skipped ones included).

    ``phases=True`` keeps the windows as the phases of ONE profile, ``<name>.w<k>``, instead:
    window ``p`` is phase ``p`` (its root holds ``window`` = ``p`` and its steps), the session
    waits paused between windows, and it is written as any session that advanced phases, one
    file per phase ``<name>.w<k>.part_<p>.hatchet`` (a single window: ``<name>.w<k>.hatchet``),
    when the last window closes, the schedule ends or the process exits; ``step()`` returns the
    last phase's file then. With ``mode="periodic_flushing"`` each phase is written as the next
    window begins.

    ``name`` and the other keyword arguments are ``proton.start``'s; without them, the options
    of ``proton --idle`` (or of an earlier ``configure``) are kept, else ``proton``.
    """
    spec = [_uint("proton.schedule", a, v) for a, v in (
        ("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
        ("skip_first", skip_first))]
    if active == 0:
        raise ValueError("proton.schedule: active must be at least 1 (a window records at "
                         "least one step)")
    if not isinstance(phases, bool):
        raise _args.type_error("proton.schedule", "phases", "True or False", phases)
    if name is not None or start_args or not _proton.control_configured():
        configure(DEFAULT_PROFILE_NAME if name is None else name, **start_args)
    _proton.control_schedule(*spec, phases)
    return Schedule()


def step() -> Optional[str]:
    """Ends the current step of the schedule; returns the path of the window this step wrote,
    if it wrote one."""
    return _proton.control_step()


def open_window(name: Optional[str] = None) -> str:
    """Opens a window now (``NAME.w<k>``, default: the configured name); returns its path."""
    if name is not None:
        name = os.path.abspath(_ranks.session_name(os.fspath(name)))
    return _proton.control_open("" if name is None else name)[0]


def close_window() -> str:
    """Writes the open window; returns its path. RuntimeError when none is open."""
    return _proton.control_close()[0]


def idle(name: Optional[str] = None, **start_args) -> str:
    """Loads Proton idle: no session and no GPU backend until a window opens. Windows open
    through ``schedule``/``step``, ``proton-ctl`` (the control socket of this process, whose
    path is returned) or the toggle signal (SIGUSR2; ``PROTON_CONTROL_SIGNAL``). ``name`` and
    the keyword arguments are ``proton.start``'s and apply to every window. Calling it again
    changes the options and keeps the socket. ``PROTON_IDLE=1`` calls it at ``import proton``,
    ``proton --idle`` before the script runs."""
    configure(name, **start_args)
    _exit._install_signal_handlers()  # SIGTERM/SIGINT write an open window, as a session's
    return _proton.control_serve()


def idle_requested() -> bool:
    """Whether PROTON_IDLE asks for idle mode (ValueError naming a bad value)."""
    return _proton.control_idle_requested()


def env_flush_every() -> Optional[str]:
    """PROTON_FLUSH_EVERY as ``flush_every`` takes it (None when unset; ValueError naming a bad
    value): the flush period of idle mode started by PROTON_IDLE=1, and of ``proton --idle``
    without --flush-every."""
    ms = _proton.control_env_flush_ms()
    return None if ms is None else f"{ms}ms"


def _idle_from_environment() -> None:
    """PROTON_IDLE=1 at import: idle with the default options (and PROTON_FLUSH_EVERY's flush
    period); a problem is a warning, never an import error."""
    try:
        if idle_requested():
            idle(flush_every=env_flush_every())
    except (ValueError, RuntimeError) as e:
        warnings.warn(f"proton: PROTON_IDLE: not idle: {e}")
