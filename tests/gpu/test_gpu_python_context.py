"""context="python": kernels sit under the Python call path that launched them."""

import re
import threading

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402
from proton import _proton  # noqa: E402

if not _proton._python_frames_supported():
    pytest.skip("no frame walker for this Python", allow_module_level=True)

FRAME = re.compile(r".+:\d+@.+")


def frames_to(prof, kernel_match):
    """Every root-to-kernel path whose kernel name contains `kernel_match`."""
    out = []

    def walk(node, path):
        for c in node.get("children", []):
            p = path + [c["frame"]["name"]]
            if "device_id" in c.get("metrics", {}) and kernel_match in c["frame"]["name"]:
                out.append((p[:-1], c))
            walk(c, p)

    walk(prof.root, [])
    return out


def inner_step(x):
    return x + 1  # the add kernel is launched here


def outer_step(x):
    return inner_step(x)


def test_torch_kernels_under_python_frames(out_name, read_profile):
    x = torch.ones(1024, device="cuda")
    inner_step(x)
    torch.cuda.synchronize()
    proton.start(out_name, context="python")
    for _ in range(10):
        outer_step(x)
    proton.finalize()
    prof = read_profile()
    paths = frames_to(prof, "elementwise")
    assert paths, prof.render()
    frames, kernel = max(paths, key=lambda p: p[1]["metrics"]["count"])
    assert kernel["metrics"]["count"] == 10
    assert all(FRAME.fullmatch(f) for f in frames), frames
    assert frames[-1].endswith("@inner_step") and frames[-2].endswith("@outer_step"), frames
    assert frames[-1].startswith(__file__ + ":")
    assert frames[-3].endswith("@test_torch_kernels_under_python_frames")


def test_triton_kernels_under_python_frames(out_name, read_profile):
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    def launch_it(x):
        add_one[(4,)](x, x.numel(), BLOCK=256)

    x = torch.zeros(1024, device="cuda")
    launch_it(x)
    torch.cuda.synchronize()
    proton.start(out_name, context="python")
    for _ in range(5):
        launch_it(x)
    proton.finalize()
    prof = read_profile()
    paths = frames_to(prof, "add_one")
    assert len(paths) == 1, prof.render()
    frames, kernel = paths[0]
    assert kernel["metrics"]["count"] == 5
    assert any(f.endswith("@launch_it") for f in frames), frames
    assert all(FRAME.fullmatch(f) for f in frames), frames


def test_state_is_the_frame_above_the_kernel(out_name, read_profile):
    x = torch.ones(256, device="cuda")
    proton.start(out_name, context="python")
    with proton.state("decode"):
        inner_step(x)
    proton.finalize()
    frames, _ = frames_to(read_profile(), "elementwise")[0]
    assert frames[-1] == "decode" and frames[-2].endswith("@inner_step"), frames


def test_threads_without_python_frames_fall_back_to_scopes(out_name, read_profile):
    # Autograd's backward runs on a C++ thread with no Python frames: its kernels must still
    # land somewhere sensible (the main thread's scopes), never be lost.
    x = torch.randn(512, 512, device="cuda", requires_grad=True)
    proton.start(out_name, context="python")
    with proton.scope("train_step"):
        y = (x @ x).sum()
        y.backward()
    proton.finalize()
    prof = read_profile()
    # Forward kernels: under Python frames. Backward kernels (autograd's thread): under the
    # main thread's scope, the shadow fallback.
    assert frames_to(prof, "gemm") or frames_to(prof, "Kernel"), prof.render()
    assert prof.has("train_step"), prof.render()
    assert prof.count(prof.node("train_step")) >= 1, prof.render()


def test_python_threads_get_their_own_paths(out_name, read_profile):
    x = torch.ones(256, device="cuda")

    def worker_fn():
        for _ in range(3):
            inner_step(x)
        torch.cuda.synchronize()

    proton.start(out_name, context="python")
    t = threading.Thread(target=worker_fn)
    t.start()
    t.join()
    proton.finalize()
    paths = frames_to(read_profile(), "elementwise")
    assert any(any(f.endswith("@worker_fn") for f in p) for p, _ in paths), paths


def test_launch_loop_at_depth_20_resolves_no_frame(out_name, read_profile):
    # Its cost is measured in bench/ (proton_python on tiny_torch_deep); here, what keeps it
    # low: 2,000 launches from one line 20 frames deep walk the stack but resolve no frame.
    x = torch.ones(16, device="cuda")
    resolved = proton._proton._python_context_resolved_frames

    def deep(n):
        if n:
            return deep(n - 1)
        x.add_(1)  # warm: the first launch from here resolves the stack
        before = resolved()
        for _ in range(2000):
            x.add_(1)
        return resolved() - before

    proton.start(out_name, context="python")
    extra = deep(18)
    proton.finalize()
    assert extra <= 1, extra  # the loop's own line differs from the warm-up line once
    paths = frames_to(read_profile(), "elementwise")
    assert sum(node["metrics"]["count"] for _, node in paths) == 2001, paths
