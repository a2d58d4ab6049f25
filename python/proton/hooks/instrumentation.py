"""Intra-kernel instrumentation hook (``backend="instrumentation"``): not built yet."""

from .hook import Hook


class InstrumentationHook(Hook):
    """Placeholder until the instrumentation backend exists."""
