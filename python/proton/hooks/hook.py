"""The ``Hook`` interface and ``HookManager`` (as ``triton.profiler.hooks.hook``).

A hook sees Triton's kernel loads, unloads and launches while a session that registered it is
active. ``HookManager`` keeps, per session, which hooks it registered and whether they are on;
a hook is active (its ``activate()`` called, its methods called by Triton) while at least one
session that registered it is active, and ``deactivate()``-d when the last one stops or ends.
Active hooks run in order of decreasing ``priority`` at launch entry and kernel load, in
reverse at launch exit and kernel unload, as in triton.profiler.

``proton.start(hook=MyHook())`` registers a ``Hook`` instance; ``hook="triton"`` registers the
``LaunchHook`` singleton, which does its per-launch work in C++: it is installed directly into
Triton's launch hook chains (see ``launch.py``) rather than called through ``HookManager.enter``.
"""

from collections import defaultdict
from typing import Any, Dict, Optional


def _runtime_knobs():
    try:
        from triton import knobs
    except ImportError as e:
        raise RuntimeError(f"hooks need Triton 3.4 or newer (import failed: {e})") from e
    return knobs.runtime


class Hook:
    """A hook on Triton's kernel load, unload and launch; subclasses override what they need.

    ``priority``: larger runs earlier at launch entry (``LaunchHook`` has 100).
    """

    priority: int = 0

    def init_handle(self, module: Any, function: Any, name: str, metadata_group: Dict[str, str],
                    hash: str) -> None:
        """A kernel was loaded (``knobs.runtime.kernel_load_end_hook``)."""

    def destroy_handle(self, module: Any, function: Any, name: str, metadata_group: Dict[str, str],
                       hash: str) -> None:
        """A kernel is being unloaded (``knobs.runtime.kernel_unload_hook``, Triton 3.9+)."""

    def enter(self, metadata) -> None:
        """Right before a launch, with Triton's ``LazyDict`` of launch metadata."""

    def exit(self, metadata) -> None:
        """Right after a launch."""

    def activate(self) -> None:
        """The first session using this hook became active."""

    def deactivate(self) -> None:
        """No session using this hook is active any more."""


class HookManager:
    """Which hooks each session registered, and the chain of active ones (class-level state)."""

    # Active hooks, highest priority first.
    active_hooks: list = []
    # session id -> {hook: active in that session}
    session_hooks: Dict[int, Dict[Hook, bool]] = defaultdict(lambda: defaultdict(bool))
    # Whether our dispatchers are in Triton's hook chains.
    _heads_installed = False

    # --- dispatch (what Triton calls) -------------------------------------------------------
    @staticmethod
    def init_handle(module, function, name, metadata_group, hash) -> None:
        for hook in list(HookManager.active_hooks):
            hook.init_handle(module, function, name, metadata_group, hash)

    @staticmethod
    def destroy_handle(module, function, name, metadata_group, hash) -> None:
        for hook in reversed(list(HookManager.active_hooks)):
            hook.destroy_handle(module, function, name, metadata_group, hash)

    @staticmethod
    def enter(metadata) -> None:
        for hook in list(HookManager.active_hooks):
            if not getattr(hook, "_direct", False):
                hook.enter(metadata)

    @staticmethod
    def exit(metadata) -> None:
        # Reverse order: the first hook entered is the last one exited.
        for hook in reversed(list(HookManager.active_hooks)):
            if not getattr(hook, "_direct", False):
                hook.exit(metadata)

    # --- sessions ---------------------------------------------------------------------------
    @staticmethod
    def _sort() -> None:
        HookManager.active_hooks.sort(key=lambda h: h.priority, reverse=True)

    @staticmethod
    def _used_elsewhere(hook: Hook) -> bool:
        return any(hooks.get(hook, False) for hooks in HookManager.session_hooks.values())

    @staticmethod
    def _turn_on(hook: Hook) -> None:
        if hook not in HookManager.active_hooks:
            hook.activate()
            HookManager.active_hooks.append(hook)

    @staticmethod
    def _turn_off(hook: Hook) -> None:
        if hook in HookManager.active_hooks:
            HookManager.active_hooks.remove(hook)
            hook.deactivate()

    @staticmethod
    def register(hook: Hook, session: int) -> None:
        """``session`` uses ``hook`` from now on (``start(hook=...)``)."""
        if not isinstance(hook, Hook):
            raise TypeError(f"hook must be a proton.hooks.Hook, not {type(hook).__name__}")
        HookManager.session_hooks[session][hook] = True
        HookManager._turn_on(hook)
        HookManager._sort()
        HookManager._install_heads()

    @staticmethod
    def unregister(session: Optional[int] = None) -> None:
        """``session`` (all sessions when None) ended: hooks no other session uses go off."""
        if session is not None and session not in HookManager.session_hooks:
            return
        if session is None:
            for hook in list(HookManager.active_hooks):
                HookManager._turn_off(hook)
            HookManager.session_hooks.clear()
        else:
            popped = HookManager.session_hooks.pop(session)
            for hook, active in popped.items():
                if active and not HookManager._used_elsewhere(hook):
                    HookManager._turn_off(hook)
        if not HookManager.active_hooks:
            HookManager._remove_heads()

    @staticmethod
    def activate(session: Optional[int] = None) -> None:
        sessions = list(HookManager.session_hooks) if session is None else [session]
        for s in sessions:
            if s not in HookManager.session_hooks:
                continue
            for hook in HookManager.session_hooks[s]:
                HookManager._turn_on(hook)
                HookManager.session_hooks[s][hook] = True
        HookManager._sort()
        if HookManager.active_hooks:
            HookManager._install_heads()

    @staticmethod
    def deactivate(session: Optional[int] = None) -> None:
        sessions = list(HookManager.session_hooks) if session is None else [session]
        touched = set()
        for s in sessions:
            if s not in HookManager.session_hooks:
                continue
            for hook in HookManager.session_hooks[s]:
                touched.add(hook)
                HookManager.session_hooks[s][hook] = False
        for hook in touched:
            if not HookManager._used_elsewhere(hook):
                HookManager._turn_off(hook)

    # --- Triton's chains ----------------------------------------------------------------------
    @staticmethod
    def _chains(rt):
        """(chain, dispatcher) pairs of the chains this Triton has (kernel_unload_hook: 3.9+)."""
        pairs = [("kernel_load_end_hook", HookManager.init_handle),
                 ("kernel_unload_hook", HookManager.destroy_handle),
                 ("launch_enter_hook", HookManager.enter),
                 ("launch_exit_hook", HookManager.exit)]
        return [(getattr(rt, attr), fn) for attr, fn in pairs if hasattr(getattr(rt, attr, None), "add")]

    @staticmethod
    def _install_heads() -> None:
        # Only hooks run through Python need the dispatchers; LaunchHook alone costs nothing
        # extra per launch (its C++ functions are in the chains themselves).
        if HookManager._heads_installed:
            return
        if all(getattr(h, "_direct", False) for h in HookManager.active_hooks):
            return
        for chain, fn in HookManager._chains(_runtime_knobs()):
            chain.add(fn)
        HookManager._heads_installed = True

    @staticmethod
    def _remove_heads() -> None:
        if not HookManager._heads_installed:
            return
        for chain, fn in HookManager._chains(_runtime_knobs()):
            try:
                chain.remove(fn)
            except ValueError:
                pass
        HookManager._heads_installed = False
