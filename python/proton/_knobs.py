"""``triton.knobs.proton`` (and its environment variables), honoured when Triton is installed.

triton.profiler reads its settings from ``triton.knobs.proton``; a script that sets them keeps
working with ``import proton``. Each knob maps onto what Proton does:

| knob (environment variable)                               | Proton                          |
|-----------------------------------------------------------|---------------------------------|
| ``disable`` (TRITON_PROTON_DISABLE)                       | ``start()`` records nothing     |
| ``enable_nvtx`` (TRITON_ENABLE_NVTX)                      | False = ``PROTON_NVTX=0``       |
| ``cupti_lib_dir`` (TRITON_CUPTI_LIB_PATH), when set       | as ``PROTON_CUPTI_PATH``        |
| ``profile_metric_buffer_size`` (TRITON_PROFILE_METRIC_BUFFER_SIZE) | bytes of device tensor-metric accumulators |
| ``profile_buffer_size`` (TRITON_PROFILE_BUFFER_SIZE), when set | bytes per CUPTI activity buffer |
| ``cupti_lib_blackwell_dir``, ``enable_hw_trace``          | accepted, no effect             |

``start()`` passes them to the native module as arguments (``start_args``), where our own
``PROTON_*`` variables win where both are set. Without Triton (or with a Triton whose knobs
lack one, e.g. 3.6 has no buffer sizes), Triton's environment variables are read directly.
"""

import os
from typing import Optional

_DEFAULT_BUFFER = 64 * 1024 * 1024


def _knobs():
    try:
        from triton import knobs
    except Exception:  # no Triton, or one too old to have knobs
        return None
    return getattr(knobs, "proton", None)


def _explicit(k, attr: str, env: str) -> bool:
    """The user chose a value (in Python or through its variable) other than the default.

    Setting a Triton knob also sets its variable, so both are checked against the default.
    """
    desc = type(k).__dict__.get(attr) if k is not None else None
    default = getattr(desc, "default", None)
    if os.environ.get(env) not in (None, "", default):
        return True
    return k is not None and attr in k.__dict__ and k.__dict__[attr] != default


def _bool_env(env: str, default: bool) -> bool:
    v = os.environ.get(env)
    if v is None:
        return default
    return v.strip().lower() in ("1", "true", "on", "yes", "y")


def _int_env(env: str, default: int) -> int:
    v = os.environ.get(env)
    if v is None or not v.strip():
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{env}='{v}' is not an integer (bytes)") from None


def _get(attr: str, env: str, default, parse):
    k = _knobs()
    if k is not None and hasattr(type(k), attr):
        return getattr(k, attr)
    return parse(env, default)


def disabled() -> bool:
    return bool(_get("disable", "TRITON_PROTON_DISABLE", False, _bool_env))


def enable_nvtx() -> bool:
    return bool(_get("enable_nvtx", "TRITON_ENABLE_NVTX", True, _bool_env))


def profile_buffer_size() -> int:
    return int(_get("profile_buffer_size", "TRITON_PROFILE_BUFFER_SIZE", _DEFAULT_BUFFER, _int_env))


def profile_metric_buffer_size() -> int:
    return int(_get("profile_metric_buffer_size", "TRITON_PROFILE_METRIC_BUFFER_SIZE",
                    _DEFAULT_BUFFER, _int_env))


def cupti_lib_dir() -> Optional[str]:
    """The knob's folder when the user chose one, else None (we search as usual)."""
    k = _knobs()
    if not _explicit(k, "cupti_lib_dir", "TRITON_CUPTI_LIB_PATH"):
        return None
    if k is not None and hasattr(type(k), "cupti_lib_dir"):
        return k.cupti_lib_dir
    return os.environ.get("TRITON_CUPTI_LIB_PATH")


def chosen_profile_buffer_size() -> int:
    """The knob's bytes when the user chose them, else 0 (our own default buffer size)."""
    if not _explicit(_knobs(), "profile_buffer_size", "TRITON_PROFILE_BUFFER_SIZE"):
        return 0
    return profile_buffer_size()


def start_args() -> dict:
    """The knobs as ``_proton.start`` takes them (the engine lets PROTON_* variables win)."""
    return dict(enable_nvtx=enable_nvtx(), cupti_lib_dir=cupti_lib_dir() or "",
                profile_buffer_size=chosen_profile_buffer_size())
