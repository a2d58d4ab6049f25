"""Intra-kernel instrumentation on a real GPU (what docs/instrumentation.md promises).

Each test runs Triton kernels with pl regions under proton.start(backend="instrumentation") and
reads the tree back: regions under the right kernel and call path, selected warps, circular
wrap-around, autotuning, two sessions, kernel time (CUPTI) and region cycles in one profile,
and the CUDA C++ header example.
"""

import pathlib
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
triton = pytest.importorskip("triton")

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import proton  # noqa: E402
from proton.hooks import instrumentation as instr  # noqa: E402
import instrumentation_kernels as K  # noqa: E402

CTAS, ITERS, BLOCK, WARPS = 64, 16, 256, 4


def run_loop(kernel, launches=1, **extra):
    x, out, grid, kw = K.loop_args(torch, ctas=CTAS, iters=ITERS, block=BLOCK)
    for _ in range(launches):
        kernel[grid](x, out, num_warps=WARPS, **kw, **extra)
    return out


def kernel_node(profile, *path, name):
    node = profile.node(*path) if path else profile.root
    found = [c for c in node["children"] if c["frame"]["name"].startswith(name)]
    assert found, profile.render()
    return found[0]


def test_regions_under_the_kernel_of_their_call_path(out_name, read_profile, monkeypatch):
    monkeypatch.setenv("PROTON_INSTR_KERNEL_TIME", "1")  # CUPTI's kernel time beside the regions
    session = proton.start(out_name, backend="instrumentation")
    with proton.scope("outer"):
        run_loop(K.loop_one_region, launches=3)
    torch.cuda.synchronize()
    proton.finalize(session)
    p = read_profile()
    kernel = kernel_node(p, "outer", name="loop_one_region")
    loop = p.node("loop", start=kernel)
    m = loop["metrics"]
    assert m["count"] == 3 * CTAS * WARPS
    assert m["cycles"] > 0
    assert m["normalized_cycles"] == pytest.approx(m["cycles"] / (CTAS * WARPS), rel=1e-6)
    assert m["device_id"] == "0" and m["device_type"] == "1"  # triton.profiler's spelling
    # Kernel time from CUPTI and region cycles in one profile.
    assert kernel["metrics"].get("time (ns)", 0) > 0, p.render()
    assert kernel["metrics"]["count"] == 3
    s = instr.stats()
    assert s["overflows"] == 0 and s["copy_errors"] == 0, s


def test_selected_warps_only(out_name, read_profile):
    session = proton.start(out_name, backend="instrumentation",
                           mode="default:sampling_strategy=selective:sampling_options=0,2")
    run_loop(K.loop_one_region)
    torch.cuda.synchronize()
    proton.finalize(session)
    p = read_profile()
    loop = p.node("loop", start=kernel_node(p, name="loop_one_region"))
    assert loop["metrics"]["count"] == CTAS * 2


def test_circular_wrap_around_keeps_the_newest(out_name, read_profile, capfd):
    before = instr.stats()
    # 256 bytes for 4 warps: 8 events per warp; 16 iterations write 32.
    session = proton.start(out_name, backend="instrumentation", mode="default:buffer_size=256")
    run_loop(K.loop_region_per_iter)
    torch.cuda.synchronize()
    proton.finalize(session)
    after = instr.stats()
    # The loss is said at finalize, with the remedy.
    err = capfd.readouterr().err
    assert f"{CTAS * WARPS} warp buffers wrapped" in err and "buffer_size" in err
    p = read_profile()
    it = p.node("iter", start=kernel_node(p, name="loop_region_per_iter"))
    assert it["metrics"]["count"] == CTAS * WARPS * 4  # the 4 newest regions of each warp
    assert after["wrapped_units"] - before["wrapped_units"] == CTAS * WARPS
    assert after["overwritten_events"] - before["overwritten_events"] == CTAS * WARPS * 24


def test_region_per_iteration_counts_every_iteration(out_name, read_profile):
    session = proton.start(out_name, backend="instrumentation")
    run_loop(K.loop_region_per_iter)
    torch.cuda.synchronize()
    proton.finalize(session)
    p = read_profile()
    it = p.node("iter", start=kernel_node(p, name="loop_region_per_iter"))
    assert it["metrics"]["count"] == CTAS * WARPS * ITERS


def test_autotuned_kernel(out_name, read_profile):
    import triton.language as tl
    import proton.language as pl

    @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4),
                              triton.Config({"BLOCK": 256}, num_warps=8)], key=["n"])
    @triton.jit
    def tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        with pl.scope("body"):
            v = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, v * 2, mask=offs < n)

    x = torch.randn(1 << 16, device="cuda")
    out = torch.empty_like(x)
    session = proton.start(out_name, backend="instrumentation")
    for _ in range(3):
        tuned[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel())
    torch.cuda.synchronize()
    proton.finalize(session)
    p = read_profile()
    kernel = kernel_node(p, name="tuned")
    assert p.node("body", start=kernel)["metrics"]["count"] > 0
    assert torch.allclose(out, x * 2)


def test_two_sessions_both_get_regions(out_name, read_profile, tmp_path):
    second = str(tmp_path / "second")
    s1 = proton.start(out_name, backend="instrumentation")
    s2 = proton.start(second, backend="instrumentation")
    run_loop(K.loop_one_region)
    torch.cuda.synchronize()
    proton.finalize(s2)
    run_loop(K.loop_one_region)  # s1 alone now
    torch.cuda.synchronize()
    proton.finalize(s1)
    p1, p2 = read_profile(), read_profile(second)
    c1 = p1.node("loop", start=kernel_node(p1, name="loop_one_region"))["metrics"]["count"]
    c2 = p2.node("loop", start=kernel_node(p2, name="loop_one_region"))["metrics"]["count"]
    assert (c1, c2) == (2 * CTAS * WARPS, CTAS * WARPS)


def test_kernel_timing_session_beside_one_keeping_region_cycles(out_name, read_profile, tmp_path,
                                                                monkeypatch):
    # Kernel records are process-wide: a CUPTI session started beside an instrumentation session
    # without them turns them on (or finds them on), and off when it ends; each profile stays
    # as its session started, kernel time in the one, region cycles in the other.
    monkeypatch.delenv("PROTON_INSTR_KERNEL_TIME", raising=False)
    for order in ("instrumentation first", "cupti first"):
        timed = str(tmp_path / f"timed_{order[0]}")
        cycles = f"{out_name}_{order[0]}"
        if order == "instrumentation first":
            s1 = proton.start(cycles, backend="instrumentation")
            s2 = proton.start(timed)
        else:
            s2 = proton.start(timed)
            s1 = proton.start(cycles, backend="instrumentation")
        run_loop(K.loop_one_region, launches=3)
        torch.cuda.synchronize()
        proton.finalize(s2)  # kernel records off again: the instrumentation session runs on
        run_loop(K.loop_one_region, launches=2)
        torch.cuda.synchronize()
        proton.finalize(s1)
        p1, p2 = read_profile(cycles), read_profile(timed)
        k1 = kernel_node(p1, name="loop_one_region")
        assert "time (ns)" not in k1["metrics"], (order, p1.render())
        assert p1.node("loop", start=k1)["metrics"]["count"] == 5 * CTAS * WARPS, order
        k2 = kernel_node(p2, name="loop_one_region")
        assert k2["metrics"]["count"] == 3 and k2["metrics"]["time (ns)"] > 0, (order, p2.render())


def test_many_launches_without_a_synchronize_each(out_name, read_profile):
    before = instr.stats()
    session = proton.start(out_name, backend="instrumentation")
    run_loop(K.loop_one_region, launches=1000)
    torch.cuda.synchronize()
    proton.finalize(session)
    after = instr.stats()
    decoded = after["decoded"] - before["decoded"]
    overflows = after["overflows"] - before["overflows"]
    assert decoded + overflows == 1000
    assert overflows == 0, after
    p = read_profile()
    loop = p.node("loop", start=kernel_node(p, name="loop_one_region"))
    assert loop["metrics"]["count"] == 1000 * CTAS * WARPS


def test_pool_is_allocated_when_the_session_starts(out_name, read_profile):
    # Started on a thread with a GPU context (torch made it) in a process that sees one GPU,
    # the session's device pool and staging come at start: its launches never leave the
    # lock-free path (an allocation at the first launch cost milliseconds inside the program's
    # loop). With several GPUs in sight the first launch allocates it, on its own device.
    torch.zeros(1, device="cuda")
    one_gpu = torch.cuda.device_count() == 1
    before = instr.stats()
    session = proton.start(out_name, backend="instrumentation")
    assert (instr.stats()["pool_bytes"] > before["pool_bytes"]) == one_gpu
    run_loop(K.loop_one_region, launches=20)
    torch.cuda.synchronize()
    proton.finalize(session)
    after = instr.stats()
    assert after["slow_allocs"] - before["slow_allocs"] == (0 if one_gpu else 1), after
    assert after["decoded"] - before["decoded"] == 20, after
    assert after["errors"] == before["errors"], after["errors"]


def test_threads_launching_at_once_lose_nothing(out_name, read_profile, run_threads):
    # The launch path takes no lock: four threads, each on its own stream, reserve slices and
    # queue their records at once; every launch comes back decoded under its thread's scope.
    threads, launches = 4, 200
    before = instr.stats()
    session = proton.start(out_name, backend="instrumentation")

    def work(i):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream), proton.scope(f"thread{i}"):
            run_loop(K.loop_one_region, launches=launches)
        stream.synchronize()

    try:
        run_threads(work, threads)
        torch.cuda.synchronize()
    finally:
        proton.finalize(session)
    after = instr.stats()
    assert after["decoded"] - before["decoded"] == threads * launches, after
    for key in ("overflows", "copy_errors", "corrupt_ctas", "unmatched_events",
                "abandoned_slices"):
        assert after[key] == before[key], (key, after)
    p = read_profile()
    for i in range(threads):
        loop = p.node("loop", start=kernel_node(p, f"thread{i}", name="loop_one_region"))
        assert loop["metrics"]["count"] == launches * CTAS * WARPS


def test_with_hook_triton(out_name, read_profile):
    session = proton.start(out_name, backend="instrumentation", hook="triton")
    run_loop(K.loop_one_region)
    torch.cuda.synchronize()
    proton.finalize(session)
    p = read_profile()
    assert p.node("loop", start=kernel_node(p, name="loop_one_region"))["metrics"]["count"] == \
        CTAS * WARPS


def test_a_later_session_with_another_mode_gets_its_regions(out_name, read_profile, tmp_path):
    # Only sessions running together must agree on the mode: after a finalize, the next session
    # may use another buffer size or sampling, and each profile has its own kernel's regions.
    names = [out_name, str(tmp_path / "second"), str(tmp_path / "third")]
    modes = [None, "default:sampling_strategy=selective:sampling_options=0,2",
             "default:buffer_size=1024"]
    for name, mode in zip(names, modes):
        s = proton.start(name, backend="instrumentation", mode=mode)
        run_loop(K.loop_one_region)
        torch.cuda.synchronize()
        proton.finalize(s)
    counts = []
    for name in names:
        p = read_profile(name)
        counts.append(p.node("loop", start=kernel_node(p, name="loop_one_region"))["metrics"]["count"])
    assert counts == [CTAS * WARPS, CTAS * 2, CTAS * WARPS]


def test_region_events_carry_tritons_args(out_name):
    import json

    session = proton.start(out_name, backend="instrumentation", data="tree,trace")
    run_loop(K.loop_one_region)
    torch.cuda.synchronize()
    proton.finalize(session)
    trace = json.load(open(out_name + ".chrome_trace"))["traceEvents"]
    regions = [e for e in trace if e.get("cat") == "region"]
    assert regions and all(e["name"] == "loop" for e in regions)
    assert len({e["cname"] for e in regions}) == 1
    for e in regions:
        assert e["args"]["Frequency (MHz)"] > 100  # the SM clock the cycles were converted at
        assert 0 <= e["args"]["Finalization Time (ns)"] < 10_000_000


def test_timeline_lanes_per_warp_inside_the_kernel(out_name, tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("PROTON_INSTR_KERNEL_TIME", "1")  # boxes from CUPTI's kernel records
    session = proton.start(out_name, backend="instrumentation", data="tree,trace")
    run_loop(K.loop_one_region)
    torch.cuda.synchronize()
    proton.finalize(session)
    trace = json.load(open(out_name + ".chrome_trace"))["traceEvents"]
    kernels = [e for e in trace if e.get("cat") == "kernel" and "loop_one_region" in e["name"]]
    regions = [e for e in trace if e.get("cat") == "region"]
    assert len(kernels) == 1 and len(regions) == CTAS * WARPS
    k = kernels[0]
    lanes = {(e["args"]["sm"], e["args"]["cta"], e["args"]["warp"]) for e in regions}
    assert len(lanes) == CTAS * WARPS
    # Inside the kernel's box, on one clock (1 us of slack for clock-rate rounding).
    for e in regions:
        assert k["ts"] - 1 <= e["ts"] and e["ts"] + e["dur"] <= k["ts"] + k["dur"] + 1, (e, k)
    names = [e for e in trace if e.get("ph") == "M" and e.get("name") == "thread_name"
             and "warp" in e["args"]["name"]]
    assert len(names) == CTAS * WARPS


def test_region_cycles_only_without_kernel_records(out_name, monkeypatch):
    # As a session starts by default (triton.profiler's output): CUPTI's launch callbacks still
    # queue every launch (no Python hook, no synchronize), but no kernel record comes: regions
    # under their kernel and call path with no kernel time, and on the trace every region,
    # placed by the GPU's clock, in a box per launch drawn from its CTAs' global-timer values.
    import json

    monkeypatch.delenv("PROTON_INSTR_KERNEL_TIME", raising=False)
    before = instr.stats()
    session = proton.start(out_name, backend="instrumentation", data="tree,trace")
    with proton.scope("outer"):
        run_loop(K.loop_one_region, launches=50)
    torch.cuda.synchronize()
    proton.finalize(session)
    after = instr.stats()
    assert after["decoded"] - before["decoded"] == 50, after
    tree = json.load(open(out_name + ".hatchet"))
    outer = next(c for c in tree[0]["children"] if c["frame"]["name"] == "outer")
    kernel = next(c for c in outer["children"] if c["frame"]["name"].startswith("loop_one_region"))
    assert "time (ns)" not in kernel["metrics"], kernel["metrics"]
    loop = next(c for c in kernel["children"] if c["frame"]["name"] == "loop")
    assert loop["metrics"]["count"] == 50 * CTAS * WARPS
    trace = json.load(open(out_name + ".chrome_trace"))["traceEvents"]
    regions = [e for e in trace if e.get("cat") == "region"]
    assert len(regions) == 50 * CTAS * WARPS
    # Each launch's box from its CTAs' extent (no CUPTI time), on a lane of its own; every
    # region inside one box, the boxes one after the other (one stream).
    boxes = sorted((e for e in trace if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    assert len(boxes) == 50 and all("time (ns)" not in b["args"] for b in boxes)
    assert len({(b["pid"], b["tid"]) for b in boxes}) == 1
    for a, b in zip(boxes, boxes[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 0.5, (a, b)
    for e in regions:
        assert any(b["ts"] - 0.5 <= e["ts"] and e["ts"] + e["dur"] <= b["ts"] + b["dur"] + 0.5
                   for b in boxes), e


def _ws_trace(out_name, mode=None):
    """Runs the warp-specialized kernel once under a tree+trace session; returns the profile's
    kernel node, the region events and the region lane names."""
    import json

    if getattr(K, "gluon", None) is None:
        pytest.skip("this Triton has no Gluon warp_specialize")
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("warp specialization needs Hopper or newer")
    x, out, grid, kw = K.warp_specialized_args(torch)
    session = proton.start(out_name, backend="instrumentation", data="tree,trace", mode=mode)
    K.warp_specialized[grid](x, out, num_warps=4, **kw)
    torch.cuda.synchronize()
    proton.finalize(session)
    # The kernel computed what it computes uninstrumented: both partitions ran.
    ctas, iters, block = grid[0], kw["ITERS"], kw["BLOCK"]
    rows = x[: (ctas + iters) * block]
    want = sum(rows[i * block: i * block + ctas * block] for i in range(iters))
    assert torch.allclose(out[: ctas * block], want, rtol=1e-4, atol=1e-3)
    trace = json.load(open(out_name + ".chrome_trace"))["traceEvents"]
    regions = [e for e in trace if e.get("cat") == "region"]
    lanes = {e["tid"]: e["args"]["name"] for e in trace
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e["tid"] >= 1 << 32}
    return regions, lanes, ctas


def test_warp_specialized_kernel_per_warp_timeline(out_name, read_profile):
    regions, lanes, ctas = _ws_trace(out_name)
    # consume on the default partition's warps 0-3, produce on the worker's warps 4-7.
    by_name = {}
    for e in regions:
        by_name.setdefault(e["name"], set()).add(e["args"]["warp"])
    assert by_name == {"consume": {0, 1, 2, 3}, "produce": {4, 5, 6, 7}}, by_name
    assert len(regions) == ctas * 8
    assert all(" / warp " in name for name in lanes.values()), lanes
    p = read_profile()
    kernel = kernel_node(p, name="warp_specialized")
    for region in ("consume", "produce"):
        assert p.node(region, start=kernel)["metrics"]["count"] == ctas * 4


def test_warp_specialized_kernel_per_warpgroup_timeline(out_name, read_profile):
    regions, lanes, ctas = _ws_trace(out_name, mode="default:granularity=warp_group")
    # One lane per warpgroup: its first warp records (warps 0 and 4), no other warp does.
    assert {(e["name"], e["args"]["warp"], e["args"].get("warps")) for e in regions} == {
        ("consume", 0, 4), ("produce", 4, 4)}
    assert len(regions) == ctas * 2
    names = set(lanes.values())
    assert any(n.endswith("/ warpgroup 0") for n in names), names
    assert any(n.endswith("/ warpgroup 1") for n in names), names
    p = read_profile()
    kernel = kernel_node(p, name="warp_specialized")
    assert p.node("produce", start=kernel)["metrics"]["count"] == ctas


@pytest.mark.parametrize("kernel_time", ["1", "0"], ids=["kernel_time", "regions_only"])
def test_kernel_captured_in_a_cuda_graph_counts_every_replay(out_name, read_profile, monkeypatch,
                                                             kernel_time):
    # Captured in PyTorch's default (global) capture mode on its side stream: the launch must
    # get memory of its own (not a ring slice the replays would overwrite), leave the capture
    # valid, and every replay's regions land under the capture site's kernel node (each replay
    # is copied into the ring and counted there as a launch).
    monkeypatch.setenv("PROTON_INSTR_KERNEL_TIME", kernel_time)
    replays = 5
    x, out, grid, kw = K.loop_args(torch, ctas=CTAS, iters=ITERS, block=BLOCK)
    before = instr.stats()
    session = proton.start(out_name, backend="instrumentation")
    K.loop_one_region[grid](x, out, num_warps=WARPS, **kw)  # compiled and run eagerly first
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with proton.scope("captured"):
        with torch.cuda.graph(graph):
            K.loop_one_region[grid](x, out, num_warps=WARPS, **kw)
    out.zero_()
    for _ in range(replays):
        graph.replay()
    torch.cuda.synchronize()
    proton.finalize(session)  # drains every replay the device finished
    after = instr.stats()
    expected = sum(x[i * BLOCK:i * BLOCK + CTAS * BLOCK] for i in range(ITERS))
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)  # the graph computed
    delta = {k: after[k] - before[k] for k in ("graph_launches", "graph_replays", "graph_dropped",
                                               "copy_errors", "launches")}
    assert delta == {"graph_launches": 1, "graph_replays": replays, "graph_dropped": 0,
                     "copy_errors": 0, "launches": 1 + replays}, (delta, after["errors"])
    p = read_profile()
    # Where CUPTI puts a replayed kernel: "replay site / <captured_at> / capture site" (the
    # replays ran at the root here).
    kernel = kernel_node(p, "<captured_at>", "captured", name="loop_one_region")
    assert p.node("loop", start=kernel)["metrics"]["count"] == replays * CTAS * WARPS
    eager = kernel_node(p, name="loop_one_region")  # the launch before the capture
    assert p.node("loop", start=eager)["metrics"]["count"] == CTAS * WARPS
    if kernel_time == "1":  # CUPTI's records of the replays on the same node
        assert kernel["metrics"]["count"] == replays, p.render()
    del graph


def test_record_cost_is_calibrated():
    c = instr.calibrate()
    assert 0 <= c["record_cycles"] < 500, c
    assert "record_cycles" in instr.stats()


def test_kernel_without_session_runs_uninstrumented(out_name):
    # Compiled and launched once under a session (records in its IR), then with none: the
    # launch must use a binary without records, instrument nothing and compute the same sums.
    x, out, grid, kw = K.loop_args(torch, ctas=CTAS, iters=ITERS, block=BLOCK)
    session = proton.start(out_name, backend="instrumentation")
    instrumented = K.loop_one_region[grid](x, out, num_warps=WARPS, **kw)
    torch.cuda.synchronize()
    proton.finalize(session)
    assert "proton.record" in instrumented.asm["ttir"]  # the check below is not vacuous

    before = instr.stats()
    out.zero_()
    plain = K.loop_one_region[grid](x, out, num_warps=WARPS, **kw)
    torch.cuda.synchronize()
    after = instr.stats()
    assert "proton.record" not in plain.asm["ttir"], plain.asm["ttir"][:2000]
    assert after["launches"] == before["launches"], (before, after)
    assert after["bytes_copied"] == before["bytes_copied"], (before, after)
    expected = sum(x[i * BLOCK:i * BLOCK + CTAS * BLOCK] for i in range(ITERS))
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_header_example(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "examples/cuda_regions/run_example.py"),
                          str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    import json

    tree = json.load(open(tmp_path / "cuda_regions.hatchet"))[0]
    example = next(c for c in tree["children"] if c["frame"]["name"] == "example")
    kernel = next(c for c in example["children"] if c["frame"]["name"] == "saxpy_steps")
    loop = next(c for c in kernel["children"] if c["frame"]["name"] == "loop")
    step = next(c for c in loop["children"] if c["frame"]["name"] == "step")
    ctas = (1 << 20) // 128
    assert loop["metrics"]["count"] == ctas * 4
    assert step["metrics"]["count"] == ctas * 4 * 16
    assert loop["metrics"]["cycles"] >= step["metrics"]["cycles"]
