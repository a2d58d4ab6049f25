"""Metric values on the GPU: device tensors summed on the device (also under CUDA-graph capture),
vector metrics, and Hook objects on real Triton launches (the GPU halves of test_conformance.py).

Run: python -m pytest -v tests/gpu/test_gpu_metrics.py
"""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402
from proton import metric as proton_metric  # noqa: E402


def add_one(x):
    x.add_(1)


def metadata_frames(node, out=None):
    """Every node under a launch-metadata frame (where the accumulator adds must land)."""
    out = [] if out is None else out
    for c in node.get("children", []):
        if c["frame"]["name"].startswith(proton.hooks.COMPUTE_METADATA_SCOPE_NAME):
            out.append(c)
        metadata_frames(c, out)
    return out


def test_device_tensor_metrics_are_summed_without_host_sync(out_name, read_profile):
    x = torch.zeros(1024, device="cuda")
    loss = torch.tensor(0.25, device="cuda")
    tokens = torch.tensor(3, device="cuda", dtype=torch.int32)
    proton.start(out_name)
    # torch raises on any synchronizing CUDA call (an .item(), a device-to-host copy) meanwhile.
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(10):
            with proton.scope("step", {"loss": loss, "tokens": tokens}):
                add_one(x)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    proton.finalize()
    p = read_profile()
    step = p.node("step")
    assert step["metrics"]["loss"] == pytest.approx(2.5)
    assert step["metrics"]["tokens"] == 30 and isinstance(step["metrics"]["tokens"], int)
    # The accumulator adds are kernels of ours: hidden under the metadata frame, never beside
    # the user's own kernel.
    user = [k["frame"]["name"] for k in p.kernels(step, direct=True)]
    assert len(user) == 1, p.render()
    assert p.count(step, direct=True) == 10
    hidden = metadata_frames(step)
    assert hidden and all(p.kernels(h) for h in hidden), p.render()
    # start()'s accumulator allocation (a fill kernel) is hidden too, not a kernel at the root.
    assert not p.kernels(p.root, direct=True), p.render()


def test_device_tensor_metrics_under_cuda_graph_capture_add_per_replay(out_name, read_profile):
    x = torch.zeros(1024, device="cuda")
    val = torch.tensor(1.5, device="cuda")
    n = torch.tensor(2, device="cuda")
    proton.start(out_name)
    proton_metric.preallocate()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch.cuda.graph recommends
        add_one(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        with proton.scope("captured", {"val": val, "n": n}):
            add_one(x)
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    proton.finalize()
    captured = read_profile().node("captured")
    # The capture itself does not run the add; each of the 5 replays adds once.
    assert captured["metrics"]["val"] == pytest.approx(7.5)
    assert captured["metrics"]["n"] == 10


def test_first_accumulator_needed_during_capture_is_a_clear_error_and_capture_survives(
        out_name, read_profile):
    # Measured on an H100 (batch 1): allocating during capture, even on a side stream, fails
    # and invalidates the capture. Proton refuses before any CUDA call instead.
    for table in (proton_metric._slabs, proton_metric._slots, proton_metric._next,
                  proton_metric._folded):
        table.clear()
    x = torch.zeros(16, device="cuda")
    val = torch.tensor(4.0, device="cuda", dtype=torch.float16)
    add_one(x)
    torch.cuda.synchronize()
    proton.start(out_name)
    proton_metric._slabs.clear()  # undo start()'s preallocation
    g = torch.cuda.CUDAGraph()
    with pytest.raises(proton_metric.CaptureAllocationError, match="preallocate"):
        with torch.cuda.graph(g):  # its capture_end must succeed: the capture is still valid
            with proton.scope("late", {"v": val}):
                add_one(x)
    proton_metric.preallocate()
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        with proton.scope("late", {"v": val}):
            add_one(x)
    for _ in range(3):
        g2.replay()
    proton.finalize()
    assert read_profile().node("late")["metrics"]["v"] == pytest.approx(12.0)


def test_session_started_before_cuda_init_allocates_before_capture(run_script, out_name,
                                                               read_profile):
    r = run_script(f"""
import torch, proton
from proton import metric
proton.start({out_name!r})
assert not torch.cuda.is_initialized()
x = torch.zeros(16, device="cuda")          # CUDA initializes here
val = torch.tensor(2.0, device="cuda")
x.add_(1)
with proton.scope("warm", {{"v": val}}):    # the first metric outside capture allocates
    pass
assert metric._slabs, "no accumulator allocated before the capture"
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    with proton.scope("s", {{"v": val}}):
        x.add_(1)
for _ in range(3):
    g.replay()
proton.finalize()
print("ok")
""")
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
    assert read_profile().node("s")["metrics"]["v"] == pytest.approx(6.0)


def test_data_get_reads_device_metrics_incrementally(out_name):
    s = proton.start(out_name)
    one = torch.tensor(1.0, device="cuda")
    with proton.scope("s", {"m": one}):
        pass
    first = proton.data.get(s)
    with proton.scope("s", {"m": one}):
        pass
    second = proton.data.get(s)
    pick = lambda tree: next(c for c in tree[0]["children"] if c["frame"]["name"] == "s")  # noqa
    assert pick(first)["metrics"]["m"] == 1.0
    assert pick(second)["metrics"]["m"] == 2.0  # not 3: folded values are not added twice


def test_property_tensor_metric_keeps_the_last_value(out_name, read_profile):
    proton.start(out_name)
    for v in (3.0, 9.0, 5.0):
        with proton.scope("p", {"lr (pty)": torch.tensor(v, device="cuda")}):
            pass
    proton.finalize()
    assert read_profile().node("p")["metrics"]["lr"] == 5.0


def test_bad_device_tensors_name_the_metric(out_name):
    proton.start(out_name)
    with pytest.raises(TypeError, match="metric 'hist'"):
        with proton.scope("s", {"hist": torch.ones(4, device="cuda")}):
            pass
    with proton.scope("s", {"t": torch.tensor(1.0, device="cuda")}):
        pass
    with pytest.raises(RuntimeError, match="Metric value type mismatch.*'t'"):
        with proton.scope("s", {"t": torch.tensor(1, device="cuda")}):
            pass


def test_vector_metrics_beside_kernels(out_name, read_profile):
    x = torch.zeros(8, device="cuda")
    proton.start(out_name)
    for _ in range(2):
        with proton.scope("v", {"per_sm": [1, 2, 3], "frac": [0.25, 0.5]}):
            add_one(x)
    proton.finalize()
    m = read_profile().node("v")["metrics"]
    assert m["per_sm"] == [2, 4, 6] and m["frac"] == [0.5, 1.0]


triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402


@triton.jit
def _inc_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


class Recorder(proton.hooks.Hook):
    priority = 7

    def __init__(self):
        self.entered, self.exited, self.loaded, self.unloaded = [], [], [], []
        self.active = False

    def init_handle(self, module, function, name, metadata_group, hash):
        self.loaded.append(name)

    def destroy_handle(self, module, function, name, metadata_group, hash):
        self.unloaded.append(name)

    def enter(self, metadata):
        self.entered.append(metadata.data["name"])

    def exit(self, metadata):
        self.exited.append(metadata.data["name"])

    def activate(self):
        self.active = True

    def deactivate(self):
        self.active = False


def test_hook_object_sees_real_triton_launches(out_name, read_profile):
    x = torch.zeros(1024, device="cuda")
    h = Recorder()
    s = proton.start(out_name, hook=h)
    assert h.active
    with proton.scope("hooked"):
        for _ in range(3):
            _inc_kernel[(4,)](x, x.numel(), BLOCK=256)
    torch.cuda.synchronize()
    assert h.entered == h.exited == ["_inc_kernel"] * 3
    proton.deactivate(s)
    assert not h.active
    _inc_kernel[(4,)](x, x.numel(), BLOCK=256)
    assert len(h.entered) == 3
    proton.finalize()
    p = read_profile()
    assert p.count(p.node("hooked"), match="_inc_kernel") == 3


def test_hook_object_together_with_launch_metadata(out_name, read_profile):
    x = torch.zeros(1024, device="cuda")
    h = Recorder()
    proton.start(out_name, hook="triton")
    proton.start(out_name + "_b", hook=h)
    with proton.scope("both"):
        _inc_kernel[(4,)](x, x.numel(), BLOCK=256)
    torch.cuda.synchronize()
    assert h.entered == ["_inc_kernel"]
    proton.finalize()
    p = read_profile()
    assert p.count(p.node("both"), match="_inc_kernel") == 1
