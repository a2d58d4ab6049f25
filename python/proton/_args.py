"""Argument errors of the Python API: one line that names the argument.

Scope entry is a hot path, so scopes check nothing up front: the engine refuses a wrong type
with nanobind's TypeError (which lists every overload on several lines), and these helpers,
called only from that except clause, replace it. States and start() check up front.
"""

from collections.abc import Mapping


def _shown(value) -> str:
    """The value as an error message shows it: its type, and its repr when short and on one line."""
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > 40 or "\n" in text:
        return type(value).__name__
    return f"{type(value).__name__} {text}"


def type_error(where: str, argument: str, expected: str, value) -> TypeError:
    return TypeError(f"{where}: {argument} must be {expected}, not {_shown(value)}")


def name(where: str, value) -> None:
    """A scope's or state's name: a str."""
    if not isinstance(value, str):
        raise type_error(where, "name", "a str", value)


def refused_name(where: str, value) -> None:
    """The engine refused a name with TypeError: a non-str gets the one-line error (raised
    from within the engine's, which it hides). Returns when `value` is a str."""
    if not isinstance(value, str):
        raise type_error(where, "name", "a str", value) from None


def refused_metrics(where: str, value) -> dict:
    """The engine refused `metrics` with TypeError and they are not a dict: another mapping
    comes back as a dict to retry with (triton.profiler's binding takes any mapping); anything
    else is the one-line error (raised from within the engine's, which it hides)."""
    if isinstance(value, Mapping):
        return dict(value)
    raise type_error(where, "metrics", "a dict of metric name -> value (or None)", value) from None
