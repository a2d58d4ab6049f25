"""hook="triton" on a CPU: Triton's hook plumbing with real LazyDicts, no kernel launched.

Triton installs from PyPI on a CPU machine; its runtime hooks (triton.knobs.runtime) and
LazyDict work without a GPU, so everything up to the launch is checked here: what the enter
hook attaches (the op pending on the thread), filters, the metadata frame, threads. The
kernel-side result (renamed nodes carrying flops/bytes) is in tests/gpu/test_gpu_hooks.py and
in the C++ test launch_ops_test.cpp.
"""

import threading

import pytest

import proton
from proton import _proton, hooks

pytestmark = pytest.mark.triton  # scripts/test runs these against each supported Triton

triton = pytest.importorskip("triton")
LazyDict = pytest.importorskip("triton.compiler").LazyDict
knobs = triton.knobs


def lazy(name="add_kernel", fn=None, args=((1, 1, 1), None, {})):
    d = LazyDict({"name": name, "function": 0x1234, "stream": 0})
    if fn is not None:
        d.add(fn, args)
    return d


@pytest.fixture
def session(tmp_path):
    s = proton.start(str(tmp_path / "p"), hook="triton")
    yield s
    hooks.LaunchHook().configure()
    proton.finalize()


def enter_and_read(d):
    """Runs Triton's own enter hook chain; returns the op left pending on this thread."""
    knobs.runtime.launch_enter_hook(d)
    op = _proton._pending_launch_op()
    return op, (_proton._launch_op(op) if op else None)


def test_hook_is_installed_for_the_session_and_removed_at_finalize(tmp_path):
    assert _proton._launch_enter not in knobs.runtime.launch_enter_hook.calls
    proton.start(str(tmp_path / "p"), hook="triton")
    assert _proton._launch_enter in knobs.runtime.launch_enter_hook.calls
    assert _proton._launch_exit in knobs.runtime.launch_exit_hook.calls
    proton.finalize()
    assert _proton._launch_enter not in knobs.runtime.launch_enter_hook.calls
    assert _proton._launch_exit not in knobs.runtime.launch_exit_hook.calls


def test_metadata_becomes_name_and_typed_metrics(session):
    def md(grid, metadata, args):
        return {"name": "matmul_64x64", "flops16": 2 * 64**3, "bytes": 3.0 * 64 * 64 * 2,
                "flops": 1.5, "tiles": 4, "note": "not a number", "stream": 7}

    op, (name, metrics) = enter_and_read(lazy("matmul_kernel", md))
    assert op != 0
    assert name == "matmul_64x64"
    assert metrics == {"flops16": float(2 * 64**3), "bytes": 3 * 64 * 64 * 2, "flops": 1.5,
                       "tiles": 4}
    assert isinstance(metrics["flops16"], float) and isinstance(metrics["bytes"], int)
    knobs.runtime.launch_exit_hook(lazy())
    assert _proton._pending_launch_op() == 0


def test_metadata_keys_naming_kernel_columns_are_refused_with_one_warning(session):
    # "count" or "time (ns)" would be a second key beside proton's own on the kernel node.
    def md(grid, metadata, args):
        return {"count": 3, "time (ns)": 1.0, "device_id": 1, "bytes": 8}

    with pytest.warns(UserWarning) as caught:
        op, (name, metrics) = enter_and_read(lazy("k2", md))
    assert metrics == {"bytes": 8}
    messages = [str(w.message) for w in caught]
    assert len(messages) == 3 and all("names a metric proton records" in m for m in messages)
    assert {m.split("'")[1] for m in messages} == {"count", "time (ns)", "device_id"}
    knobs.runtime.launch_exit_hook(lazy())
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second launch warns no more
        assert enter_and_read(lazy("k2", md))[1][1] == {"bytes": 8}
    knobs.runtime.launch_exit_hook(lazy())


def test_same_metadata_reuses_one_op(session):
    md = lambda grid, metadata, args: {"name": "k", "bytes": 8}  # noqa: E731
    before = _proton._launch_ops()
    ops = {enter_and_read(lazy("k", md))[0] for _ in range(100)}
    assert len(ops) == 1
    assert _proton._launch_ops() - before <= 1


def test_kernels_without_metadata_function_attach_nothing(session):
    assert enter_and_read(lazy("plain"))[0] == 0


def test_no_active_session_no_work(tmp_path):
    calls = []
    s = proton.start(str(tmp_path / "p"), hook="triton")
    proton.deactivate(s)
    assert enter_and_read(lazy("k", lambda *a: calls.append(1) or {"bytes": 1}))[0] == 0
    assert calls == []
    proton.finalize()


def test_metadata_function_runs_under_the_metadata_frame(session):
    seen = []

    def md(grid, metadata, args):
        seen.append(_proton.state())
        return {"bytes": 1}

    with proton.state("user_state"):
        enter_and_read(lazy("k", md))
        assert _proton.state() == "user_state"
    assert seen == [hooks.COMPUTE_METADATA_SCOPE_NAME] == ["__proton_launch_metadata"]
    assert _proton.state() == ""


def test_metadata_function_errors_propagate_and_restore_state(session):
    def md(grid, metadata, args):
        raise KeyError("missing arg")

    with pytest.raises(KeyError):
        enter_and_read(lazy("k", md))
    assert _proton.state() == ""


def test_nested_launches_inside_metadata_are_not_hooked(session):
    inner = []

    def md(grid, metadata, args):
        # A Triton kernel launched by the metadata function: Triton calls the hooks again.
        knobs.runtime.launch_enter_hook(lazy("inner", lambda *a: inner.append(1) or {}))
        knobs.runtime.launch_exit_hook(lazy("inner"))
        return {"name": "outer_op", "bytes": 2}

    op, (name, _) = enter_and_read(lazy("outer", md))
    assert name == "outer_op" and inner == []


@pytest.mark.parametrize("include, exclude, runs", [
    ("matmul_.*", None, {"matmul_fp16", "matmul_fp8"}),
    (None, ".*_fp8", {"matmul_fp16", "add_kernel"}),
    ("matmul_.*", ".*_fp8", {"matmul_fp16"}),
])
def test_filters_skip_metadata_functions(session, include, exclude, runs):
    hooks.LaunchHook().configure(include=include, exclude=exclude)
    ran = set()
    for kernel in ["matmul_fp16", "matmul_fp8", "add_kernel"]:
        for _ in range(3):
            op, _ = enter_and_read(lazy(kernel, lambda g, m, a, k=kernel: ran.add(k) or {"x": 1}))
            assert (op != 0) == (kernel in runs)
    assert ran == runs


def test_metric_type_change_is_a_clear_error(session):
    enter_and_read(lazy("k", lambda *a: {"typed_metric": 1}))
    # triton.profiler's phrase; a RuntimeError as there (and a TypeError, as before).
    with pytest.raises(RuntimeError, match="Metric value type mismatch.*typed_metric.*int.*float"):
        enter_and_read(lazy("k", lambda *a: {"typed_metric": 1.5}))


def test_threads_keep_their_own_pending_op(session):
    barrier = threading.Barrier(4)
    got = {}

    def worker(i):
        md = lambda g, m, a: {"name": f"op{i}", "bytes": i}  # noqa: E731
        barrier.wait()
        for _ in range(200):
            op, content = enter_and_read(lazy(f"k{i}", md))
            assert content == (f"op{i}", {"bytes": i})
            knobs.runtime.launch_exit_hook(lazy())
        got[i] = content

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {i: (f"op{i}", {"bytes": i}) for i in range(4)}


def test_launch_hook_instance_is_accepted_and_unknown_hooks_rejected(tmp_path):
    proton.start(str(tmp_path / "p"), hook=hooks.LaunchHook())
    assert _proton._launch_enter in knobs.runtime.launch_enter_hook.calls
    proton.finalize()
    with pytest.raises(ValueError, match="Unsupported hook"):
        proton.start(str(tmp_path / "q"), hook="torch")


def test_other_hooks_added_later_still_run_and_ours_too(session):
    rt = knobs.runtime
    theirs = []
    other = lambda d: theirs.append(d.data["name"])  # noqa: E731
    rt.launch_enter_hook.add(other)
    try:
        op, (name, _) = enter_and_read(lazy("k", lambda *a: {"name": "renamed", "bytes": 1}))
        assert len(theirs) == 1 and name == "renamed"
    finally:
        rt.launch_enter_hook.remove(other)
    proton.finalize()
    assert rt.launch_enter_hook.calls == [] and type(rt.launch_enter_hook) is triton.knobs.HookChain


def test_launch_id_and_op_name_set_for_every_launch_on_every_thread(session):
    # triton.profiler sets proton.hooks.launch.id (a new number) and op_name (the evaluated
    # name) at every launch its filter lets through, with or without a metadata function, in the
    # launching thread's context; they keep their values after the launch exits.
    from proton.hooks import launch

    got = {}
    barrier = threading.Barrier(4)
    mine = launch.id.get(), launch.op_name.get()  # this thread's last launch, from earlier tests

    def worker(i):
        assert launch.id.get() is None  # a new thread starts without a launch
        barrier.wait()
        ids = []
        for n in range(50):
            if n % 2:
                d = lazy(f"k{i}", lambda grid, md, args, i=i: {"name": f"renamed{i}"})
            else:
                d = lazy(f"k{i}")  # no launch_metadata function
            knobs.runtime.launch_enter_hook(d)
            ids.append(launch.id.get())
            knobs.runtime.launch_exit_hook(d)
            assert launch.id.get() == ids[-1]  # kept after exit, as Triton's
            assert launch.op_name.get() == (f"renamed{i}" if n % 2 else f"k{i}")
        got[i] = ids

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [x for ids in got.values() for x in ids]
    assert len(got) == 4 and all(isinstance(x, int) for x in every)
    assert len(set(every)) == 200  # one number per launch, across threads
    assert all(ids == sorted(ids) for ids in got.values())
    assert (launch.id.get(), launch.op_name.get()) == mine  # other threads' launches are theirs
    hooks.LaunchHook().configure(exclude="skipped")
    knobs.runtime.launch_enter_hook(lazy("skipped"))  # the filter rejects it: no launch, as Triton
    assert (launch.id.get(), launch.op_name.get()) == mine
    token = launch.id.set(None)
    assert launch.id.get() is None and launch.id.get(3) == 3
    launch.id.set(7)
    assert launch.id.get() == 7
    launch.id.reset(token)
    assert launch.id.get() == mine[0]


def test_device_tensor_metadata_is_summed_on_the_device_never_read_per_launch(session, monkeypatch):
    # CPU tensors stand in for device tensors here (proton.metric's _HOST_DEVICES emptied): each
    # launch adds its value to an accumulator slot, and the op names the slot; no .item().
    torch = pytest.importorskip("torch")
    from proton import metric
    monkeypatch.setattr(metric, "_HOST_DEVICES", ())
    for table in ("_slabs", "_slots", "_next", "_folded", "_launch_slots"):
        monkeypatch.setattr(metric, table, {})
    monkeypatch.setattr(metric, "_launch_keys", [])

    def no_item(self):
        raise AssertionError("item() waits for the device")

    monkeypatch.setattr(torch.Tensor, "item", no_item)
    states = []
    real_add = torch.Tensor.add_

    def spy(self, other, *a, **k):
        states.append(_proton.state())
        return real_add(self, other, *a, **k)

    monkeypatch.setattr(torch.Tensor, "add_", spy)

    def md(grid, metadata, args):
        return {"flops": torch.tensor(2.5), "tiles": torch.tensor(3, dtype=torch.int32), "bytes": 8}

    ops = set()
    for _ in range(4):
        op, (name, metrics) = enter_and_read(lazy("dev_kernel", md))
        knobs.runtime.launch_exit_hook(lazy())
        ops.add(op)
    assert len(ops) == 1  # one interned op for every launch: no per-launch entry
    assert name == "dev_kernel"
    assert metrics == {"flops": 0.0, "tiles": 0, "bytes": 8}  # typed zeros create the metrics
    assert isinstance(metrics["tiles"], int)
    slots = _proton._launch_op_slots(op)
    assert set(slots) == {"flops", "tiles"}
    # Each add ran under the hidden metadata frame, after the metadata function returned.
    assert states == [hooks.COMPUTE_METADATA_SCOPE_NAME] * 8
    sums = {}
    for metric_name, slot in slots.items():
        key = metric._launch_keys[slot]
        slab, offset = metric._slots[key]
        sums[metric_name] = metric._slabs[(key[3], key[4])][slab][offset].tolist()
    assert sums == {"flops": 10.0, "tiles": 12}
    metric.fold()  # no kernel ran on this CPU: nothing to place, and nothing fails


def test_device_tensor_metadata_errors_name_metric_and_kernel(session, monkeypatch):
    torch = pytest.importorskip("torch")

    def md(grid, metadata, args):
        return {"flops": torch.ones(3)}

    with pytest.raises(TypeError, match="launch_metadata metric 'flops' of kernel 'vec_kernel'.*"
                                        "exactly one value"):
        knobs.runtime.launch_enter_hook(lazy("vec_kernel", md))
    knobs.runtime.launch_exit_hook(lazy())
