"""States: one label per thread, placed as the frame just above each kernel.

Inside ``with proton.state("s")``, kernels and scope metrics land on the scope path with the
state as its leaf (``scope/s/kernel``), as in triton.profiler.
"""

import contextlib

from . import _args, _proton

_set_state = _proton.set_state

# The frame that kernels launched while Triton's launch_metadata functions run land under;
# every viewer (ours, triton.profiler's 3.6 and 3.9) hides it.
COMPUTE_METADATA_SCOPE_NAME = "__proton_launch_metadata"
# Triton 3.9 names the frame per kernel: "<name>:<kernel>" (its viewer hides both forms).
COMPUTE_METADATA_SCOPE_PREFIX = COMPUTE_METADATA_SCOPE_NAME + ":"


class state(contextlib.ContextDecorator):
    """Labels the kernels launched inside it, e.g. ``with proton.state("decode"):``.

    Usable as a context manager or decorator. States do not nest: the inner one replaces the
    outer one until it exits. A ``name`` that is not a str is a ``TypeError`` naming it.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            _args.name("proton.state", name)
        self.name = name

    def __enter__(self):
        _set_state(self.name)
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _set_state(None)


def get_metadata_state_name(kernel_name=None) -> str:
    """The state name of ``metadata_state(kernel_name)`` (Triton 3.9's naming)."""
    if not kernel_name:
        return COMPUTE_METADATA_SCOPE_NAME
    return f"{COMPUTE_METADATA_SCOPE_PREFIX}{kernel_name}"


class metadata_state(state):
    """The state for work done on a kernel's behalf (its launch_metadata, tensor metrics).

    Unlike ``state``, it restores the state that was set before it, so a user's
    ``with proton.state(...)`` survives a metadata evaluation inside it.
    """

    __slots__ = ("_outer",)

    def __init__(self, kernel_name=None) -> None:
        super().__init__(get_metadata_state_name(kernel_name))

    def __enter__(self):
        self._outer = _proton.state() or None
        _set_state(self.name)
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _set_state(self._outer)


def enter_state(name: str) -> None:
    if not isinstance(name, str):
        _args.name("proton.enter_state", name)
    _set_state(name)


def exit_state() -> None:
    _set_state(None)


# `proton.state` is this class once the package imports it (as in triton.profiler), so the
# module's other names are reachable through it too: `proton.state.metadata_state(...)`.
for _name in ("COMPUTE_METADATA_SCOPE_NAME", "COMPUTE_METADATA_SCOPE_PREFIX", "metadata_state",
              "get_metadata_state_name", "enter_state", "exit_state"):
    setattr(state, _name, globals()[_name])
del _name
