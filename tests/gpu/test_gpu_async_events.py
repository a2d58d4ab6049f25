"""Intra-kernel async events (pl.allocate_event / start_event / end_event) on a real GPU.

Triton 3.8+ has the event ops; with an older Triton (3.6 on the GPU machine) the tests skip,
saying so. Each warp of a plain Triton kernel records both ends of its own event: the decoder
pairs them within the warp, so every warp of every CTA gives one event, none unmatched, and the
event sits on the tree under its region and on the trace with args.is_async.
"""

import json

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
triton = pytest.importorskip("triton")

import proton  # noqa: E402
import proton.language as pl  # noqa: E402
from proton.hooks import instrumentation as instr  # noqa: E402

if not pl._HAS_EVENTS:
    pytest.skip(f"Triton {triton.__version__} has no proton event ops (3.8+)",
                allow_module_level=True)

import triton.language as tl  # noqa: E402

CTAS, WARPS, ITERS, BLOCK = 16, 4, 8, 128


@triton.jit
def evented_loop(x_ptr, out_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    e = pl.allocate_event("copy")
    pl.enter_scope("loop")
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    pl.start_event(e)
    for i in range(ITERS):
        acc += tl.load(x_ptr + offs + i * BLOCK)
    pl.end_event(e)
    pl.exit_scope("loop")
    tl.store(out_ptr + offs, acc)


@pytest.fixture
def triton_semantic():
    pl.enable_semantic("triton")
    yield
    pl.disable_semantic("triton")


def test_events_on_the_tree_and_the_trace(out_name, read_profile, triton_semantic):
    x = torch.randn(CTAS * BLOCK + ITERS * BLOCK, device="cuda")
    out = torch.empty(CTAS * BLOCK, device="cuda")
    before = instr.stats().get("unmatched_events", 0)
    session = proton.start(out_name, backend="instrumentation", data="tree,trace")
    evented_loop[(CTAS,)](x, out, ITERS=ITERS, BLOCK=BLOCK, num_warps=WARPS)
    torch.cuda.synchronize()
    proton.finalize(session)
    p = read_profile()
    kernel = next(c for c in p.root["children"] if c["frame"]["name"].startswith("evented_loop"))
    loop = p.node("loop", start=kernel)
    copy = p.node("copy", start=loop) if any(
        c["frame"]["name"] == "copy" for c in loop["children"]) else p.node("copy", start=kernel)
    assert copy["metrics"]["count"] == CTAS * WARPS, p.render()
    assert 0 < copy["metrics"]["cycles"] <= loop["metrics"]["cycles"]
    assert instr.stats().get("unmatched_events", 0) == before
    trace = json.load(open(out_name + ".chrome_trace"))["traceEvents"]
    events = [e for e in trace if e.get("cat") == "region" and e["name"] == "copy"]
    assert len(events) == CTAS * WARPS
    assert all(e["args"]["is_async"] and e["args"]["end_warp"] == e["args"]["warp"]
               for e in events)
    assert not [e for e in trace if e.get("cat") == "async"]  # no warp ended another's
