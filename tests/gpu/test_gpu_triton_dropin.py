"""Behaviours of the newest triton.profiler that need a GPU: Triton's activity-buffer knob,
per-phase chrome traces under periodic flushing, proton.hooks.launch.id on every launch."""

import json
import os
import threading

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402

import proton  # noqa: E402


@triton.jit(launch_metadata=lambda grid, metadata, args: {"name": "renamed_inc", "bytes": 4})
def inc_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


@triton.jit
def dec_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) - 1)



BUFFER_SIZE_SCRIPT = """
import json, sys
import torch
import proton
x = torch.ones(16, device="cuda")
torch.cuda.synchronize()
proton.start(sys.argv[1])
for _ in range(100):
    x + x
torch.cuda.synchronize()
stats = proton._proton._buffer_stats()
proton.finalize()
print(json.dumps(stats))
"""


def test_tritons_profile_buffer_size_sizes_cuptis_activity_buffers(run_script, tmp_path, read_profile):
    # A fresh process: the backend sizes its buffers when the first session starts.
    env = {k: v for k, v in os.environ.items() if k != "PROTON_BUFFER_SIZE"}
    env["TRITON_PROFILE_BUFFER_SIZE"] = str(4 << 20)
    out = tmp_path / "buf"
    r = run_script(BUFFER_SIZE_SCRIPT, out, env=env)
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout.strip().splitlines()[-1])
    assert stats["buffer_bytes"] == 4 << 20, stats
    assert stats["allocated"] >= 1, stats
    prof = read_profile(str(out))
    assert prof.count(prof.root) == 100, prof.render()


def test_launch_id_and_op_name_on_every_launch_of_every_thread(out_name, read_profile):
    # Real Triton launches (one kernel with launch_metadata, one without) from four threads:
    # each launch gets its own proton.hooks.launch.id, visible in the launching thread after the
    # launch, and op_name the (renamed) kernel name, as triton.profiler sets them.
    from proton.hooks import launch

    xs = [torch.zeros(64, device="cuda") for _ in range(4)]
    inc_kernel[(1,)](xs[0], BLOCK=64)  # compiled outside the session
    dec_kernel[(1,)](xs[0], BLOCK=64)
    torch.cuda.synchronize()
    proton.start(out_name, hook="triton")
    got, errors = {}, []

    def worker(i):
        try:
            seen = []
            for n in range(20):
                kernel, name = (inc_kernel, "renamed_inc") if n % 2 else (dec_kernel, "dec_kernel")
                kernel[(1,)](xs[i], BLOCK=64)
                seen.append(launch.id.get())
                assert launch.op_name.get() == name, (launch.op_name.get(), name)
            got[i] = seen
        except BaseException as e:  # reported from the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    proton.finalize()
    assert not errors, errors
    every = [x for seen in got.values() for x in seen]
    assert len(every) == 80 and all(isinstance(x, int) for x in every), got
    assert len(set(every)) == 80  # one number per launch
    prof = read_profile()
    assert prof.count(match="renamed_inc") == 40 and prof.count(match="dec_kernel") == 40, prof.render()


def test_periodic_flushing_writes_a_chrome_trace_per_phase(out_name):
    # As the newest triton.profiler: name.part_<N>.chrome_trace per phase, each holding the
    # kernels launched in that phase (1, 2, 3, 4 of them here) however late their records came.
    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    session = proton.start(out_name, data="trace", mode="periodic_flushing:format=chrome_trace")
    for phase in range(4):
        with proton.scope(f"step_{phase}"):
            for _ in range(phase + 1):
                x.mul_(1.0)
        proton.data.advance_phase(session)
    torch.cuda.synchronize()
    proton.finalize()
    for phase in range(4):
        with open(f"{out_name}.part_{phase}.chrome_trace") as f:
            events = json.load(f)["traceEvents"]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        scopes = [e["name"] for e in events if e.get("cat") == "scope"]
        assert len(kernels) == phase + 1, (phase, [k["name"] for k in kernels])
        assert scopes == [f"step_{phase}"], (phase, scopes)
        assert all(k["args"]["call_stack"][:2] == ["ROOT", f"step_{phase}"] for k in kernels), kernels
    with open(f"{out_name}.part_4.chrome_trace") as f:  # the phase open at finalize: empty
        assert not [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    assert not os.path.exists(f"{out_name}.chrome_trace")


GRAPH_BEFORE_START_SCRIPT = """
import sys
import torch
import proton
x = torch.ones(256, device="cuda")
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    x.mul_(1.0)  # warm up outside the capture
    torch.cuda.synchronize()
    with torch.cuda.graph(g, stream=s):
        x.mul_(1.0)
        x.add_(1.0)
torch.cuda.synchronize()
proton.start(sys.argv[1])  # the graph was captured (and instantiated) before this
for _ in range(20):
    g.replay()
torch.cuda.synchronize()
proton.finalize()
"""


def test_graph_captured_before_start_says_tritons_phrase_once(run_script, tmp_path):
    r = run_script(GRAPH_BEFORE_START_SCRIPT, tmp_path / "g")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("Cannot find graph for graphExecId: ") == 1, r.stderr
    assert "captured before profiling started" in r.stderr, r.stderr
