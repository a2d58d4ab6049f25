"""The slow-line kernel of PC sampling's checks, shared by bench/pc_sampling.py and
tests/gpu/test_gpu_pc_sampling.py.

One line of the kernel is a long chain of dependent global-memory gathers: it must hold the
most samples, with memory stalls leading. The kernel lives in a file of its own (written by
`load`) so that callers know its line numbers.
"""

import importlib.util
import pathlib
import textwrap

SOURCE = textwrap.dedent('''
    import triton
    import triton.language as tl

    @triton.jit
    def slow_line_kernel(idx_ptr, src_ptr, out_ptr, n, iters, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        i = tl.load(idx_ptr + offs, mask=mask, other=0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for _ in range(iters):
            v = tl.load(src_ptr + i, mask=mask, other=0.0); i = (i + v.to(tl.int32) + 7919) % n  # SLOW
            acc += v
        tl.store(out_ptr + offs, acc, mask=mask)
''').lstrip("\n")

# The gather and the use that waits for it share a line: a stall is sampled on the waiting
# instruction (the use), so the slow line is where the loaded value is consumed (measured on an
# H100: a gather alone on its line left its samples on the next line).
SLOW_LINE = next(n for n, line in enumerate(SOURCE.splitlines(), 1) if "# SLOW" in line)
FILE_NAME = "slow_line_kernel.py"
MEMORY_STALLS = ("long_scoreboard", "lg_throttle", "short_scoreboard", "mio_throttle",
                 "tex_throttle", "drain", "imc_miss")


def slow_line_location():
    """The start of the slow line's location name: `slow_line_kernel.py:<line>@`."""
    return f"{FILE_NAME}:{SLOW_LINE}@"


def load(folder, n=1 << 20):
    """Writes the kernel into `folder`, compiles it, runs it once (so that it is loaded before
    any session: its lines then come from Triton's cache) and returns run(iters), which
    launches it over n elements without synchronizing."""
    import torch

    path = pathlib.Path(folder) / FILE_NAME
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("slow_line_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    idx = torch.randint(0, n, (n,), device="cuda", dtype=torch.int32)
    src = torch.rand(n, device="cuda")
    out = torch.empty(n, device="cuda")

    def run(iters):
        mod.slow_line_kernel[(n // 1024,)](idx, src, out, n, iters, BLOCK=1024)

    run(1)
    torch.cuda.synchronize()
    return run
