"""Argument checks of the Python API: one-line errors that name the argument.

They run where a call enters Proton (scope entry is a hot path: one isinstance check each), so
a wrong type never reaches the bindings, whose errors list every overload on several lines.
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


def metrics(where: str, value):
    """A metrics argument: None, a dict, or another mapping (copied into a dict) of name -> value.

    Returns what to hand to the engine. The values are checked there, one by one.
    """
    if value is None or type(value) is dict:
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise type_error(where, "metrics", "a dict of metric name -> value (or None)", value)
