"""States: one label per thread, placed as the frame just above each kernel."""

import contextlib

from . import _proton

_set_state = _proton.set_state


class state(contextlib.ContextDecorator):
    """Labels the kernels launched inside it, e.g. ``with proton.state("decode"):``.

    Usable as a context manager or decorator. States do not nest: the inner one replaces the
    outer one until it exits.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self):
        _set_state(self.name)
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _set_state(None)


def enter_state(name: str) -> None:
    _set_state(name)


def exit_state() -> None:
    _set_state(None)
