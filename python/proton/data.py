"""Reading a session's data while it runs (the ``triton.profiler.data`` API)."""

import json

from . import _proton


def get(session: int = 0, phase: int = 0):
    """The session's call tree as Python objects: ``[root, device_map]`` (Hatchet layout)."""
    return json.loads(_proton.hatchet_json(session))
