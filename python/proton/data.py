"""Reading a session's data while it runs (the ``triton.profiler.data`` API).

A session's call tree is split into *phases*: ``advance_phase`` closes the current phase and
opens the next one, so a long job can read, write out or drop each phase while later ones are
still being collected. Kernels belong to the phase in which they were launched, however late
their records arrive. A session that never advanced has only phase 0.
"""

import json
from typing import Optional

from . import _flags, _proton, metric


def _check(session, what):
    if _flags.command_line and session != 0:
        raise ValueError(f"Only one session can {what} when running from the command line.")


def get(session: Optional[int] = 0, phase: int = 0):
    """The tree of ``phase`` as Python objects: ``[root, device_map]`` (Hatchet layout).

    Records of kernels completed so far are collected first. A phase that was cleared (or
    written out by periodic flushing) reads as an empty tree; a phase not begun is a ValueError,
    and so is a session started with ``data="trace"`` only.
    """
    if session is None:
        return None
    _check(session, "be retrieved")
    metric.fold()  # device tensor metrics
    return json.loads(_proton.hatchet_json(session, phase))


def get_msgpack(session: Optional[int] = 0, phase: int = 0) -> Optional[bytes]:
    """The same tree as :func:`get`, encoded with MessagePack (``msgpack.unpackb`` reads it)."""
    if session is None:
        return None
    _check(session, "be retrieved")
    metric.fold()
    return _proton.hatchet_msgpack(session, phase)


def advance_phase(session: Optional[int] = 0) -> Optional[int]:
    """Starts a new phase of ``session`` and returns its number.

    With ``mode="periodic_flushing"`` every earlier phase whose kernels have all been
    delivered is then written to ``<name>.part_<N>.<format>`` and freed.
    """
    if session is None:
        return None
    _check(session, "advance phase")
    return _proton.advance_phase(session)


def is_phase_complete(session: Optional[int] = 0, phase: int = 0) -> bool:
    """True when ``phase`` is over and every kernel launched in it has been delivered.

    Never waits for the GPU: records arrive as the backend's activity buffers fill, or at
    ``deactivate(session, flushing=True)``. The current phase is never complete.
    """
    if session is None:
        return False
    _check(session, "check phase completion")
    return _proton.is_phase_complete(session, phase)


# triton.profiler's name for the same question.
is_phase_flushed = is_phase_complete


def clear(session: Optional[int] = 0, phase: int = 0, clear_up_to_phase: bool = False) -> None:
    """Drops the tree of ``phase`` (of every phase up to it with ``clear_up_to_phase``).

    Clearing the current phase empties it; it keeps collecting. Kernels of a cleared earlier
    phase that complete later are not recorded.
    """
    if session is None:
        return
    _check(session, "be cleared")
    _proton.clear_phase(session, phase, clear_up_to_phase)
