"""The ``Hook`` interface and ``HookManager`` (as ``triton.profiler.hooks.hook``)."""


class Hook:
    """A hook on Triton's kernel load and launch; subclasses override what they need."""

    priority: int = 0

    def init_handle(self, module, function, name: str, metadata_group: dict, hash: str) -> None:
        pass

    def destroy_handle(self, module, function) -> None:
        pass

    def enter(self, metadata) -> None:
        pass

    def exit(self, metadata) -> None:
        pass

    def activate(self) -> None:
        pass

    def deactivate(self) -> None:
        pass


class HookManager:
    """Placeholder until the conformance work fills it in."""
