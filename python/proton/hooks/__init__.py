"""Hooks into Triton's runtime, laid out as ``triton.profiler.hooks``.

``hook``: the ``Hook`` interface and the ``HookManager`` that chains hooks per session;
``launch``: ``LaunchHook`` (``start(hook="triton")``: Triton's ``launch_metadata`` on kernels);
``compiled``: each compiled kernel's facts (warps, stages, registers, spills, config, source);
``instrumentation``: ``InstrumentationHook`` (intra-kernel regions, ``backend="instrumentation"``).
"""

from . import compiled, hook, instrumentation, launch
from .hook import Hook, HookManager
from .instrumentation import InstrumentationHook
from .launch import COMPUTE_METADATA_SCOPE_NAME, LaunchHook, _runtime_knobs, register, unregister  # noqa: F401

__all__ = [
    "COMPUTE_METADATA_SCOPE_NAME",
    "Hook",
    "HookManager",
    "InstrumentationHook",
    "compiled",
    "LaunchHook",
    "hook",
    "instrumentation",
    "launch",
]
