"""Kernels shared by the instrumentation bench, probe and GPU tests (need Triton and a GPU).

PROTON_BENCH_PL=triton writes the regions with triton.profiler.language instead of ours, for
runs under triton.profiler (its hook only sees its own language's records).
"""

import os

import triton
import triton.language as tl

if os.environ.get("PROTON_BENCH_PL") == "triton":
    import triton.profiler.language as pl
else:
    import proton.language as pl

pl.enable_semantic("triton")


@triton.jit
def loop_plain(x_ptr, out_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(ITERS):
        acc += tl.load(x_ptr + offs + i * BLOCK)
    tl.store(out_ptr + offs, acc)


@triton.jit
def loop_one_region(x_ptr, out_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    pl.enter_scope("loop")
    for i in range(ITERS):
        acc += tl.load(x_ptr + offs + i * BLOCK)
    pl.exit_scope("loop")
    tl.store(out_ptr + offs, acc)


@triton.jit
def loop_region_per_iter(x_ptr, out_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(ITERS):
        pl.enter_scope("iter")
        acc += tl.load(x_ptr + offs + i * BLOCK)
        pl.exit_scope("iter")
    tl.store(out_ptr + offs, acc)


# The same loops with a trip count known only at run time (as a GEMM's K loop): the plain loop
# cannot be unrolled whole either, so the ratio is what the records cost, not what unrolling
# gave the plain loop (with ITERS a constexpr, the plain loop issues all 16 loads at once and
# the instrumented one, whose records keep it a loop, one iteration's at a time).
@triton.jit
def loop_plain_rt(x_ptr, out_ptr, iters, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(iters):
        acc += tl.load(x_ptr + offs + i * BLOCK)
    tl.store(out_ptr + offs, acc)


@triton.jit
def loop_region_per_iter_rt(x_ptr, out_ptr, iters, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(iters):
        pl.enter_scope("iter")
        acc += tl.load(x_ptr + offs + i * BLOCK)
        pl.exit_scope("iter")
    tl.store(out_ptr + offs, acc)


@triton.jit
def _gemm_region(REGION: tl.constexpr, PER_STEP: tl.constexpr, IN_LOOP: tl.constexpr,
                 END: tl.constexpr):
    """The GEMMs' region marks: around the tile loop (outside it) or around each step (inside)."""
    if REGION and PER_STEP == IN_LOOP:
        if IN_LOOP and END:
            pl.exit_scope("step")
        elif IN_LOOP:
            pl.enter_scope("step")
        elif END:
            pl.exit_scope("tile_loop")
        else:
            pl.enter_scope("tile_loop")


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
           BLOCK_K: tl.constexpr, REGION: tl.constexpr, PER_STEP: tl.constexpr = False):
    """A GEMM with pointer loads: one region around the tile loop (REGION) or one around each of
    its K // BLOCK_K steps (REGION and PER_STEP: what a kernel engineer marks to see a
    software-pipelined loop's steps)."""
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = pid // grid_n, pid % grid_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * K + rk[None, :]
    b = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    _gemm_region(REGION, PER_STEP, False, False)
    for k in range(0, K, BLOCK_K):
        _gemm_region(REGION, PER_STEP, True, False)
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BLOCK_K
        b += BLOCK_K * N
        _gemm_region(REGION, PER_STEP, True, True)
    _gemm_region(REGION, PER_STEP, False, True)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@triton.jit
def matmul_tma(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, REGION: tl.constexpr, PER_STEP: tl.constexpr):
    """A Hopper GEMM as written for H100 (TMA tensor descriptors, wgmma): one region around the
    tile loop (REGION) or one around each of its steps (REGION and PER_STEP)."""
    pid = tl.program_id(0)
    grid_n = tl.cdiv(c_desc.shape[1], BLOCK_N)
    off_m = (pid // grid_n) * BLOCK_M
    off_n = (pid % grid_n) * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    _gemm_region(REGION, PER_STEP, False, False)
    for k in range(0, K, BLOCK_K):
        _gemm_region(REGION, PER_STEP, True, False)
        acc += tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]))
        _gemm_region(REGION, PER_STEP, True, True)
    _gemm_region(REGION, PER_STEP, False, True)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def busy_region(out_ptr, SPIN: tl.constexpr):
    """One region from the kernel's first instruction to its last: cycles ~ duration x clock."""
    pl.enter_scope("all")
    acc = tl.program_id(0).to(tl.float32)
    for i in range(SPIN):
        acc = acc * 1.000001 + 0.5
    tl.store(out_ptr + tl.program_id(0), acc)
    pl.exit_scope("all")


def loop_args(torch, ctas=1024, iters=16, block=256):
    x = torch.randn(ctas * block + iters * block, device="cuda")
    out = torch.empty(ctas * block, device="cuda")
    return x, out, (ctas,), dict(ITERS=iters, BLOCK=block)


def matmul_args(torch, m=4096, n=4096, k=4096):
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(m, 128) * triton.cdiv(n, 128),)
    return (a, b, c, m, n, k), grid, dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8,
                                          num_stages=3)


def matmul_tma_args(torch, m=4096, n=4096, k=4096, block_m=128, block_n=256, block_k=64):
    """Host tensor descriptors for matmul_tma (a: m x k, b: k x n, c: m x n, fp16), its grid and
    launch options (the H100 configuration of Triton's matmul tutorial)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    descs = (TensorDescriptor.from_tensor(a, [block_m, block_k]),
             TensorDescriptor.from_tensor(b, [block_k, block_n]),
             TensorDescriptor.from_tensor(c, [block_m, block_n]))
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    return (*descs, k), grid, dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                   num_warps=8, num_stages=3)


# A warp-specialized kernel (Gluon's warp_specialize, Hopper and newer): the default partition
# (4 warps: warpgroup 0) and one worker partition (4 warps: warpgroup 1) each run their own
# loop inside their own region, so a per-warp and a per-warpgroup timeline show two different
# lanes of work per CTA.
try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
except ImportError:  # a Triton without Gluon
    gluon = None

if gluon is not None:

    @gluon.jit
    def _ws_consume(x_ptr, out_ptr, ITERS: gl.constexpr, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([BLOCK // 128], [32], [4], [0])
        offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        acc = gl.zeros([BLOCK], gl.float32, layout)
        pl.enter_scope("consume")
        for i in range(ITERS):
            acc += gl.load(x_ptr + offs + i * BLOCK)
        pl.exit_scope("consume")
        gl.store(out_ptr + offs, acc)

    @gluon.jit
    def _ws_produce(x_ptr, out_ptr, ITERS: gl.constexpr, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([BLOCK // 128], [32], [4], [0])
        offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        acc = gl.zeros([BLOCK], gl.float32, layout)
        pl.enter_scope("produce")
        for i in range(ITERS):
            acc += gl.load(x_ptr + offs + (ITERS - 1 - i) * BLOCK) * 2.0
        pl.exit_scope("produce")
        gl.store(out_ptr + offs + gl.num_programs(0) * BLOCK, acc)

    @gluon.jit
    def warp_specialized(x_ptr, out_ptr, ITERS: gl.constexpr, BLOCK: gl.constexpr):
        gl.warp_specialize([(_ws_consume, (x_ptr, out_ptr, ITERS, BLOCK)),
                            (_ws_produce, (x_ptr, out_ptr, ITERS, BLOCK))], [4], [96])


def warp_specialized_args(torch, ctas=32, iters=16, block=256):
    """x, out (twice the CTAs' blocks: both partitions store), grid, constexprs; num_warps=4
    for the default partition (the worker's 4 come on top: 8 warps per CTA)."""
    x = torch.randn(ctas * block + iters * block, device="cuda")
    out = torch.empty(2 * ctas * block, device="cuda")
    return x, out, (ctas,), dict(ITERS=iters, BLOCK=block)
