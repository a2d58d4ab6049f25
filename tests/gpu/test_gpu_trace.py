"""Timelines on a real GPU: data="trace" / "tree,trace" with several streams and threads,
launch->kernel flows, CPU/GPU clock alignment, the trace budget, phases and msgpack, and
launch metadata (hook="triton") on kernel events."""

import json
import os
import threading
import time

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import msgpack  # noqa: E402

import proton  # noqa: E402

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

STREAMS = 3
LAUNCHES = 40

if triton is not None:

    def double_metadata(grid, metadata, args):
        n = args["n"]
        return {"name": f"double_n{n}", "flops32": float(n), "bytes": 8 * n}

    @triton.jit(launch_metadata=double_metadata)
    def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def load_trace(out_name):
    path = out_name + ".chrome_trace"
    assert os.path.exists(path), f"no trace: {sorted(os.listdir(os.path.dirname(path)))}"
    with open(path) as f:
        trace = json.load(f)
    check_chrome_rules(trace)
    return trace


def check_chrome_rules(trace):
    assert trace["displayTimeUnit"] == "ns"
    assert trace["otherData"]["proton_base_time_ns"] == trace["baseTimeNanoseconds"]
    # The base time is wall-clock ns: within a minute of now.
    assert abs(trace["baseTimeNanoseconds"] - time.time_ns()) < 60e9
    named = {(e["pid"], e["tid"]) for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    starts, ends = {}, {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            assert {"ts", "dur", "pid", "tid", "name"} <= e.keys(), e
            assert e["dur"] >= 0, e
            assert (e["pid"], e["tid"]) in named, f"unnamed lane {e}"
        elif e["ph"] in "sf":
            assert e["bp"] == "e"
            (starts if e["ph"] == "s" else ends)[e["id"]] = e
    assert starts.keys() == ends.keys(), "every flow start needs its end"
    return starts, ends


def kernels(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "kernel"]


def test_streams_get_lanes_and_flows_point_forward(out_name):
    x = torch.ones(1 << 16, device="cuda")
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    torch.cuda.synchronize()
    session = proton.start(out_name, data="tree,trace")
    with proton.scope("work"):
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                for _ in range(LAUNCHES):
                    x.mul_(1.0)
    torch.cuda.synchronize()
    proton.finalize(session)

    trace = load_trace(out_name)
    ks = [k for k in kernels(trace) if k["args"]["call_stack"][1:-1] == ["work"]]
    assert len(ks) == STREAMS * LAUNCHES
    lanes = {(k["pid"], k["tid"]) for k in ks}
    assert len(lanes) == STREAMS, lanes
    assert {k["pid"] for k in ks} == {torch.cuda.current_device()}
    starts, ends = check_chrome_rules(trace)
    assert len(starts) >= STREAMS * LAUNCHES
    for fid, s in starts.items():
        # Clock alignment: a kernel never starts before the CPU launched it (1 µs of slack for
        # the offset's sampling error).
        assert ends[fid]["ts"] >= s["ts"] - 1.0, (s, ends[fid])
    # The tree from the same run agrees on the count.
    with open(out_name + ".hatchet") as f:
        tree = json.load(f)
    work = next(c for c in tree[0]["children"] if c["frame"]["name"] == "work")
    assert sum(c["metrics"].get("count", 0) for c in work["children"]) == STREAMS * LAUNCHES
    # Kernel duration in the trace equals its time (ns) arg.
    for k in ks:
        assert abs(k["dur"] * 1000 - k["args"]["time (ns)"]) <= 0.5


def test_threads_get_cpu_lanes_and_their_kernels(out_name):
    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    barrier = threading.Barrier(3)

    def work(i):
        stream = torch.cuda.Stream()
        barrier.wait()
        with torch.cuda.stream(stream), proton.scope(f"thread{i}"):
            for _ in range(LAUNCHES):
                x.add_(1)
        stream.synchronize()

    session = proton.start(out_name, data="trace")
    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    proton.finalize(session)
    trace = load_trace(out_name)
    scope_lanes = {e["name"]: e["tid"] for e in trace["traceEvents"]
                   if e["ph"] == "X" and e["cat"] == "scope"}
    assert len(set(scope_lanes.values())) == 3, scope_lanes
    for i in range(3):
        mine = [k for k in kernels(trace) if k["args"]["call_stack"][1:-1] == [f"thread{i}"]]
        assert len(mine) == LAUNCHES
        launches = [e for e in trace["traceEvents"]
                    if e["ph"] == "X" and e["cat"] == "launch"
                    and e["args"]["correlation"] in {k["args"]["correlation"] for k in mine}]
        assert {e["tid"] for e in launches} == {scope_lanes[f"thread{i}"]}


def test_trace_budget_keeps_the_newest_kernels(out_name, run_script):
    code = f"""
import json, os, torch, proton
x = torch.ones(16, device="cuda")
proton.start({out_name!r}, data="trace")
for _ in range(30000):
    x.add_(1)
torch.cuda.synchronize()
proton.finalize()
"""
    env = dict(os.environ, PROTON_TRACE_BUDGET_MB="0.5")
    r = run_script(code, env=env)
    assert r.returncode == 0, r.stderr
    trace = load_trace(out_name)
    other = trace["otherData"]
    kept = len(kernels(trace))
    assert other["proton_dropped_events"] > 0
    assert kept + other["proton_dropped_events"] == 30000
    assert kept <= 2 * 4096


def test_phases_and_msgpack_on_gpu(out_name):
    x = torch.ones(16, device="cuda")
    session = proton.start(out_name)
    for phase in range(3):
        with proton.scope(f"phase{phase}"):
            for _ in range(10):
                x.add_(1)
        if phase < 2:
            assert proton.data.advance_phase(session) == phase + 1
    proton.deactivate(session, flushing=True)
    assert proton.data.is_phase_complete(session, 0)
    assert proton.data.is_phase_complete(session, 1)
    assert not proton.data.is_phase_complete(session, 2)
    for phase in range(3):
        tree = proton.data.get(session, phase)
        assert [c["frame"]["name"] for c in tree[0]["children"]] == [f"phase{phase}"]
        assert msgpack.unpackb(proton.data.get_msgpack(session, phase), raw=False) == tree
    proton.finalize(session)
    for phase in range(3):
        assert os.path.exists(f"{out_name}.part_{phase}.hatchet")


def test_periodic_flushing_like_triton(tmp_path):
    # triton.profiler's own test: 10 phases of 500 scoped launches -> 10 part files.
    name = str(tmp_path / "periodic")
    session = proton.start(name, mode="periodic_flushing:format=hatchet_msgpack")
    for i in range(5000):
        if i != 0 and i % 500 == 0:
            proton.data.advance_phase(session=session)
        with proton.scope(f"test_{i}", metrics={"count": 1}):
            torch.zeros((100), device="cuda")
    proton.finalize(output_format="hatchet_msgpack")
    files = sorted(p for p in os.listdir(tmp_path) if p.endswith(".hatchet_msgpack"))
    assert len(files) == 10, files
    total = 0
    for f in files:
        with open(tmp_path / f, "rb") as fh:
            data = msgpack.unpackb(fh.read(), raw=False, strict_map_key=False)
        assert len(data[0]["children"]) == 500
        assert data[0]["children"][0]["children"][0]["metrics"]["time (ns)"] > 0
        total += len(data[0]["children"])
    assert total == 5000


@pytest.mark.skipif(triton is None, reason="needs triton")
@pytest.mark.parametrize("data", ["trace", "tree,trace"])
def test_launch_metadata_names_kernel_events_and_adds_flops_bytes(out_name, data):
    x = torch.ones(1024, device="cuda")

    def double():
        double_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256)

    double()  # compile outside the session
    torch.cuda.synchronize()
    session = proton.start(out_name, data=data, hook="triton")
    with proton.scope("work"):
        for _ in range(4):
            double()
    torch.cuda.synchronize()
    proton.finalize(session)

    trace = load_trace(out_name)
    ks = [k for k in kernels(trace) if k["args"]["call_stack"][1:-1] == ["work"]]
    assert len(ks) == 4, ks
    for k in ks:
        assert k["name"] == "double_n1024", k
        assert k["args"]["kernel"] == "double_kernel", k
        assert k["args"]["flops32"] == 1024.0 and isinstance(k["args"]["flops32"], float), k
        assert k["args"]["bytes"] == 8 * 1024 and isinstance(k["args"]["bytes"], int), k
    launches = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "launch"
                and e["args"]["correlation"] in {k["args"]["correlation"] for k in ks}]
    assert {e["args"]["kernel"] for e in launches} == {"double_n1024"}
    if "tree" in data:
        # The tree of the same run holds the sums of the trace's per-launch values.
        with open(out_name + ".hatchet") as f:
            tree = json.load(f)
        work = next(c for c in tree[0]["children"] if c["frame"]["name"] == "work")
        node = next(c for c in work["children"] if c["frame"]["name"] == "double_n1024")
        assert node["metrics"]["count"] == 4
        assert node["metrics"]["flops32"] == pytest.approx(sum(k["args"]["flops32"] for k in ks))
        assert node["metrics"]["bytes"] == sum(k["args"]["bytes"] for k in ks)


def test_replayed_graph_scopes_get_a_lane_on_gpu_time(out_name):
    # triton.profiler's newest trace writer: a "Graph" lane per stream where the frames a
    # replayed kernel was captured under ("<captured_at>", then the capture's scopes) are slices
    # spanning the replayed kernels under them, on GPU time.
    x = torch.zeros(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch.cuda.graph recommends
        x.add_(1)
        x.mul_(2)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    proton.start(out_name, data="trace")
    g = torch.cuda.CUDAGraph()
    with proton.scope("capture"), torch.cuda.graph(g):
        with proton.scope("layer1"):
            x.add_(1)
        with proton.scope("layer2"):
            x.mul_(2)
    with proton.scope("decode"):
        for _ in range(3):
            g.replay()
    torch.cuda.synchronize()
    proton.finalize()
    trace = load_trace(out_name)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    lanes = {k for k, v in names.items() if v.startswith("Graph: stream ")}
    assert len(lanes) == 1, names
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X" and (e["pid"], e["tid"]) in lanes]
    by_name = {}
    for s in slices:
        by_name.setdefault(s["name"], []).append(s)
    assert set(by_name) == {"<captured_at>", "capture", "layer1", "layer2"}, by_name
    assert len(by_name["<captured_at>"]) == 1 and len(by_name["capture"]) == 1
    assert len(by_name["layer1"]) == 3 and len(by_name["layer2"]) == 3
    replayed = [k for k in kernels(trace) if "<captured_at>" in k["args"]["call_stack"]]
    assert len(replayed) == 6, replayed
    eps = 0.002  # µs, the writer's rounding
    outer = by_name["capture"][0]
    for k in replayed:  # every replayed kernel lies inside its layer's slice and the capture's
        layer = k["args"]["call_stack"][-2]
        assert any(s["ts"] - eps <= k["ts"] and k["ts"] + k["dur"] <= s["ts"] + s["dur"] + eps
                   for s in by_name[layer]), (k, by_name[layer])
        assert outer["ts"] - eps <= k["ts"] <= outer["ts"] + outer["dur"] + eps
    assert min(k["ts"] for k in replayed) == pytest.approx(outer["ts"], abs=eps)
