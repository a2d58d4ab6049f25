"""Queries about the calling thread's context."""

from typing import Optional

from . import _proton


def depth(session: Optional[int] = 0) -> int:
    """Number of frames (scopes and state) above a kernel launched now from this thread.

    For a ``context="python"`` session: the number of Python frames of this thread (this
    function's own included, the state not), as triton.profiler counts them.
    """
    if session is not None and _proton._is_python_session(session):
        return _proton._python_frame_count()
    return _proton.depth()
