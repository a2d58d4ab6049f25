"""A Triton driver that reports an H100 target, so instrumented kernels compile without a GPU.

Triton's driver selection fails with "0 active drivers" on a machine without one; the
instrumentation hook only asks the active driver for its target and shared-memory size.
"""

import contextlib


class StubDriver:
    max_shared_mem = 232448

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def is_active(self):
        return True


@contextlib.contextmanager
def stub_driver():
    import triton

    config = triton.runtime.driver
    previous = getattr(config, "_active", None)
    config.set_active(StubDriver())
    try:
        yield
    finally:
        config._active = previous
