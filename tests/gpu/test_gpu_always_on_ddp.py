"""Always on in a two-GPU torchrun job over NCCL: every rank under `proton --idle`, one
`proton-ctl window ... all` from another shell opens a window in both ranks, each rank writes
its own file with its NCCL kernels and rank block, and the command says where each went.
Skipped unless two GPUs are present. The CPU version (gloo) is tests/python/test_control_job.py.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")
if torch.cuda.device_count() < 2:
    pytest.skip("needs two CUDA GPUs", allow_module_level=True)

from conftest import NO_MULTICAST, load_profile  # noqa: E402

WORKER = textwrap.dedent("""
    import os, sys, time
    import torch
    import torch.distributed as dist
    import proton
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    x = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(x)  # NCCL's communicators are set up before the window
    torch.cuda.synchronize()
    open(f"ready.{rank}", "w").close()
    stop = sys.argv[1]
    while True:
        flag = torch.tensor([1.0 if rank == 0 and os.path.exists(stop) else 0.0], device="cuda")
        with proton.scope("allreduce"):
            dist.all_reduce(x)
            dist.all_reduce(flag)
        if flag.item() > 0:
            break
        time.sleep(0.002)
    dist.destroy_process_group()
""")


def _wait_for(predicate, what, deadline_s=300):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def test_proton_ctl_window_in_both_ranks_of_an_nccl_job(tmp_path):
    ctl = shutil.which("proton-ctl", path=os.path.dirname(sys.executable))
    if ctl is None:
        pytest.skip("proton-ctl is not installed beside this Python")
    run_dir = tmp_path / "run"
    stop = tmp_path / "stop"
    (tmp_path / "worker.py").write_text(WORKER)
    env = dict(os.environ, PROTON_CONTROL_DIR=str(run_dir), **NO_MULTICAST)
    env.pop("PROTON_IDLE", None)
    job = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "proton", "--idle", "--flush-every", "1s", "-n", "job", "worker.py", str(stop)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    try:
        _wait_for(lambda: all((tmp_path / f"ready.{r}").exists() for r in (0, 1)),
                  "both ranks in their loop of collectives")
        cenv = dict(os.environ, PROTON_CONTROL_DIR=str(run_dir))
        opened = subprocess.run([ctl, "window", "--duration", "2s", "all"], env=cenv,
                                capture_output=True, text=True, timeout=300)
        assert opened.returncode == 0, opened.stderr
        paths = [tmp_path / f"job.rank{r}.w0.hatchet" for r in (0, 1)]
        lines = opened.stdout.splitlines()
        assert len(lines) == 2, opened.stdout
        for rank, (line, path) in enumerate(zip(lines, paths)):
            assert f"(rank {rank}): window opened for 2000 ms, to be written to {path}" in line

        def both_written():
            status = subprocess.run([ctl, "status", "all"], env=cenv, capture_output=True,
                                    text=True, timeout=300).stdout
            return status.count("idle; 1 windows written") == 2

        _wait_for(both_written, "both windows written")
        for rank, path in enumerate(paths):
            profile = load_profile(path)
            assert profile.root["frame"]["rank"] == rank
            assert profile.root["frame"]["world_size"] == 2
            nccl = profile.kernels(profile.node("allreduce"), match="nccl")
            assert nccl, profile.render()
    finally:
        stop.write_text("")
        try:
            out, _ = job.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            out, _ = job.communicate()
            raise AssertionError(f"the job did not end:\n{out[-4000:]}")
    assert job.returncode == 0, out[-4000:]
    with open(paths[0]) as f:
        assert json.load(f)[0]["frame"]["window"] == 0
