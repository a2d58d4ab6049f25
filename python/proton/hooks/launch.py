"""Launch hooks: ``start(hook="triton")`` attaches Triton's ``launch_metadata`` to kernels.

A Triton kernel may declare ``@triton.jit(launch_metadata=fn)``; ``fn(grid, metadata, args)``
returns a dict. With the hook on, each launch's dict is attached to that kernel's node:
``name`` renames the node, ``flops8/16/32/64``, ``flops``, ``bytes`` and any other numeric
entries become metrics summed per launch (``flops*`` as floats, ``bytes`` as an int). A GPU
tensor entry is summed on the device with no host synchronization (``proton.metric``), also
inside CUDA-graph capture, and read back when the session's data is read.
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
from ..state import COMPUTE_METADATA_SCOPE_NAME, metadata_state  # noqa: F401 - re-exported
from .hook import Hook, HookManager, _runtime_knobs


class _LaunchVar:
    """triton.profiler's per-launch context variables ``id`` and ``op_name``, with a ContextVar's
    ``get``/``set``/``reset``. Every launch the hook lets through, on any thread, numbers itself
    and keeps its name in the engine's per-thread slot (no Python work per launch); ``get`` reads
    this thread's slot. As in triton.profiler, the values stay after the launch exits.
    """

    __slots__ = ("name", "_get", "_set")

    def __init__(self, name, get, set_):
        self.name, self._get, self._set = name, get, set_

    def get(self, *default):
        value = self._get()
        return value if value is not None or not default else default[0]

    def set(self, value):
        token = self._get()
        self._set(value)
        return token

    def reset(self, token):
        self._set(token)

    def __repr__(self):
        return f"<proton.hooks.launch.{self.name}: {self._get()!r}>"


op_name = _LaunchVar("op_name", _proton._launch_op_name, _proton._set_launch_op_name)
id = _LaunchVar("id", _proton._launch_id, _proton._set_launch_id)  # noqa: A001 - Triton's name


class LaunchHook(Hook):
    """The process-wide Triton launch hook (one instance, as in triton.profiler)."""

    priority = 100  # highest: runs before any other hook at launch entry
    flops_width = [8, 16, 32, 64]
    metrics = [f"flops{w}" for w in flops_width] + ["bytes", "flops"]
    # Installed straight into Triton's launch chains (C++ functions), not run by HookManager.
    _direct = True
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance.include = None
            cls._instance.exclude = None
        return cls._instance

    def __init__(self):
        pass

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

    def init_handle(self, module, function, name, metadata_group, hash) -> None:
        pass

    def destroy_handle(self, module, function, name, metadata_group, hash) -> None:
        pass

    def activate(self) -> None:
        _install()

    def deactivate(self) -> None:
        _uninstall()

    def enter(self, metadata) -> None:
        """What the installed C++ hook does, callable from Python (e.g. a HookManager chain)."""
        _proton._launch_enter(metadata)  # sets id and op_name, as the installed hook does

    def exit(self, metadata) -> None:
        _proton._launch_exit(metadata)


# Installation state of the C++ hooks in Triton's chains (LaunchHook.activate/deactivate).
_installed = False
_originals: list = []  # Triton's own HookChains while ours are installed


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
    """start()'s hook argument: None, "triton" (the LaunchHook) or a Hook instance."""
    if hook is None:
        return
    if hook == "triton":
        hook = LaunchHook()
    if not isinstance(hook, Hook):
        raise ValueError(f"Unsupported hook: {hook!r} (expected None, 'triton' or a "
                         "proton.hooks.Hook instance)")
    HookManager.register(hook, session)


def unregister(session: Optional[int] = None) -> None:
    """finalize(): hooks no remaining session uses are turned off (and uninstalled)."""
    HookManager.unregister(session)
