"""Proton: a lightweight, context-aware GPU profiler for Triton and PyTorch programs.

A drop-in for ``import triton.profiler as proton``::

    import proton
    proton.start("my_profile")
    with proton.scope("forward"):
        model(x)
    proton.finalize()          # writes my_profile.hatchet
"""

from . import _proton
from . import context, control, data, flags, hooks, metric, mode, specs
from .control import schedule, step
from .profile import DEFAULT_PROFILE_NAME, activate, deactivate, finalize, profile, start
from .scope import cpu_timed_scope, enter_scope, exit_scope, scope
from .state import enter_state, exit_state, metadata_state, state

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_PROFILE_NAME",
    "activate",
    "context",
    "control",
    "cpu_timed_scope",
    "data",
    "deactivate",
    "enter_scope",
    "enter_state",
    "exit_scope",
    "exit_state",
    "finalize",
    "flags",
    "hooks",
    "metadata_state",
    "metric",
    "mode",
    "profile",
    "schedule",
    "scope",
    "specs",
    "start",
    "state",
    "step",
]

import threading as _threading

if _threading.current_thread() is _threading.main_thread():
    # Threads that never open a scope (autograd, pools) attribute to this thread's scopes.
    _proton.set_main_thread()

# PROTON_IDLE=1: loaded idle, windows opened from outside (docs/always-on.md).
control._idle_from_environment()
