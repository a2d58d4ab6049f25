"""A @triton.jit kernel appears under its scope with its own name."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402

import proton  # noqa: E402


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


def launch(x, y, out):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)


def test_triton_kernel_under_scope(out_name, read_profile):
    x = torch.randn(4096, device="cuda")
    y = torch.randn(4096, device="cuda")
    out = torch.empty_like(x)
    launch(x, y, out)  # compile outside the session
    torch.cuda.synchronize()

    proton.start(out_name)
    with proton.scope("triton_add"):
        for _ in range(20):
            launch(x, y, out)
    with proton.scope("outer"), proton.scope("inner"):
        launch(x, y, out)
    proton.finalize()
    torch.testing.assert_close(out, x + y)

    prof = read_profile()
    kernels = prof.kernels(prof.node("triton_add"))
    assert [k["frame"]["name"] for k in kernels] == ["add_kernel"], prof.render()
    assert kernels[0]["metrics"]["count"] == 20
    assert kernels[0]["metrics"]["time (ns)"] > 0
    assert prof.count(prof.node("outer", "inner"), match="add_kernel", direct=True) == 1
