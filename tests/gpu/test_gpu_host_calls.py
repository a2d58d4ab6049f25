"""Host calls on a GPU (docs/advise.md, "Host calls"): synchronizes and blocking copies timed from
their API callbacks, and the rules host_sync and sync_copy that read them.

Known answers: `.item()` in a hot loop is host_sync, pageable `tensor.cuda()` copies are
sync_copy, each the top finding of the Python frame that made the calls; a control with pinned
non_blocking copies and no read-back triggers neither; and a plain launch loop's kernels are the
same with host-call timing on (PROTON_HOST_CALLS=1) and off (the default).

Each program runs under the `proton` command in its own process. Run on a GPU machine:

    python -m pytest -q tests/gpu/test_gpu_host_calls.py
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton.profiles as profiles  # noqa: E402
from conftest import run_under_proton  # noqa: E402

HOST_FRAMES = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def run(tmp_path, name, code, flags=(), env=None):
    """Runs `code` under `proton -n NAME flags`; returns (findings, the Hatchet tree)."""
    env = {"PROTON_HOST_CALLS": "1", **(env or {})}  # asked for: off by default
    path = run_under_proton(tmp_path, name, code, flags, env)
    return profiles.read(path).advise(), json.loads(path.read_text())


def answers(found):
    return [f for f in found if not f["rule"].startswith("hint.")]


def of_rule(found, rule):
    return [f for f in found if f["rule"] == rule]


def walk(node, path=()):
    """(path of frame names below ROOT, node) for every node."""
    for child in node.get("children", []):
        p = path + (child["frame"]["name"],)
        yield p, child
        yield from walk(child, p)


def host_call_nodes(tree):
    return [(p, n) for p, n in walk(tree[0])
            if p[-1] in HOST_FRAMES or p[-1].startswith("memcpy")]


def top_for_frame(found, frame):
    """The first answer (the analyzer ranks them) whose frame is `frame`."""
    at = [f for f in answers(found) if f["frame"] == frame]
    assert at, f"no finding at {frame}: {found}"
    return at[0]


# .item() in a hot loop: every iteration waits for the matmul before it.
ITEM = """
import torch, proton
x = torch.randn(2048, 2048, device="cuda")
def read_loss(y):
    return y.sum().item()
for _ in range(5):
    read_loss(x @ x)  # warm-up: cuBLAS handles, allocator
total = 0.0
for _ in range(200):
    total += read_loss(x @ x)
print(total)
"""


def test_item_in_a_hot_loop_is_host_sync_at_its_frame(tmp_path):
    found, tree = run(tmp_path, "item", ITEM, flags=("-c", "python"))
    syncs = of_rule(found, "host_sync")
    assert syncs, found
    mine = [f for f in syncs if f["frame"] and f["frame"][-1].endswith("@read_loss")]
    assert len(mine) == 1, syncs
    f = mine[0]
    assert top_for_frame(found, f["frame"])["rule"] == "host_sync"
    assert f["evidence"]["calls"] >= 200
    assert f["evidence"]["blocked_ns"] > 0
    # Python call paths hold no scopes: the share is of the frame's own GPU time (the sums).
    assert f["evidence"]["scope_kernel_time_ns"] > 0 and f["evidence"]["blocked_share"] > 0
    assert f["saving_ns"] > 0
    # The tree: the wait is a child of the frame that read the value (a stream synchronize, or a
    # small pageable device-to-host copy on PyTorch versions that read into pageable memory).
    waits = [(p, n) for p, n in host_call_nodes(tree) if p[-2].endswith("@read_loss")]
    assert waits, host_call_nodes(tree)
    calls = sum(n["metrics"].get("sync_calls", 0) + n["metrics"].get("memcpy_calls", 0)
                for _, n in waits)
    assert calls >= 200
    assert not of_rule(found, "sync_copy"), found


# Pageable tensor.cuda() copies of 64 MB, each blocking the host.
PAGEABLE = """
import torch, proton
host = torch.randn(16 << 20)  # 64 MB, pageable
def to_gpu(t):
    return t.cuda()
for _ in range(2):
    to_gpu(host)  # warm-up: the allocator
for _ in range(20):
    y = to_gpu(host)
    y.mul_(2)
torch.cuda.synchronize()
"""


def test_pageable_copies_are_sync_copy_at_their_frame(tmp_path):
    found, tree = run(tmp_path, "pageable", PAGEABLE, flags=("-c", "python"))
    copies = [f for f in of_rule(found, "sync_copy")
              if f["frame"] and f["frame"][-1].endswith("@to_gpu")]
    assert len(copies) == 1, found
    f = copies[0]
    assert top_for_frame(found, f["frame"])["rule"] == "sync_copy"
    assert f["evidence"]["host_memory"] == "pageable"
    assert f["evidence"]["copy"] == "memcpy HtoD (pageable)"
    assert f["evidence"]["calls"] >= 20
    assert f["evidence"]["bytes"] >= 20 * (64 << 20)
    # The synchronize PyTorch makes after each blocking copy is the copy's time, not a wait of
    # its own: no host_sync at that frame.
    assert not [s for s in of_rule(found, "host_sync") if s["frame"] == f["frame"]], found
    # The warm-up's two copies come from another line of the script: a node of their own.
    nodes = [n for p, n in host_call_nodes(tree)
             if p[-2].endswith("@to_gpu") and p[-1] == "memcpy HtoD (pageable)"
             and n["metrics"]["memcpy_calls"] >= 20]
    assert len(nodes) == 1, nodes
    assert nodes[0]["metrics"]["memcpy_bytes"] >= 20 * (64 << 20)
    assert nodes[0]["metrics"]["memcpy_time (ns)"] > 0


# The control: pinned memory, non_blocking copies, no value read back in the loop.
CONTROL = """
import torch, proton
host = torch.randn(16 << 20).pin_memory()
def to_gpu(t):
    return t.cuda(non_blocking=True)
for _ in range(2):
    to_gpu(host)
torch.cuda.synchronize()
for _ in range(20):
    y = to_gpu(host)
    y.mul_(2)
torch.cuda.synchronize()
"""


def test_pinned_non_blocking_copies_trigger_neither_rule(tmp_path):
    found, tree = run(tmp_path, "control", CONTROL, flags=("-c", "python"))
    assert not of_rule(found, "host_sync"), found
    assert not of_rule(found, "sync_copy"), found
    # Asynchronous pinned copies are not kept; the one synchronize after the loop is.
    assert not [p for p, _ in host_call_nodes(tree) if p[-1].startswith("memcpy")], tree
    assert sum(n["metrics"].get("sync_calls", 0) for _, n in host_call_nodes(tree)) < 10


# A launch loop: the same kernels, with host-call timing on (asked for) and off (the default).
LOOP = """
import torch, proton
x = torch.zeros(1024, device="cuda")
for _ in range(10):
    x.add_(1)
torch.cuda.synchronize()
with proton.scope("loop"):
    for _ in range(2000):
        x.add_(1)
        x.mul_(0.5)
torch.cuda.synchronize()
"""


def kernels(tree):
    return sorted((p, n["metrics"]["count"]) for p, n in walk(tree[0])
                  if "device_id" in n.get("metrics", {}))


def test_a_launch_loop_records_the_same_kernels_with_host_calls_on_and_off(tmp_path):
    _, on = run(tmp_path, "on", LOOP)
    _, off = run(tmp_path, "off", LOOP, env={"PROTON_HOST_CALLS": "0"})
    assert kernels(on) == kernels(off)
    assert sum(c for p, c in kernels(on) if p[:1] == ("loop",)) == 4000
    assert not host_call_nodes(off)
    # On: only the synchronize after the loop (and PyTorch's own setup ones) was timed.
    assert sum(n["metrics"].get("sync_calls", 0) for _, n in host_call_nodes(on)) < 10
    assert not [p for p, _ in host_call_nodes(on) if p[:1] == ("loop",)]
    # Triton's viewer and llnl-hatchet read columns from the root: the host-call ones are there.
    if host_call_nodes(on):
        assert "sync_time (ns)" in on[0]["metrics"]


def test_a_trace_shows_the_waits_on_the_calling_thread(tmp_path):
    script = tmp_path / "traced.py"
    script.write_text(textwrap.dedent(ITEM))
    r = subprocess.run([sys.executable, "-m", "proton", "-n", "traced", "-d", "tree,trace",
                        str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PROTON_HOST_CALLS": "1"})
    assert r.returncode == 0, r.stderr
    trace = json.loads((tmp_path / "traced.chrome_trace").read_text())
    waits = [e for e in trace["traceEvents"] if e.get("cat") == "host_call"]
    assert len(waits) >= 200, [e.get("cat") for e in trace["traceEvents"][:20]]
    kernel_pids = {e["pid"] for e in trace["traceEvents"] if e.get("cat") == "kernel"}
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["pid"] not in kernel_pids for e in waits)
