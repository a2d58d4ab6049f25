"""Never lose a profile, with kernels: exit without finalize(), SIGTERM, SIGINT, SIGKILL under
periodic flushing, fork, and 1,000 start/finalize cycles with kernels in each.

Each case runs its program in a fresh interpreter (signals and exit paths end the process)."""

import json
import signal
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton.profiles  # noqa: E402

PRELUDE = """
import os, signal, sys, time
import torch
import proton
x = torch.ones(1 << 16, device="cuda")
"""

KERNELS = """
proton.start("gpu")
with proton.scope("work"):
    for _ in range(10):
        x.mul_(1.0)
torch.cuda.synchronize()
"""


def _program(tmp_path, *parts):
    script = tmp_path / "prog.py"
    script.write_text("".join(textwrap.dedent(p).strip("\n") + "\n" for p in (PRELUDE, ) + parts))
    return [sys.executable, str(script)]


def _spawn(tmp_path, *parts):
    proc = subprocess.Popen(_program(tmp_path, *parts), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    line = proc.stdout.readline()
    assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def _kernel_count(path, scope="work"):
    prof = proton.profiles.read(path)
    node = prof[scope]
    return sum(n.exclusive.get("count", 0) for n in node.walk() if n.is_kernel)


READY = """
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def test_exit_without_finalize_writes_kernels(tmp_path):
    done = subprocess.run(_program(tmp_path, KERNELS), capture_output=True, text=True,
                          timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _kernel_count(tmp_path / "gpu.hatchet") == 10


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_writes_kernels_and_keeps_the_exit_status(tmp_path, signum):
    proc = _spawn(tmp_path, KERNELS, READY)
    proc.send_signal(signum)
    assert proc.wait(120) == -signum, proc.stderr.read()
    assert _kernel_count(tmp_path / "gpu.hatchet") == 10


def test_sigkill_with_periodic_flushing_keeps_completed_phases(tmp_path):
    proc = _spawn(tmp_path, """
        s = proton.start("pf", mode="periodic_flushing")
        for phase in range(3):
            with proton.scope("work"):
                for _ in range(phase + 1):
                    x.mul_(1.0)
            torch.cuda.synchronize()
            # Deliver the phase's records first, so that advancing completes (and writes) it.
            proton.deactivate(s, flushing=True)
            proton.activate(s)
            proton.data.advance_phase(s)
        with proton.scope("work"):  # the open phase: lost to SIGKILL, and only it
            x.mul_(1.0)
        print("parts", sorted(f for f in os.listdir(".") if ".part_" in f), file=sys.stderr)
        """, READY)
    proc.kill()
    proc.wait(60)
    err = proc.stderr.read()
    for phase in range(3):
        path = tmp_path / f"pf.part_{phase}.hatchet"
        assert path.exists(), err
        assert _kernel_count(path) == phase + 1
    assert not (tmp_path / "pf.part_3.hatchet").exists()


def test_fork_child_does_not_write_over_the_parent(tmp_path):
    done = subprocess.run(_program(tmp_path, KERNELS, """
        pid = os.fork()
        if pid == 0:  # no CUDA in the child: it runs proton's exit paths, which must not write
            proton.finalize()
            proton._exit._at_exit()
            os._exit(0)  # not sys.exit: CUDA/CUPTI's own exit handlers do not belong in a fork
        os.waitpid(pid, 0)
        print("after_child", os.path.exists("gpu.hatchet"), flush=True)
        proton.finalize()
        """), capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "after_child False" in done.stdout
    assert _kernel_count(tmp_path / "gpu.hatchet") == 10


def test_thousand_cycles_with_kernels_keep_memory_and_fds_flat(tmp_path):
    done = subprocess.run(_program(tmp_path, """
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        def cycle():
            proton.start("cycle")
            with proton.scope("s"):
                x.mul_(1.0)
            proton.finalize()
        for _ in range(200):
            cycle()
        rss0, fds0 = rss(), len(os.listdir("/proc/self/fd"))
        for _ in range(1000):
            cycle()
        print(rss() - rss0, len(os.listdir("/proc/self/fd")) - fds0)
        """), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    grown, fds = map(int, done.stdout.split()[-2:])
    assert grown < 2 * 1024 * 1024, f"RSS grew by {grown} bytes over 1,000 cycles"
    assert fds == 0
    assert json.loads((tmp_path / "cycle.hatchet").read_text())[0]["frame"]["name"] == "ROOT"
