"""CUDA graphs: replayed kernels under their capture site, graphs from before start, mode="graph".

Expected trees (see docs/graphs.md):
    replay / <captured_at> / capture / <kernel>      count = replays
    replay / <kernel>                                 graph captured before proton.start
    replay / <cuda graph>                             mode="graph", count = graph launches
"""

import json
import os
import pathlib
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402

CAPTURED = "<captured_at>"
BENCH_DIR = pathlib.Path(__file__).resolve().parents[2] / "bench"


def bench_env():
    """The environment for subprocess scripts that import bench/workloads.py."""
    path = [str(BENCH_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}

# Five different kernels, each captured under its own scope so the test does not depend on
# how torch names its elementwise kernels.
OPS = [
    lambda x: x.add_(1.0),
    lambda x: x.mul_(0.5),
    lambda x: x.sin_(),
    lambda x: x.clamp_(-2.0, 2.0),
    lambda x: x.neg_(),
]


def five_kernels(x, scoped=True):
    for i, op in enumerate(OPS):
        if scoped:
            with proton.scope(f"k{i}"):
                op(x)
        else:
            op(x)


def capture(body, *args):
    """torch.cuda.graph with the usual side-stream warm-up; returns the graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        body(*args)  # warm-up (allocator pools, lazy init) outside the capture
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body(*args)
    return g


def assert_attributed(prof):
    assert "unattributed_kernels" not in prof.root_metrics, prof.render()


def test_ten_replays_of_five_kernels_count_ten_each(out_name, read_profile):
    x = torch.zeros(4096, device="cuda")
    proton.start(out_name)
    with proton.scope("capture"):
        g = capture(five_kernels, x)
    with proton.scope("replay"):
        for _ in range(10):
            g.replay()
    proton.finalize()
    prof = read_profile()
    assert_attributed(prof)
    site = prof.node("replay", CAPTURED, "capture")
    for i in range(5):
        assert prof.count(prof.node(f"k{i}", start=site)) == 10, prof.render()
    # Launches made during the capture never ran: nothing outside <captured_at> except the
    # warm-up, which ran each op once (torch may add fills of its own beside them).
    assert prof.count(prof.node("replay")) == 50, prof.render()
    for i in range(5):
        assert prof.count(prof.node("capture", f"k{i}")) == 1, prof.render()


def test_triton_kernel_captured_in_a_graph(out_name, read_profile):
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def axpy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask) + 2 * x, mask=mask)

    x = torch.ones(8192, device="cuda")
    y = torch.zeros_like(x)

    def body():
        axpy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)

    body()  # compile outside the session
    torch.cuda.synchronize()
    proton.start(out_name)
    with proton.scope("cap"):
        g = capture(body)
    with proton.scope("replay"):
        for _ in range(7):
            g.replay()
    proton.finalize()
    prof = read_profile()
    assert_attributed(prof)
    kernels = prof.kernels(prof.node("replay", CAPTURED, "cap"))
    assert [k["frame"]["name"] for k in kernels] == ["axpy_kernel"], prof.render()
    assert kernels[0]["metrics"]["count"] == 7
    assert kernels[0]["metrics"]["time (ns)"] > 0


def test_two_stream_capture_keeps_each_capture_site(out_name, read_profile):
    a = torch.zeros(4096, device="cuda")
    b = torch.zeros(4096, device="cuda")
    side = torch.cuda.Stream()

    def body():
        with proton.scope("main_stream"):
            a.add_(1.0)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), proton.scope("side_stream"):
            b.mul_(3.0)
            b.add_(1.0)
        torch.cuda.current_stream().wait_stream(side)
        with proton.scope("main_stream"):
            a.add_(b)

    proton.start(out_name)
    with proton.scope("cap"):
        g = capture(body)
    with proton.scope("replay"):
        for _ in range(5):
            g.replay()
    proton.finalize()
    prof = read_profile()
    assert_attributed(prof)
    site = prof.node("replay", CAPTURED, "cap")
    assert prof.count(prof.node("main_stream", start=site)) == 10, prof.render()
    assert prof.count(prof.node("side_stream", start=site)) == 10, prof.render()


def test_graph_with_copy_nodes_counts_only_kernels(out_name, read_profile):
    # A device-to-device copy is a memcpy node: it must not stop the launch's tag from being
    # retired (its fan-out counts kernel nodes only) nor show up as a kernel.
    x = torch.zeros(1 << 16, device="cuda")
    y = torch.empty_like(x)

    def body():
        x.add_(1.0)
        y.copy_(x)
        y.mul_(2.0)

    proton.start(out_name)
    g = capture(body)
    with proton.scope("replay"):
        for _ in range(20):
            g.replay()
    proton.finalize()
    torch.testing.assert_close(y, (x * 2))
    prof = read_profile()
    assert_attributed(prof)
    assert prof.count(prof.node("replay", CAPTURED)) == 40, prof.render()


def test_replays_from_two_sites_split_by_site(out_name, read_profile):
    x = torch.zeros(4096, device="cuda")
    proton.start(out_name)
    g = capture(five_kernels, x, False)
    with proton.scope("prefill"):
        for _ in range(3):
            g.replay()
    with proton.scope("decode"):
        for _ in range(4):
            g.replay()
    proton.finalize()
    prof = read_profile()
    assert prof.count(prof.node("prefill", CAPTURED)) == 15, prof.render()
    assert prof.count(prof.node("decode", CAPTURED)) == 20, prof.render()


def test_launch_metadata_of_captured_triton_kernel_counts_per_replay(out_name, read_profile):
    triton = pytest.importorskip("triton")
    import triton.language as tl

    def meta(grid, metadata, args):
        return {"name": f"scale_{args['n']}", "flops32": float(args["n"]), "bytes": 8 * args["n"]}

    @triton.jit(launch_metadata=meta)
    def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    x = torch.ones(1024, device="cuda")

    def body():
        scale_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256)

    body()
    torch.cuda.synchronize()
    proton.start(out_name, hook="triton")
    with proton.scope("cap"):
        g = capture(body)
    with proton.scope("replay"):
        for _ in range(6):
            g.replay()
    proton.finalize()
    prof = read_profile()
    node = prof.node("replay", CAPTURED, "cap", "scale_1024")
    assert node["metrics"]["count"] == 6, prof.render()
    assert node["metrics"]["flops32"] == pytest.approx(6 * 1024.0)
    assert node["metrics"]["bytes"] == 6 * 8 * 1024


def test_graph_mode_one_node_per_launch_site(out_name, read_profile):
    x = torch.zeros(4096, device="cuda")
    y = torch.ones(4096, device="cuda")
    proton.start(out_name, mode="graph")
    with proton.scope("cap"):
        g = capture(five_kernels, x)
    with proton.scope("replay"):
        for _ in range(10):
            g.replay()
    with proton.scope("plain"):
        x.add_(y)  # not in a graph: still timed per kernel
    proton.finalize()
    prof = read_profile()
    assert_attributed(prof)
    node = prof.node("replay", "<cuda graph>")
    assert node["metrics"]["count"] == 10, prof.render()
    assert node["metrics"]["time (ns)"] > 0
    assert not prof.has("replay", CAPTURED), prof.render()
    assert prof.count(prof.node("replay")) == 10, prof.render()  # no per-node records
    assert prof.count(prof.node("plain")) == 1, prof.render()


# CUPTI's graph-level trace segfaults inside cuGraphLaunch on a graph instantiated before it
# was enabled (a bare CUPTI client does the same). Proton must notice the unknown graph in its
# launch callback and fall back to per-kernel records before the driver goes on. Its own
# process: if the fallback fails, the crash must not take pytest with it.
GRAPH_MODE_OLD_GRAPH_SCRIPT = textwrap.dedent(
    """
    import sys, torch, proton
    from workloads import capture_add_graph  # bench/workloads.py (on PYTHONPATH)

    x = torch.zeros(4096, device="cuda")

    def capture():
        return capture_add_graph(x, 5)

    old = capture()
    proton.start(sys.argv[1], mode="graph")
    with proton.scope("cap"):
        new = capture()
    with proton.scope("new_before"):
        for _ in range(4):
            new.replay()
    with proton.scope("old"):
        for _ in range(10):
            old.replay()
    with proton.scope("new_after"):
        for _ in range(3):
            new.replay()
    torch.cuda.synchronize()
    stats = proton._proton._buffer_stats()
    print(stats["graph_level_fallbacks"], stats["graph_trace_enables"])
    proton.finalize()
    """
)


def test_graph_mode_falls_back_for_graphs_from_before_start(run_script, tmp_path, read_profile):
    out = tmp_path / "old_graph"
    r = run_script(GRAPH_MODE_OLD_GRAPH_SCRIPT, out, env=bench_env())
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    # GRAPH_TRACE went on at the new graph's capture, then off at the old graph's launch.
    assert r.stdout.split() == ["1", "1"], r.stdout
    assert r.stderr.count("mode='graph' met a CUDA graph instantiated before") == 1, r.stderr
    prof = read_profile(str(out))
    assert "unattributed_kernels" not in prof.root_metrics, prof.render()
    # Before the old graph: one graph-level record per launch.
    assert prof.node("new_before", "<cuda graph>")["metrics"]["count"] == 4, prof.render()
    # The old graph and everything after: per-kernel records (5 per replay).
    assert prof.count(prof.node("old")) == 50, prof.render()
    assert not prof.has("old", "<cuda graph>"), prof.render()
    assert prof.count(prof.node("new_after", CAPTURED, "cap")) == 15, prof.render()


# The common case (vLLM, SGLang: graphs captured before profiling starts): the old graph is
# launched before any graph is made while profiling, so GRAPH_TRACE is never enabled and the
# run is the default mode, CUPTI included. A graph captured after that stays per-node.
GRAPH_MODE_ONLY_OLD_GRAPHS_SCRIPT = textwrap.dedent(
    """
    import sys, torch, proton
    from workloads import capture_add_graph  # bench/workloads.py (on PYTHONPATH)

    x = torch.zeros(4096, device="cuda")
    old = capture_add_graph(x, 5)
    proton.start(sys.argv[1], mode="graph")
    with proton.scope("old"):
        for _ in range(10):
            old.replay()
    with proton.scope("cap"):
        new = capture_add_graph(x, 5)
    with proton.scope("new"):
        for _ in range(3):
            new.replay()
    torch.cuda.synchronize()
    stats = proton._proton._buffer_stats()
    print(stats["graph_level_fallbacks"], stats["graph_trace_enables"])
    proton.finalize()
    """
)


def test_graph_mode_with_graphs_from_before_start_never_enables_the_graph_trace(
        run_script, tmp_path, read_profile):
    out = tmp_path / "old_only"
    r = run_script(GRAPH_MODE_ONLY_OLD_GRAPHS_SCRIPT, out, env=bench_env())
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    assert r.stdout.split() == ["1", "0"], r.stdout  # one fallback, GRAPH_TRACE never enabled
    assert r.stderr.count("mode='graph' met a CUDA graph instantiated before") == 1, r.stderr
    prof = read_profile(str(out))
    assert "unattributed_kernels" not in prof.root_metrics, prof.render()
    assert prof.count(prof.node("old")) == 50, prof.render()
    assert not prof.has("old", "<cuda graph>"), prof.render()
    assert prof.count(prof.node("new", CAPTURED, "cap")) == 15, prof.render()


def test_graph_mode_and_default_mode_cannot_run_together(out_name, tmp_path):
    proton.start(out_name, mode="graph")
    with pytest.raises(Exception, match="mode='graph'"):
        proton.start(str(tmp_path / "other"))
    proton.finalize()


# Runs in a process of its own: the notice prints once per process, and RSS must not include
# other tests' leftovers. argv: when (before/after), mode ("" or graph), output, profiler
# (proton, or floor: CUPTI's own tracing in the same mode with nothing of ours).
GRAPH_MEMORY_SCRIPT = textwrap.dedent(
    """
    import json, sys, torch, proton

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    when, mode, out, profiler = sys.argv[1:5]
    before_start = when == "before"
    from workloads import capture_add_graph  # bench/workloads.py (on PYTHONPATH)

    x = torch.zeros(4096, device="cuda")

    def capture():
        return capture_add_graph(x, 5)

    if before_start:
        g = capture()
    if profiler == "floor":
        import _proton_bench  # the floor: bench/native, built by scripts/gpu-test

        _proton_bench._floor_start(graph_level=mode == "graph")
    else:
        proton.start(out, mode=mode or None)
    if not before_start:
        g = capture()
    samples = []
    with proton.scope("replay"):
        for i in range(110_000):
            g.replay()
            if i % 10_000 == 9_999:
                torch.cuda.synchronize()
                samples.append(rss_mb())
    if profiler == "floor":
        _proton_bench._floor_stop()
    else:
        proton.finalize()
    print(json.dumps({"rss_mb": samples}))
    """
)


def graph_memory_growth(run_script, when, mode, out, profiler):
    """RSS growth (MB) from 10k to 110k replays: 100,000 replays after a 10,000 warm-up."""
    r = run_script(GRAPH_MEMORY_SCRIPT, when, mode, out, profiler, env=bench_env(), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    samples = json.loads(r.stdout.strip().splitlines()[-1])["rss_mb"]
    return samples[-1] - samples[0], samples, r


@pytest.mark.parametrize("when,mode", [("before", ""), ("after", ""), ("after", "graph")])
def test_memory_flat_over_100k_replays(run_script, tmp_path, read_profile, when, mode):
    # CUPTI's own tracing is not flat (see docs/cupti.md: ~1.9 MB over these replays with
    # kernel records, ~1.5 MB and rising with graph records): what Proton adds on top of the
    # same tracing must stay within 1 MB.
    import importlib.util

    if importlib.util.find_spec("_proton_bench") is None:
        pytest.skip("the CUPTI floor is in the bench module (scripts/gpu-test builds it)")
    floor, floor_samples, _ = graph_memory_growth(run_script, when, mode, tmp_path / "f", "floor")
    out = tmp_path / "mem"
    growth, samples, r = graph_memory_growth(run_script, when, mode, out, "proton")
    print(f"{when}/{mode or 'default'}: RSS {samples[0]:.1f} -> {samples[-1]:.1f} MB "
          f"({growth:+.2f} MB over 100k replays; CUPTI alone {floor:+.2f} MB)")
    assert growth <= floor + 1.0, (samples, floor_samples)

    prof = read_profile(str(out))
    assert "unattributed_kernels" not in prof.root_metrics, prof.render()
    if mode == "graph":
        assert prof.node("replay", "<cuda graph>")["metrics"]["count"] == 110_000
    elif when == "before":
        # No capture information: the launch site, one notice.
        assert not prof.has("replay", CAPTURED), prof.render()
        assert prof.count(prof.node("replay")) == 550_000
        assert r.stderr.count("captured before profiling started") == 1, r.stderr
        assert r.stderr.count("Cannot find graph for graphExecId: ") == 1, r.stderr  # Triton's phrase
    else:
        assert prof.count(prof.node("replay", CAPTURED)) == 550_000, prof.render()
        assert "captured before profiling started" not in r.stderr
