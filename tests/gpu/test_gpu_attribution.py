"""Kernels land under the scopes (and states) that launched them, with exact counts."""

import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402


@pytest.fixture
def xy():
    # Made before any session starts: tensor creation launches fill kernels of its own.
    x = torch.ones(16, device="cuda")
    y = torch.ones(16, device="cuda")
    torch.cuda.synchronize()
    return x, y


# "driver" is the default where CUPTI is 13+ (backend.h); "all" adds the runtime callbacks.
@pytest.mark.parametrize("callbacks", ["driver", "all"])
def test_torch_launches_counted_under_scope(out_name, read_profile, xy, monkeypatch, callbacks):
    monkeypatch.setenv("PROTON_LAUNCH_CALLBACKS", callbacks)
    x, y = xy
    proton.start(out_name)
    with proton.scope("adds"):
        for _ in range(100):
            x + y
    proton.finalize()

    prof = read_profile()
    adds = prof.node("adds")
    kernels = prof.kernels(adds)
    assert len(kernels) == 1, prof.render()
    assert kernels[0]["metrics"]["count"] == 100
    assert kernels[0]["metrics"]["time (ns)"] > 0
    assert kernels[0]["metrics"]["device_type"] == "CUDA"
    assert kernels[0]["metrics"]["device_id"] == "0"
    assert prof.kernels(direct=True) == [], "a kernel escaped its scope:\n" + prof.render()


def test_nested_scopes(out_name, read_profile, xy):
    x, y = xy
    proton.start(out_name)
    with proton.scope("outer"):
        for _ in range(3):
            x * y
        with proton.scope("inner"):
            for _ in range(5):
                x + y
            with proton.scope("innermost"):
                x - y
        x * y
    with proton.scope("sibling"):
        x + y
    proton.finalize()

    prof = read_profile()
    outer = prof.node("outer")
    assert prof.count(outer, direct=True) == 4, prof.render()
    assert prof.count(prof.node("outer", "inner"), direct=True) == 5, prof.render()
    assert prof.count(prof.node("outer", "inner", "innermost"), direct=True) == 1
    assert prof.count(outer) == 10
    assert prof.count(prof.node("sibling")) == 1
    assert prof.count() == 11


def test_enter_exit_scope_match_context_manager(out_name, read_profile, xy):
    x, y = xy
    proton.start(out_name)
    proton.enter_scope("manual")
    x + y
    proton.exit_scope()
    with proton.scope("manual"):
        x + y
    proton.finalize()
    prof = read_profile()
    assert prof.count(prof.node("manual")) == 2, prof.render()


def test_state_is_a_frame_above_the_kernel(out_name, read_profile, xy):
    x, y = xy
    proton.start(out_name)
    with proton.scope("work"):
        with proton.state("s"):
            for _ in range(4):
                x + y
        x * y  # after the state ends: directly under the scope again
    proton.finalize()

    prof = read_profile()
    state = prof.node("work", "s")
    assert prof.count(state, direct=True) == 4, prof.render()
    assert prof.count(prof.node("work"), direct=True) == 1, prof.render()


def test_several_streams(out_name, read_profile, xy):
    x, y = xy
    streams = [torch.cuda.Stream() for _ in range(3)]
    proton.start(out_name)
    for i, stream in enumerate(streams):
        with torch.cuda.stream(stream), proton.scope(f"stream{i}"):
            for _ in range(10 * (i + 1)):
                x + y
    torch.cuda.synchronize()
    proton.finalize()

    prof = read_profile()
    for i in range(len(streams)):
        assert prof.count(prof.node(f"stream{i}")) == 10 * (i + 1), prof.render()


def test_backward_kernels_land_under_callers_scope(out_name, read_profile):
    # Backward runs on autograd's device thread, which has no scopes of its own.
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 256)).cuda()
    inp = torch.randn(64, 256, device="cuda")
    model(inp).sum().backward()  # warm-up: cuBLAS handles, autograd threads
    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()

    proton.start(out_name)
    with proton.scope("forward"):
        loss = model(inp).sum()
    with proton.scope("backward"):
        loss.backward()
    proton.finalize()

    prof = read_profile()
    assert prof.count(prof.node("backward")) >= 4, prof.render()  # 2 layers x (dgrad, wgrad)
    assert prof.count(prof.node("forward")) >= 3, prof.render()
    assert prof.kernels(direct=True) == [], "a backward kernel escaped:\n" + prof.render()
    assert {c["frame"]["name"] for c in prof.root["children"]} == {"forward", "backward"}


def test_runtime_launches_enter_the_driver_callback_under_their_id(xy):
    """The premise of driver-only launch callbacks: every torch (runtime) launch, and every
    kernel of a graph replayed through cudaGraphLaunch, is seen by a driver launch callback
    carrying the correlation id its kernel records carry."""
    sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "bench"))
    from workloads import capture_add_graph

    x, y = xy
    graph = capture_add_graph(x, 10)
    # The floor is a bench instrument (bench/native, built by scripts/gpu-test).
    _proton = pytest.importorskip("_proton_bench")

    _proton._floor_start(callbacks="all", count=True)
    for _ in range(200):
        x + y
    for _ in range(5):
        graph.replay()
    torch.cuda.synchronize()
    _proton._floor_stop()
    c = _proton._floor_counts()
    assert c["kernels"] == 250, c
    assert c["runtime_callbacks"] >= 205 and c["driver_callbacks"] >= 205, c
    assert c["kernels_driver_id"] == c["kernels"], c


def test_records_of_a_quiet_program_arrive_without_a_flush(out_name, xy):
    # The periodic check flushes when tags wait 200 ms with no buffer handed over
    # (flush_policy.h): a program that launches a few kernels and then waits still gets them
    # attributed without any flush call, and a loop that keeps CUPTI's buffers filling needs none.
    import time

    x, y = xy
    proton.start(out_name)
    stats = proton._proton._processor_stats
    flushes = proton._proton._buffer_stats()["periodic_flushes"]
    records = stats()["records"]  # the processor's counts span sessions
    for _ in range(100):
        x + y
    torch.cuda.synchronize()
    deadline = time.monotonic() + 10
    while stats()["records"] - records < 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stats()["records"] - records == 100
    assert stats()["pending_tags"] == 0
    assert proton._proton._buffer_stats()["periodic_flushes"] > flushes
    proton.finalize()
