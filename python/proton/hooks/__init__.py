"""Hooks into Triton's runtime, laid out as ``triton.profiler.hooks``.

``hook``: the ``Hook`` interface and the ``HookManager`` that chains hooks per session;
``launch``: ``LaunchHook`` (``start(hook="triton")``: Triton's ``launch_metadata`` on kernels);
``instrumentation``: ``InstrumentationHook`` (intra-kernel regions, ``backend="instrumentation"``).
"""

from . import hook, instrumentation, launch
from .hook import Hook, HookManager
from .instrumentation import InstrumentationHook
from .launch import COMPUTE_METADATA_SCOPE_NAME, LaunchHook, _runtime_knobs, register, unregister  # noqa: F401

__all__ = [
    "COMPUTE_METADATA_SCOPE_NAME",
    "Hook",
    "HookManager",
    "InstrumentationHook",
    "LaunchHook",
    "hook",
    "instrumentation",
    "launch",
]
