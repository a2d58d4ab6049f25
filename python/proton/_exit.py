"""Never lose a profile: open sessions are written at interpreter exit and on SIGTERM/SIGINT,
and a forked child never writes over its parent's files. See docs/durability.md.

Signals: only a signal whose disposition is still the default action (``SIG_DFL``) gets our
handler, installed at the first ``start()``. It writes every open session, then restores the
default action and re-sends the signal, so the process ends exactly as it would have (killed by
it: exit status 128+N). A handler the program installed before us is left alone: it keeps
working, and if it ends the program through ``sys.exit`` or an exception, the exit hook below
writes. Python's own SIGINT handler raises KeyboardInterrupt, whose uncaught exit runs the exit
hook and still ends with status 130. A handler installed after ours replaces it (ours is not
re-installed over it); one that chains to ours gets the default action, after the write.

Fork: the child does not own the sessions it inherits. They stop recording in the child and the
child never writes them (neither at exit, on a signal, nor through ``finalize()``); sessions the
child starts itself are its own and are written as usual.
"""

import atexit
import os
import signal
import sys
import threading

from . import _proton

_SIGNALS = (signal.SIGTERM, signal.SIGINT)

# Re-entrant: a signal handler runs on the main thread between any two bytecodes, possibly
# while that thread holds this lock in started()/finalized().
_lock = threading.RLock()
_live = set()  # sessions started by this process and not yet finalized
_inherited = set()  # sessions this process got from its parent through fork()
_forked = False  # this process is a fork child of a process that had proton imported
_installed = False
_exit_hook = False


def started(session):
    """Called by ``start()``: tracks the session and installs the signal handlers once."""
    if session is None:
        return
    global _exit_hook
    with _lock:
        _live.add(session)
        if not _exit_hook:
            # Registered at the first start, after profile.py's own exit hook, so that ours
            # runs first (atexit is last-in first-out) while the Python-context walker works.
            _exit_hook = True
            atexit.register(_at_exit)
    _install_signal_handlers()


def finalized(session):
    """Called by ``finalize()`` once the session (all when None) is written."""
    with _lock:
        if session is None:
            _live.clear()
        else:
            _live.discard(session)


def inherited(session):
    """True when this fork child must not write ``session`` (it belongs to the parent)."""
    return _forked and session in _inherited


def own_sessions():
    """The sessions a fork child started itself (``finalize()`` without an id writes these)."""
    with _lock:
        return sorted(_live)


def forked():
    return _forked


def _write_open_sessions(why):
    """Writes every open session this process owns. Never raises: this runs on exit paths."""
    try:
        # An always-on window first, through its controller (its periodic flush stops
        # before the last write, and it counts as written); a fork child's call leaves it.
        path = _proton.control_close_if_open()
        if path:
            print(f"proton: window written to {path}", file=sys.stderr)
        if _forked:
            for session in own_sessions():
                _proton.finalize(session, "")
                finalized(session)
        elif _proton.has_sessions():
            _proton.finalize_all("")
            finalized(None)
    except Exception as e:  # a bad path must not hide the exit status or the signal
        print(f"proton: could not write the profile at {why}: {e}", file=sys.stderr)


def _at_exit():
    _write_open_sessions("interpreter exit")


def _on_signal(signum, frame):
    # A second signal during the write gets the default action at once: the file being
    # written is a temporary one, so the previous profile (or none) stays intact.
    signal.signal(signum, signal.SIG_DFL)
    _write_open_sessions(f"signal {signal.Signals(signum).name}")
    os.kill(os.getpid(), signum)


def _install_signal_handlers():
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return  # signal.signal works only in the main thread: try again at the next start()
    _installed = True
    for signum in _SIGNALS:
        try:
            if signal.getsignal(signum) == signal.SIG_DFL:
                signal.signal(signum, _on_signal)
        except (ValueError, OSError):  # embedded interpreters may refuse
            pass


def _after_fork_in_child():
    global _forked, _installed, _lock
    _lock = threading.RLock()  # another thread may have held it at the fork: it never returns
    _forked = True
    with _lock:
        mine = set(_live)
        _inherited.update(mine)
        _live.clear()
    # Stop the inherited sessions here: a trace streams to a file that the parent owns.
    for session in mine:
        try:
            _proton.deactivate(session, False)
        except Exception:
            pass
    # The handlers (ours or the program's) are inherited with the process image; keep them.
    _installed = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
