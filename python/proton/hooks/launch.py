"""Launch hooks: ``start(hook="triton")`` attaches Triton's ``launch_metadata`` to kernels.

A Triton kernel may declare ``@triton.jit(launch_metadata=fn)``; ``fn(grid, metadata, args)``
returns a dict. With the hook on, each launch's dict is attached to that kernel's node:
``name`` renames the node, ``flops8/16/32/64``, ``flops``, ``bytes`` and any other numeric
entries become metrics summed per launch (``flops*`` as floats, ``bytes`` as an int).
Kernels launched by ``fn`` itself (a tensor op, say) land under a ``__proton_launch_metadata``
frame, which viewers hide. The hook work is done in C++ (``_proton._launch_enter``/``_exit``);
this module only installs it into ``triton.knobs.runtime`` and holds the filter.

Filter which kernels run their metadata function, by regular expression over the compiled
kernel name (``re.match``, as triton.profiler)::

    proton.hooks.LaunchHook().configure(include="matmul_.*", exclude=".*_fp8")
    proton.start("p", hook="triton")
"""

import re
from typing import Optional

from .. import _proton

COMPUTE_METADATA_SCOPE_NAME = "__proton_launch_metadata"


class LaunchHook:
    """The process-wide Triton launch hook (one instance, as in triton.profiler)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance.include = None
            cls._instance.exclude = None
        return cls._instance

    def configure(self, *, include: Optional[str] = None, exclude: Optional[str] = None) -> None:
        """Only kernels whose name matches ``include`` and not ``exclude`` get metadata."""
        inc = re.compile(include) if include else None
        exc = re.compile(exclude) if exclude else None
        self.include, self.exclude = include, exclude
        if inc is None and exc is None:
            _proton._set_launch_filter(None)
            return

        def accept(name: str) -> bool:  # called once per kernel name; C++ caches the answer
            if inc is not None and inc.match(name) is None:
                return False
            return exc is None or exc.match(name) is None

        _proton._set_launch_filter(accept)


# Sessions that asked for the hook; it stays installed while any of them exists.
_sessions: set = set()
_installed = False
_originals: list = []  # Triton's own HookChains while ours are installed


def _runtime_knobs():
    try:
        from triton import knobs
    except ImportError as e:
        raise RuntimeError(f"hook='triton' needs Triton 3.4 or newer (import failed: {e})") from e
    return knobs.runtime


def _direct(chain, fn, attr, rt):
    """A stand-in for Triton's HookChain while proton's hook is its only member.

    HookChain.__call__ loops in Python, about 0.4 us per hooked launch for a one-element
    chain; this subclass calls the C++ hook directly. Anyone adding a hook of their own gets
    the real chain back (with ours still in it), so other tools keep working.
    """

    class DirectChain(type(chain)):
        __call__ = staticmethod(fn)

        def add(self, func):
            chain.add(func)
            setattr(rt, attr, chain)

        def remove(self, func):
            chain.remove(func)

    direct = DirectChain.__new__(DirectChain)
    direct.__dict__.update(chain.__dict__)  # same `calls` list and order
    return direct


def _install() -> None:
    global _installed
    if _installed:
        return
    rt = _runtime_knobs()
    enter, exit_ = rt.launch_enter_hook, rt.launch_exit_hook
    if hasattr(enter, "add"):  # Triton >= 3.4: HookChains
        for attr, chain, fn in (("launch_enter_hook", enter, _proton._launch_enter),
                                ("launch_exit_hook", exit_, _proton._launch_exit)):
            alone = not chain.calls
            chain.add(fn)
            if alone:
                setattr(rt, attr, _direct(chain, fn, attr, rt))
        _originals[:] = [enter, exit_]
    elif enter is None and exit_ is None:
        rt.launch_enter_hook, rt.launch_exit_hook = _proton._launch_enter, _proton._launch_exit
    else:
        raise RuntimeError("another launch hook is installed in triton.knobs.runtime")
    _installed = True


def _uninstall() -> None:
    global _installed
    if not _installed:
        return
    rt = _runtime_knobs()
    if _originals:
        enter, exit_ = _originals
        enter.remove(_proton._launch_enter)
        exit_.remove(_proton._launch_exit)
        rt.launch_enter_hook, rt.launch_exit_hook = enter, exit_
        _originals.clear()
    else:
        if rt.launch_enter_hook is _proton._launch_enter:
            rt.launch_enter_hook = None
        if rt.launch_exit_hook is _proton._launch_exit:
            rt.launch_exit_hook = None
    _installed = False


def register(session: int, hook) -> None:
    """Called by start(): installs the hook for ``session`` when it asked for one."""
    if hook is None:
        return
    if isinstance(hook, LaunchHook):
        hook = "triton"
    if hook != "triton":
        raise ValueError(f"unknown hook {hook!r} (expected None or 'triton')")
    _install()
    _sessions.add(session)


def unregister(session: Optional[int] = None) -> None:
    """Called by finalize(): removes the hook when no session wants it any more."""
    if session is None:
        _sessions.clear()
    else:
        _sessions.discard(session)
    if not _sessions:
        _uninstall()
