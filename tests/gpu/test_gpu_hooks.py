"""hook="triton": launch_metadata renames Triton kernels and attaches flops/bytes."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
triton = pytest.importorskip("triton")

import threading  # noqa: E402

import triton.language as tl  # noqa: E402

import proton  # noqa: E402

CALLS = {"scale": 0}


def scale_metadata(grid, metadata, args):
    CALLS["scale"] += 1
    n = args["n"]
    # A tensor op inside the metadata function: its kernel must not pollute the tree.
    helper = (args["x_ptr"][:1] * 0).sum()
    return {"name": f"scale_n{n}", "flops32": float(n), "bytes": 8 * n, "helper_value": helper}


@triton.jit(launch_metadata=scale_metadata)
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit(launch_metadata=lambda grid, metadata, args: {"name": "other_op", "bytes": 4})
def other_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def scale(x):
    scale_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256)


def other(x):
    other_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256)


@pytest.fixture
def x():
    t = torch.ones(1024, device="cuda")
    scale(t)
    other(t)  # compile outside sessions
    torch.cuda.synchronize()
    return t


@pytest.fixture(autouse=True)
def _reset_filters():
    yield
    proton.hooks.LaunchHook().configure()


def test_renamed_kernels_carry_flops_and_bytes(x, out_name, read_profile):
    proton.start(out_name, hook="triton")
    with proton.scope("work"):
        for _ in range(4):
            scale(x)
    proton.finalize()
    prof = read_profile()
    node = prof.node("work", "scale_n1024")
    m = node["metrics"]
    assert m["count"] == 4 and m["time (ns)"] > 0, prof.render()
    assert m["flops32"] == pytest.approx(4 * 1024.0)
    assert m["bytes"] == 4 * 8 * 1024
    assert isinstance(m["bytes"], int)
    assert not prof.has("work", "scale_kernel"), prof.render()


def test_helper_kernels_go_under_the_metadata_frame(x, out_name, read_profile):
    proton.start(out_name, hook="triton")
    with proton.scope("work"):
        scale(x)
    proton.finalize()
    prof = read_profile()
    work = prof.node("work")
    direct = [c["frame"]["name"] for c in work.get("children", [])]
    assert "scale_n1024" in direct, prof.render()
    assert "__proton_launch_metadata" in direct, prof.render()
    helpers = prof.kernels(prof.node("work", "__proton_launch_metadata"))
    assert helpers and all("scale" not in k["frame"]["name"] for k in helpers), prof.render()
    # Only the renamed kernel and the metadata frame: no stray helper kernels beside them.
    assert set(direct) == {"scale_n1024", "__proton_launch_metadata"}, prof.render()


def test_filters_skip_metadata_calls(x, out_name, read_profile):
    proton.hooks.LaunchHook().configure(include="other_.*")
    CALLS["scale"] = 0
    proton.start(out_name, hook="triton")
    scale(x)
    other(x)
    proton.finalize()
    assert CALLS["scale"] == 0
    prof = read_profile()
    assert prof.has("scale_kernel") and prof.has("other_op"), prof.render()
    assert not prof.has("__proton_launch_metadata"), prof.render()


def test_without_hook_kernels_keep_their_names(x, out_name, read_profile):
    CALLS["scale"] = 0
    proton.start(out_name)
    scale(x)
    proton.finalize()
    assert CALLS["scale"] == 0
    assert read_profile().has("scale_kernel")


def test_threads_launching_at_once(x, out_name, read_profile):
    xs = [torch.ones(1024, device="cuda") for _ in range(4)]
    proton.start(out_name, hook="triton")

    def worker(i):
        for _ in range(25):
            (scale if i % 2 else other)(xs[i])
        torch.cuda.synchronize()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    proton.finalize()
    prof = read_profile()
    assert prof.count(match="scale_n1024") == 50, prof.render()
    assert prof.count(match="other_op") == 50, prof.render()
    assert prof.count(match="scale_kernel") == 0 and prof.count(match="other_kernel") == 0


DEVICE_VALUES = {}


def device_metadata(grid, metadata, args):
    # Values that live on the GPU: reading one (.item()) would wait for the device.
    return {"name": "dev_scale", "flops": DEVICE_VALUES["flops"],
            "tokens": DEVICE_VALUES["tokens"], "bytes": 16}


@triton.jit(launch_metadata=device_metadata)
def dev_scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def dev_scale(x):
    dev_scale_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256)


@pytest.fixture
def dev_x():
    DEVICE_VALUES["flops"] = torch.tensor(2.5, device="cuda")
    DEVICE_VALUES["tokens"] = torch.tensor(3, device="cuda", dtype=torch.int32)
    t = torch.ones(1024, device="cuda")
    dev_scale(t)  # compile outside sessions
    torch.cuda.synchronize()
    return t


def test_device_tensor_metadata_is_summed_without_host_sync(dev_x, out_name, read_profile):
    proton.start(out_name, hook="triton")
    proton.metric.preallocate()
    # torch raises on any synchronizing CUDA call (an .item(), a device-to-host copy) meanwhile.
    torch.cuda.set_sync_debug_mode("error")
    try:
        with proton.scope("work"):
            for _ in range(10):
                dev_scale(dev_x)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    proton.finalize()
    prof = read_profile()
    m = prof.node("work", "dev_scale")["metrics"]
    assert m["count"] == 10, prof.render()
    assert m["flops"] == pytest.approx(25.0)
    assert m["tokens"] == 30 and isinstance(m["tokens"], int)
    assert m["bytes"] == 160
    # The accumulator adds are kernels of ours, under the hidden metadata frame only.
    direct = {c["frame"]["name"] for c in prof.node("work").get("children", [])}
    assert direct <= {"dev_scale", "__proton_launch_metadata"}, prof.render()


def test_device_tensor_metadata_under_cuda_graph_capture_adds_per_replay(dev_x, out_name,
                                                                         read_profile):
    proton.start(out_name, hook="triton")
    proton.metric.preallocate()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch.cuda.graph recommends
        dev_scale(dev_x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dev_scale(dev_x)
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(5):
            g.replay()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    proton.finalize()
    prof = read_profile()
    # The warm-up launch (eager) and the 5 replayed ones, wherever the replays are placed: the
    # metric sums equal the launches' values, each replay's add captured with the kernel.
    nodes = [k for k in prof.kernels(prof.root) if k["frame"]["name"] == "dev_scale"]
    assert sum(k["metrics"]["count"] for k in nodes) == 6, prof.render()
    assert sum(k["metrics"]["flops"] for k in nodes) == pytest.approx(6 * 2.5)
    assert sum(k["metrics"]["tokens"] for k in nodes) == 18
    for k in nodes:
        assert k["metrics"]["tokens"] == 3 * k["metrics"]["count"], prof.render()
