"""context="python": kernels sit under the Python call path that launched them."""

import os
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
    assert all(FRAME.fullmatch(f) for f in frames), frames
    # The launch line in launch_it, called from this test; below it only Triton's own launcher
    # frames (jit.py, the driver's launcher), nothing of ours or of the test.
    launch = f"{__file__}:{launch_it.__code__.co_firstlineno + 1}@launch_it"
    assert frames.count(launch) == 1, frames
    at = frames.index(launch)
    assert frames[at - 1].startswith(__file__ + ":"), frames
    assert frames[at - 1].endswith("@test_triton_kernels_under_python_frames"), frames
    triton_dir = os.path.dirname(os.path.abspath(triton.__file__))
    assert frames[at + 1:], frames
    assert all(f.startswith(triton_dir + os.sep) for f in frames[at + 1:]), frames


def test_state_is_the_frame_above_the_kernel(out_name, read_profile):
    x = torch.ones(256, device="cuda")
    proton.start(out_name, context="python")
    with proton.state("decode"):
        inner_step(x)
    proton.finalize()
    frames, _ = frames_to(read_profile(), "elementwise")[0]
    assert frames[-1] == "decode" and frames[-2].endswith("@inner_step"), frames


def backward_in_scope(out_name, context):
    """One backward pass inside scope train_step, its forward done before the session, so
    every kernel of the session runs on autograd's device thread (no Python frames there)."""
    torch.manual_seed(0)
    x = torch.randn(512, 512, device="cuda", requires_grad=True)
    y = (x @ x).sum()
    torch.cuda.synchronize()
    proton.start(out_name, context=context)
    with proton.scope("train_step"):
        y.backward()
        z = x.detach() + 1  # one launch from this (Python) thread
    torch.cuda.synchronize()
    proton.finalize()
    return z


def test_threads_without_python_frames_fall_back_to_scopes(tmp_path, read_profile, out_name):
    # Autograd's backward runs on a C++ thread with no Python frames: its kernels must land
    # under the main thread's scope (the shadow fallback), every one of them.
    backward_in_scope(str(tmp_path / "warm"), "shadow")  # cuBLAS and allocator warm-up
    backward_in_scope(str(tmp_path / "shadow"), "shadow")
    shadow = read_profile(str(tmp_path / "shadow"))
    backward_in_scope(out_name, "python")
    prof = read_profile()
    # Shadow: the backward kernels and the add, all under train_step.
    launches = shadow.count()
    assert shadow.count(shadow.node("train_step")) == launches, shadow.render()
    # Python: the kernels of autograd's device thread under train_step; those this (Python)
    # thread launched under its own frames, never under train_step: the add, and the ones
    # backward() fills as the first gradient before it hands over (autograd's _make_grads).
    assert prof.count() == launches, prof.render()
    from_python = [(p, k) for p, k in frames_to(prof, "")
                   if any(f.endswith("@backward_in_scope") for f in p)]
    on_python_thread = sum(k["metrics"]["count"] for _, k in from_python)
    assert prof.count(prof.node("train_step")) == launches - on_python_thread, prof.render()
    assert all("train_step" not in p for p, _ in from_python), prof.render()
    adds = [(p, k) for p, k in from_python if "add" in k["frame"]["name"]]
    assert len(adds) == 1 and adds[0][1]["metrics"]["count"] == 1, prof.render()
    assert adds[0][0][-1].endswith("@backward_in_scope"), adds[0][0]
    # Everything else came from autograd's thread: more kernels than the Python thread's.
    assert launches - on_python_thread >= 4, prof.render()


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
    # The worker's path starts at its own thread's outermost frame (threading's bootstrap),
    # never at the main thread's frames (this test), and holds all three launches.
    assert len(paths) == 1, paths
    frames, kernel = paths[0]
    assert kernel["metrics"]["count"] == 3
    assert frames[-1].endswith("@inner_step") and frames[-2].endswith("@worker_fn"), frames
    assert frames[0].endswith("@_bootstrap"), frames
    assert not any(f.endswith("@test_python_threads_get_their_own_paths") for f in frames)


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


def test_kernel_under_a_user_scope_keeps_its_python_path(out_name, read_profile):
    # triton.profiler's layout (TreeData with the Python context source): the scope's name is no
    # frame; the kernel sits under the frames of its launch line, the state last; the scope is
    # a node at the frames of its entry (proton's own scope function innermost) holding its
    # metrics. Nothing sits beside the Python frames at the root.
    x = torch.ones(1024, device="cuda")
    inner_step(x)
    torch.cuda.synchronize()
    proton.start(out_name, context="python")

    def body():
        proton.enter_scope("s", metrics={"tokens": 7})
        with proton.state("st"):
            inner_step(x)
        proton.exit_scope("s")

    body()
    proton.finalize()
    prof = read_profile()
    line = body.__code__.co_firstlineno
    roots = [c["frame"]["name"] for c in prof.root["children"]]
    assert all(FRAME.fullmatch(r) for r in roots), prof.render()
    (frames, kernel), = frames_to(prof, "elementwise")
    assert kernel["metrics"]["count"] == 1
    assert "s" not in frames, frames
    assert frames[-1] == "st" and frames[-2].endswith("@inner_step"), frames
    assert frames[-3] == f"{__file__}:{line + 3}@body", frames
    scope_nodes = []

    def walk(node, path):
        for c in node.get("children", []):
            if "tokens" in c.get("metrics", {}):
                scope_nodes.append((path + [c["frame"]["name"]], c))
            walk(c, path + [c["frame"]["name"]])

    walk(prof.root, [])
    (path, node), = scope_nodes
    assert node["metrics"]["tokens"] == 7 and not node.get("children"), prof.render()
    at = path.index(f"{__file__}:{line + 1}@body")
    assert path[:at] == frames[:at], (path, frames)  # the same caller frames as the kernel
    proton_dir = os.path.dirname(os.path.abspath(proton.__file__)) + os.sep
    assert path[at + 1:] and all(f.startswith(proton_dir) for f in path[at + 1:]), path
