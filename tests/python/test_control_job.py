"""A two-rank torchrun job (gloo, on the CPU), every rank under `proton --idle`, controlled from
another shell by proton-ctl: one command opens a window in both ranks, each rank writes its own
file, and the command says where each went. Skipped without torch's gloo backend."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from proton import profiles

torch = pytest.importorskip("torch")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

WORKER = textwrap.dedent("""
    import os, sys, time
    import torch
    import torch.distributed as dist
    import proton
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    open(f"ready.{rank}", "w").close()  # in the collective loop from here on
    stop = sys.argv[1]
    while True:
        # Rank 0 decides when to stop, so both ranks leave after the same collective.
        flag = torch.tensor([1.0 if rank == 0 and os.path.exists(stop) else 0.0])
        with proton.scope("allreduce", {"calls": 1}):
            dist.all_reduce(flag)
        if flag.item() > 0:
            break
        time.sleep(0.002)
    dist.destroy_process_group()
""")

DEADLINE_S = 60  # each wait; a healthy run takes a few seconds


def _ctl():
    here = shutil.which("proton-ctl", path=os.path.dirname(sys.executable))
    if here is None:
        pytest.skip("proton-ctl is not installed beside this Python")
    return here


def _wait_for(predicate, what):
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


def _sockets(run_dir):
    return sorted(p.name for p in run_dir.glob("*.sock")) if run_dir.exists() else []


def test_proton_ctl_opens_a_window_in_every_rank_of_a_torchrun_job(tmp_path):
    ctl = _ctl()
    run_dir = tmp_path / "run"
    stop = tmp_path / "stop"
    (tmp_path / "worker.py").write_text(WORKER)
    env = dict(os.environ, PROTON_CONTROL_DIR=str(run_dir), OMP_NUM_THREADS="1")
    for var in ("PROTON_IDLE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(var, None)
    job = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "proton", "--idle", "-n", "job", "worker.py", str(stop)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    try:
        _wait_for(lambda: len(_sockets(run_dir)) == 2, "a control socket for each rank")
        _wait_for(lambda: all((tmp_path / f"ready.{r}").exists() for r in (0, 1)),
                  "both ranks in their loop of collectives")
        cenv = dict(os.environ, PROTON_CONTROL_DIR=str(run_dir))
        # By the script's name: reaches both ranks and not the launcher (it has no socket).
        opened = subprocess.run([ctl, "window", "--duration", "300ms", "--timeout", "30s",
                                 "worker.py"], env=cenv, cwd=tmp_path, capture_output=True,
                                text=True, timeout=DEADLINE_S)
        assert opened.returncode == 0, opened.stderr
        lines = opened.stdout.splitlines()
        assert len(lines) == 2, opened.stdout
        paths = [tmp_path / f"job.rank{r}.w0.hatchet" for r in (0, 1)]
        for rank, (line, path) in enumerate(zip(lines, paths)):  # ranks first, in order
            assert f"(rank {rank}): window opened for 300 ms, to be written to {path}" in line
        for path in paths:
            _wait_for(path.exists, f"{path.name}, written when the window ends")
        for rank, path in enumerate(paths):
            node = profiles.read(path).find("allreduce")
            assert node is not None and node["calls"] >= 1, path
            with open(path) as f:
                root = json.load(f)[0]["frame"]
            assert (root["rank"], root["world_size"], root["window"]) == (rank, 2, 0)
        # `all` reaches both too; status names each rank.
        status = subprocess.run([ctl, "status", "all"], env=cenv, capture_output=True,
                                text=True, timeout=DEADLINE_S)
        assert status.returncode == 0, status.stderr
        lines = status.stdout.splitlines()
        assert len(lines) == 2, status.stdout
        for rank, line in enumerate(lines):
            assert line.endswith(f" (rank {rank}): idle; 1 windows written"), line
    finally:
        stop.write_text("")
        try:
            out, _ = job.communicate(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            out, _ = job.communicate()
            raise AssertionError(f"the job did not end:\n{out}")
    assert job.returncode == 0, out
    assert _sockets(run_dir) == []  # each rank removed its socket at exit
