"""``triton.profiler.flags``: the process's profiling switches, read from Proton's own state.

``flags.profiling_on`` is whether a session is active, ``flags.instrumentation_on`` whether an
instrumentation session records kernel-side regions, ``flags.command_line`` whether the
``proton`` command owns the session. They are read-only here: ``start``, ``activate``,
``deactivate`` and ``finalize`` change them (setting one is an ``AttributeError`` saying so).
"""

from . import _flags, _instr_state, _proton


class ProfilerFlags:
    __slots__ = ()

    @property
    def profiling_on(self) -> bool:
        return bool(_proton._active_sessions())

    @property
    def instrumentation_on(self) -> bool:
        return bool(_instr_state.on)

    @property
    def command_line(self) -> bool:
        return bool(_flags.command_line)

    def __setattr__(self, name, value):
        raise AttributeError(f"proton.flags.{name} is read-only: proton.start/activate/deactivate/"
                             "finalize (and the proton command) set it")

    def __repr__(self):
        return (f"ProfilerFlags(profiling_on={self.profiling_on}, "
                f"instrumentation_on={self.instrumentation_on}, command_line={self.command_line})")


flags = ProfilerFlags()
