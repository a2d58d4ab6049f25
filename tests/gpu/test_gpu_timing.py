"""Kernel times agree with CUDA-event timing of the same region on a GPU-bound case."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402

SIZE = 8192
GEMMS = 20  # ~1.5 ms each on an H100: the region is ~30 ms, so 2% is ~600 us


def test_kernel_time_matches_cuda_events(out_name, read_profile):
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    for _ in range(3):  # cuBLAS heuristics and clocks settle outside the session
        torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    proton.start(out_name)
    with proton.scope("spin"):
        # Keeps the GPU busy while the host queues the region, so the events bracket kernels
        # back to back and not the host's launch latency.
        torch.cuda._sleep(50_000_000)
    with proton.scope("gemm"):
        start.record()
        for _ in range(GEMMS):
            torch.matmul(a, b, out=out)
        end.record()
    torch.cuda.synchronize()
    proton.finalize()

    prof = read_profile()
    gemm = prof.node("gemm")
    assert prof.count(gemm) >= GEMMS, prof.render()
    event_ns = start.elapsed_time(end) * 1e6
    kernel_ns = prof.time_ns(gemm)
    assert kernel_ns == pytest.approx(event_ns, rel=0.02), (
        f"kernels {kernel_ns / 1e6:.3f} ms vs events {event_ns / 1e6:.3f} ms\n{prof.render()}")
