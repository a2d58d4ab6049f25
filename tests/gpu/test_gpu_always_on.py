"""Always on, on a real GPU: an idle process has no CUPTI until a window opens, a window holds
its own kernels and none from outside it, many windows leave memory and fds flat, and after a
window closes CUPTI is free for torch.profiler in the same process."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from conftest import is_kernel, load_profile  # noqa: E402


def kernel_names(node):
    out = []
    for c in node.get("children", []):
        if is_kernel(c):
            out.append(c["frame"]["name"])
        out += kernel_names(c)
    return out


IDLE_THEN_WINDOW = """
import json, sys, torch, proton
from proton import _proton
proton.control.idle(sys.argv[1])
x = torch.ones(1 << 16, device="cuda")
with proton.scope("before"):
    x.mul_(2)
torch.cuda.synchronize()
sessions_while_idle = _proton.has_sessions()
proton.control.open_window()
with proton.scope("inside"):
    x.add_(1)
torch.cuda.synchronize()
path = proton.control.close_window()
with proton.scope("after"):
    x.sub_(1)
torch.cuda.synchronize()
print("OUTCOME " + json.dumps({"path": path, "idle_sessions": sessions_while_idle}))
"""


def outcome(result):
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("OUTCOME ")]
    assert result.returncode == 0 and lines, result.stderr[-4000:]
    return json.loads(lines[-1][len("OUTCOME "):])


def test_idle_then_window_records_only_the_windows_kernels(out_name, run_script):
    got = outcome(run_script(IDLE_THEN_WINDOW, out_name))
    assert got["idle_sessions"] is False
    profile = load_profile(got["path"])
    assert profile.has("inside")
    assert kernel_names(profile.node("inside")), profile.render()
    assert not profile.has("before") and not profile.has("after"), profile.render()


FIFTY_WINDOWS = """
import json, os, sys, torch, proton
proton.control.idle(sys.argv[1])
x = torch.ones(1 << 16, device="cuda")

def rss_kb():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS")).split()[1])

def fds():
    return len(os.listdir("/proc/self/fd"))

samples = []
for k in range(50):
    proton.control.open_window()
    for _ in range(20):
        x.add_(1)
    torch.cuda.synchronize()
    proton.control.close_window()
    if k in (9, 49):
        samples.append((rss_kb(), fds()))
print("OUTCOME " + json.dumps({"samples": samples}))
"""


def test_fifty_windows_leave_memory_and_fds_flat(out_name, run_script):
    (rss10, fd10), (rss50, fd50) = outcome(run_script(FIFTY_WINDOWS, out_name, timeout=600))["samples"]
    assert fd50 <= fd10, (fd10, fd50)
    assert rss50 - rss10 < 32 * 1024, f"RSS grew {rss50 - rss10} kB over 40 windows"


TORCH_AFTER_WINDOW = """
import json, sys, torch, proton
from torch.profiler import ProfilerActivity, profile
proton.control.idle(sys.argv[1])
x = torch.ones(1 << 16, device="cuda")
proton.control.open_window()
x.add_(1)
torch.cuda.synchronize()
proton.control.close_window()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    x.mul_(3)
    torch.cuda.synchronize()
kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
print("OUTCOME " + json.dumps({"torch_kernels": kernels}))
"""


def test_torch_profiler_runs_after_a_proton_window(out_name, run_script):
    got = outcome(run_script(TORCH_AFTER_WINDOW, out_name))
    assert got["torch_kernels"] >= 1, got


TORCH_THEN_WINDOW = """
import json, sys, torch, proton
from torch.profiler import ProfilerActivity, profile
proton.control.idle(sys.argv[1])
x = torch.ones(1 << 16, device="cuda")
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    x.mul_(3)
    torch.cuda.synchronize()
torch_kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
proton.control.open_window()
with proton.scope("inside"):
    x.add_(1)
torch.cuda.synchronize()
path = proton.control.close_window()
print("OUTCOME " + json.dumps({"path": path, "torch_kernels": torch_kernels}))
"""


def test_a_proton_window_after_torch_profiler_times_kernels_or_says_why(out_name, run_script):
    # The other order: Kineto held CUPTI first. The window that opens after it finished either
    # times its own kernel or, where Kineto keeps its CUPTI subscription for the process's life,
    # says so on stderr once; the program goes on either way and nothing is lost silently.
    result = run_script(TORCH_THEN_WINDOW, out_name)
    got = outcome(result)
    assert got["torch_kernels"] >= 1, got
    profile = load_profile(got["path"])
    assert profile.has("inside"), profile.render()
    if kernel_names(profile.node("inside")):
        return
    said = [ln for ln in result.stderr.splitlines() if ln.startswith("proton:") and "CUPTI" in ln]
    assert len(said) == 1, f"no kernel and no word why:\n{result.stderr[-4000:]}"


FLUSHED_THEN_KILLED = """
import sys, time, torch, proton
proton.control.idle(sys.argv[1], flush_every="50ms")
x = torch.ones(1 << 16, device="cuda")
proton.control.open_window()
with proton.scope("flushed"):
    for _ in range(20):
        x.mul_(1.0001)
torch.cuda.synchronize()
print("recorded", flush=True)
while True:  # until SIGKILL
    with proton.scope("until_killed"):
        x.add_(1)
    time.sleep(0.001)
"""


def test_sigkill_in_a_flushed_window_keeps_the_flushed_kernels(tmp_path):
    (tmp_path / "killed.py").write_text(FLUSHED_THEN_KILLED)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "killed.py"), str(tmp_path / "k")],
                            env=dict(os.environ, PROTON_CONTROL_DIR=str(tmp_path / "run")),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    path = tmp_path / "k.w0.hatchet"

    def flushed():
        try:
            p = load_profile(path)
            return p.has("flushed") and p.count(p.node("flushed")) == 20
        except (AssertionError, ValueError, OSError):  # not written yet
            return False

    try:
        assert proc.stdout.readline().strip() == "recorded", proc.stderr.read()[-4000:]
        end = time.monotonic() + 120
        while not flushed():  # a flush after the 20 kernels completed (no time asserted)
            assert time.monotonic() < end and proc.poll() is None, "no flush held the kernels"
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    profile = load_profile(path)
    assert profile.count(profile.node("flushed")) == 20, profile.render()
    assert profile.root["frame"]["window"] == 0
