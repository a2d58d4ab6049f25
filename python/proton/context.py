"""Queries about the calling thread's context."""

from typing import Optional

from . import _proton


def depth(session: Optional[int] = 0) -> int:
    """Number of frames (scopes and state) above a kernel launched now from this thread."""
    return _proton.depth()
