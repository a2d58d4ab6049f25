"""Always on, on a machine with no GPU: step schedules, idle mode, the control socket and
proton-ctl (CPU-side scopes and metrics are what a window records here)."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

import proton
from proton import _proton, profiles
from tree_util import child


@pytest.fixture(autouse=True)
def clean_control():
    _proton.control_reset_for_testing()
    yield
    _proton.control_reset_for_testing()
    _proton.control_stop_serving()
    proton.finalize()


def read(path):
    with open(path) as f:
        return json.load(f)


def test_schedule_writes_each_active_window_with_its_steps(tmp_path):
    name = str(tmp_path / "train")
    written = []
    with proton.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1, name=name) as s:
        for i in range(12):
            with proton.scope(f"step{i}", {"items": 1}):
                pass
            path = s.step() if i % 2 else proton.step()
            if path:
                written.append(path)
    assert written == [name + ".w0.hatchet", name + ".w1.hatchet"]
    w0, w1 = read(written[0])[0], read(written[1])[0]
    # skip 1, then cycles of 4: step 1 waits, 2 warms up, 3-4 kept; 5 waits, 6 warms up, 7-8 kept.
    assert (w0["frame"]["window"], w0["frame"]["first_step"], w0["frame"]["last_step"]) == (0, 3, 4)
    assert (w1["frame"]["first_step"], w1["frame"]["last_step"]) == (7, 8)
    assert [c["frame"]["name"] for c in w0["children"]] == ["step3", "step4"]
    assert [c["frame"]["name"] for c in w1["children"]] == ["step7", "step8"]  # warm-up dropped
    assert not os.path.exists(name + ".w2.hatchet")
    assert not _proton.has_sessions()


def test_schedule_with_phases_writes_its_windows_as_phases_of_one_profile(tmp_path):
    name = str(tmp_path / "train")
    written = []
    # warmup=1, active=2, repeat=3: steps 0, 3, 6 warm up; 1-2, 4-5, 7-8 are kept.
    with proton.schedule(warmup=1, active=2, repeat=3, phases=True, name=name) as s:
        for i in range(11):
            with proton.scope(f"step{i}"):
                pass
            path = s.step()
            if path:
                written.append(path)
    assert written == [name + ".w0.part_2.hatchet"]
    assert not os.path.exists(name + ".w0.hatchet") and not os.path.exists(name + ".w1.hatchet")
    for phase, steps in enumerate([(1, 2), (4, 5), (7, 8)]):
        root = read(f"{name}.w0.part_{phase}.hatchet")[0]
        assert (root["frame"]["window"], root["frame"]["first_step"],
                root["frame"]["last_step"]) == (phase, *steps)
        assert [c["frame"]["name"] for c in root["children"]] == [f"step{i}" for i in steps]
    assert not _proton.has_sessions()
    with pytest.raises(TypeError, match="phases must be True or False"):
        proton.schedule(active=1, phases="yes")


def test_a_second_schedule_never_overwrites_the_first(tmp_path):
    name = str(tmp_path / "again")
    for _ in range(2):
        with proton.schedule(active=1, repeat=1, name=name):
            proton.step()
    assert sorted(os.listdir(tmp_path)) == ["again.w0.hatchet", "again.w1.hatchet"]


def test_schedule_arguments_are_checked():
    with pytest.raises(ValueError, match="active must be at least 1"):
        proton.schedule(active=0)
    with pytest.raises(TypeError):
        proton.schedule(wait="1")
    with pytest.raises(ValueError, match="wait must be >= 0"):
        proton.schedule(wait=-1)
    assert not _proton.has_sessions()


def test_windows_with_the_api(tmp_path):
    proton.control.configure(str(tmp_path / "api"))
    assert not _proton.has_sessions()  # configured, idle: no session, no backend
    path = proton.control.open_window()
    assert _proton.has_sessions()
    with proton.scope("inside"):
        pass
    assert proton.control.close_window() == path == str(tmp_path / "api.w0.hatchet")
    with proton.scope("outside"):
        pass
    root = read(path)[0]
    assert child(root, "inside") is not None
    assert not any(c["frame"]["name"] == "outside" for c in root["children"])
    with pytest.raises(RuntimeError, match="no window is open"):
        proton.control.close_window()


def test_answer_refuses_another_user_and_logs_it(tmp_path, capfd):
    proton.control.configure(str(tmp_path / "x"))
    reply = _proton.control_answer_for_testing("start", os.geteuid() + 1)
    assert reply.startswith("error refused")
    assert f"refused a control request from uid {os.geteuid() + 1}" in capfd.readouterr().err
    assert not _proton.has_sessions()
    assert _proton.control_answer_for_testing("frobnicate", os.geteuid()) == (
        "error unknown command 'frobnicate' (expected start, stop, window or status)")


def _ctl():
    here = shutil.which("proton-ctl", path=os.path.dirname(sys.executable))
    if here is None:
        pytest.skip("proton-ctl is not installed beside this Python")
    return here


IDLE_SERVER = textwrap.dedent("""
    import os, sys, time
    import proton
    print(proton.control._proton.has_sessions(), flush=True)
    for i in range(100000):
        with proton.scope("request"):
            time.sleep(0.002)
        if os.path.exists(sys.argv[1]):
            break
""")


def _wait_for(predicate, what):
    for _ in range(2000):
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def test_proton_ctl_controls_an_idle_process(tmp_path):
    ctl = _ctl()
    run_dir = tmp_path / "run"
    env = dict(os.environ, PROTON_IDLE="1", PROTON_CONTROL_DIR=str(run_dir))
    stop_file = tmp_path / "stop"
    (tmp_path / "server.py").write_text(IDLE_SERVER)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "server.py"), str(stop_file)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "False"  # idle: no session
        sock = run_dir / f"{proc.pid}.sock"
        _wait_for(sock.exists, "the control socket")
        assert stat.S_IMODE(os.stat(run_dir).st_mode) == 0o700
        assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
        cenv = dict(os.environ, PROTON_CONTROL_DIR=str(run_dir))
        paths = []
        for _ in range(2):  # start/stop twice: two files, never the same one
            started = subprocess.run([ctl, "start", "--name", "serve", str(proc.pid)], env=cenv,
                                     cwd=tmp_path, capture_output=True, text=True)
            assert started.returncode == 0, started.stderr
            time.sleep(0.05)
            stopped = subprocess.run([ctl, "stop", str(proc.pid)], env=cenv,
                                     capture_output=True, text=True)
            assert stopped.returncode == 0, stopped.stderr
            paths.append(stopped.stdout.strip().removeprefix("wrote "))
            assert paths[-1] in started.stdout
        assert paths == [str(tmp_path / "serve.w0.hatchet"), str(tmp_path / "serve.w1.hatchet")]
        for p in paths:
            assert child(read(p)[0], "request") is not None
        bad = subprocess.run([ctl, "restart", str(proc.pid)], env=cenv, capture_output=True,
                             text=True)
        assert bad.returncode == 2 and "unknown command 'restart'" in bad.stderr
        window = subprocess.run([ctl, "window", "--duration", "100ms", str(proc.pid)], env=cenv,
                                capture_output=True, text=True)
        assert window.returncode == 0, window.stderr
        _wait_for(lambda: (tmp_path / "proton.w2.hatchet").exists(), "the timed window's file")
    finally:
        stop_file.write_text("")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not (run_dir / f"{proc.pid}.sock").exists()  # removed at exit


TOGGLED = textwrap.dedent("""
    import os, signal, time
    import proton
    from proton import _proton
    os.kill(os.getpid(), signal.SIGUSR2)
    while not _proton.control_open_path():
        time.sleep(0.01)
    with proton.scope("toggled"):
        pass
    os.kill(os.getpid(), signal.SIGUSR2)
    while _proton.control_open_path():
        time.sleep(0.01)
    with proton.scope("after"):
        pass
""")


def test_proton_idle_command_and_the_toggle_signal(tmp_path):
    (tmp_path / "toggle.py").write_text(TOGGLED)
    env = dict(os.environ, PROTON_CONTROL_DIR=str(tmp_path / "run"))
    env.pop("PROTON_IDLE", None)
    r = subprocess.run([sys.executable, "-m", "proton", "--idle", "-n", "tg", "toggle.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "proton: idle; open a window with `proton-ctl start" in r.stderr
    assert "window written to " + str(tmp_path / "tg.w0.hatchet") in r.stderr
    root = read(tmp_path / "tg.w0.hatchet")[0]
    assert child(root, "toggled") is not None
    assert not any(c["frame"]["name"] == "after" for c in root["children"])
    assert not (tmp_path / "tg.hatchet").exists()  # --idle starts no whole-run session


def test_bad_proton_idle_value_warns_and_imports(tmp_path):
    env = dict(os.environ, PROTON_IDLE="maybe")
    r = subprocess.run([sys.executable, "-c", "import proton; print('imported')"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "imported"
    assert "PROTON_IDLE='maybe' is not 0 or 1" in r.stderr


KILLED_IN_WINDOW = textwrap.dedent("""
    import os, signal, sys
    import proton
    proton.control.idle(sys.argv[1])
    proton.control.open_window()
    with proton.scope("before_sigterm"):
        pass
    if os.fork() == 0:  # a forked worker exits normally: it must not write the parent's window
        sys.exit(0)
    os.wait()
    print("child wrote:", os.path.exists(sys.argv[1] + ".w0.hatchet"), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
""")


def test_sigterm_writes_the_open_window_and_a_fork_child_does_not(tmp_path):
    (tmp_path / "killed.py").write_text(KILLED_IN_WINDOW)
    env = dict(os.environ, PROTON_CONTROL_DIR=str(tmp_path / "run"))
    env.pop("PROTON_IDLE", None)
    r = subprocess.run([sys.executable, str(tmp_path / "killed.py"), str(tmp_path / "k")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGTERM, r.stderr
    assert r.stdout.strip() == "child wrote: False"
    assert child(read(tmp_path / "k.w0.hatchet")[0], "before_sigterm") is not None
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".hatchet") == ["k.w0.hatchet"]


def test_proton_ctl_by_name_and_all(tmp_path):
    """Two idle processes of worker.py and one of other.py: a name reaches the two, `all` the
    three; one line per process, refusals and stale sockets reported, --name made per process."""
    ctl = _ctl()
    run_dir = tmp_path / "run"
    env = dict(os.environ, PROTON_IDLE="1", PROTON_CONTROL_DIR=str(run_dir))
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        env.pop(var, None)  # not ranks of a job: no rank in the lines
    (tmp_path / "worker.py").write_text(IDLE_SERVER)
    (tmp_path / "other.py").write_text(IDLE_SERVER)
    procs = {}
    for folder, script in (("a", "worker.py"), ("b", "worker.py"), ("c", "other.py")):
        (tmp_path / folder).mkdir()
        procs[folder] = subprocess.Popen(
            [sys.executable, str(tmp_path / script), str(tmp_path / folder / "stop")],
            cwd=tmp_path / folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
    pid = {k: p.pid for k, p in procs.items()}
    cenv = dict(os.environ, PROTON_CONTROL_DIR=str(run_dir))

    def ctl_run(*args):
        return subprocess.run([ctl, *args], env=cenv, cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)

    try:
        for k in procs:
            assert procs[k].stdout.readline().strip() == "False"
            _wait_for((run_dir / f"{pid[k]}.sock").exists, f"the control socket of {k}")
        started = ctl_run("start", "worker.py")
        assert started.returncode == 0, started.stderr
        assert sorted(started.stdout.splitlines()) == sorted(
            f"process {pid[k]}: window opened, to be written to {tmp_path / k}/proton.w0.hatchet"
            for k in ("a", "b"))
        status = ctl_run("status", "all")
        assert status.returncode == 0, status.stderr
        assert sorted(status.stdout.splitlines()) == sorted(
            [f"process {pid[k]}: window open, to be written to {tmp_path / k}/proton.w0.hatchet"
             for k in ("a", "b")] + [f"process {pid['c']}: idle; 0 windows written"])
        time.sleep(0.05)
        stopped = ctl_run("stop", "all")  # other.py has no window open: it refuses
        assert stopped.returncode == 1
        assert f"proton-ctl: process {pid['c']}: no window is open" in stopped.stderr
        assert sorted(stopped.stdout.splitlines()) == sorted(
            f"process {pid[k]}: wrote {tmp_path / k}/proton.w0.hatchet" for k in ("a", "b"))
        for k in ("a", "b"):
            assert child(read(tmp_path / k / "proton.w0.hatchet")[0], "request") is not None
        assert not (tmp_path / "c" / "proton.w0.hatchet").exists()
        # One --name for two processes: each writes its own file.
        named = ctl_run("start", "--name", "job", "worker.py")
        assert named.returncode == 0, named.stderr
        assert ctl_run("stop", "worker.py").returncode == 0
        for k in ("a", "b"):
            assert (tmp_path / f"job.pid{pid[k]}.w1.hatchet").exists()
        # other.py killed by SIGKILL: its socket stays behind. The next command reports it,
        # removes it and fails; the living processes still answer; the one after is clean.
        procs["c"].kill()
        procs["c"].wait()
        assert (run_dir / f"{pid['c']}.sock").exists()
        status = ctl_run("status", "all")
        assert status.returncode == 1, status.stderr
        assert status.stderr == (f"proton-ctl: stale socket {run_dir}/{pid['c']}.sock: process "
                                 f"{pid['c']} has ended (socket removed)\n")
        assert len(status.stdout.splitlines()) == 2
        assert not (run_dir / f"{pid['c']}.sock").exists()
        status = ctl_run("status", "all")
        assert status.returncode == 0 and status.stderr == "", status.stderr
        assert len(status.stdout.splitlines()) == 2
        # One worker.py killed: by name it no longer matches (no /proc left), but its socket
        # is removed with a line; the other still answers, and the command succeeds.
        procs["b"].kill()
        procs["b"].wait()
        status = ctl_run("status", "worker.py")
        assert status.returncode == 0, status.stderr
        assert status.stderr == (f"proton-ctl: stale socket {run_dir}/{pid['b']}.sock: process "
                                 f"{pid['b']} has ended (socket removed)\n")
        assert status.stdout.splitlines() == [f"process {pid['a']}: idle; 2 windows written"]
        assert not (run_dir / f"{pid['b']}.sock").exists()
        missing = ctl_run("status", "nothing.py")
        assert missing.returncode == 1 and "no process named 'nothing.py'" in missing.stderr
    finally:
        for k, p in procs.items():
            (tmp_path / k / "stop").write_text("")
            p.communicate(timeout=60)
    assert procs["a"].returncode == 0


# -- periodic flushing inside windows: a worker killed by SIGKILL keeps what it had ----------

FLUSHED_WORKER = textwrap.dedent("""
    import os, sys, time
    import proton
    from proton import _proton
    print("ready", flush=True)
    while not _proton.control_open_path():  # proton-ctl start opens the window
        time.sleep(0.005)
    for i in range(40):
        with proton.scope("before_kill", {"iterations": 1}):
            pass
    print("recorded", flush=True)
    while True:  # runs until SIGKILL; these may or may not reach a flush
        with proton.scope("until_killed", {"iterations": 1}):
            time.sleep(0.001)
""")


def _viewer():
    return os.environ.get("PROTON_VIEWER") or shutil.which(
        "proton-viewer", path=os.path.dirname(sys.executable))


def test_sigkill_inside_a_flushed_window_keeps_what_was_flushed(tmp_path):
    ctl = _ctl()
    run_dir = tmp_path / "run"
    (tmp_path / "worker.py").write_text(FLUSHED_WORKER)
    env = dict(os.environ, PROTON_CONTROL_DIR=str(run_dir))
    env.pop("PROTON_IDLE", None)
    proc = subprocess.Popen([sys.executable, "-m", "proton", "--idle", "--flush-every", "50ms",
                             "-n", "killed", "worker.py"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    window = tmp_path / "killed.w0.hatchet"
    try:
        assert proc.stdout.readline().strip() == "ready"
        _wait_for((run_dir / f"{proc.pid}.sock").exists, "the control socket")
        started = subprocess.run([ctl, "start", str(proc.pid)], env=env, capture_output=True,
                                 text=True, timeout=60)
        assert started.returncode == 0, started.stderr
        assert str(window) in started.stdout
        assert proc.stdout.readline().strip() == "recorded"

        def flushed_all_before_kill():
            try:
                node = profiles.read(window).find("before_kill")
            except (OSError, ValueError):
                return False
            return node is not None and node["iterations"] == 40

        # A flush after "recorded" holds every before_kill scope (no time limit asserted).
        _wait_for(flushed_all_before_kill, "a flush holding the 40 scopes recorded before the kill")
        assert proc.poll() is None  # the window is still open: the file is a flush, not the close
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    profile = profiles.read(window)
    assert profile.find("before_kill")["iterations"] == 40
    assert profile.root.metrics  # a whole profile, root and all
    assert read(window)[0]["frame"]["window"] == 0
    viewer = _viewer()
    if viewer is None:
        pytest.skip("proton-viewer is not installed (set PROTON_VIEWER)")
    shown = subprocess.run([viewer, str(window)], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "before_kill" in shown.stdout


def test_flush_every_is_checked():
    with pytest.raises(ValueError, match="flush_every 'soon' is not a time"):
        proton.control.configure("x", flush_every="soon")
    with pytest.raises(TypeError):
        proton.control.configure("x", flush_every=[1])
    with pytest.raises(ValueError, match="a flush period needs windows that keep"):
        proton.control.configure("x", data="trace", flush_every=1)
    proton.control.configure("x", flush_every="250ms")
    assert _proton.control_flush_ms() == 250
    proton.control.configure("x", flush_every=0.5)
    assert _proton.control_flush_ms() == 500
    proton.control.configure("x")
    assert _proton.control_flush_ms() == 0


def test_flush_every_without_idle_is_a_usage_error(tmp_path):
    (tmp_path / "s.py").write_text("")
    r = subprocess.run([sys.executable, "-m", "proton", "--flush-every", "1s", "s.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--flush-every flushes windows: give it with --idle" in r.stderr


# -- proton.finalize() and a window opened from outside the program ---------------------------

FINALIZED_DURING_WINDOW = textwrap.dedent("""
    import sys
    import proton
    from proton import _proton
    proton.control.idle(sys.argv[1] + "/win")
    proton.control.open_window()  # as proton-ctl start or SIGUSR2 would
    proton.start(sys.argv[1] + "/own")
    with proton.scope("both"):
        pass
    proton.finalize()  # the program's own session only
    print("window open:", bool(_proton.control_open_path()), flush=True)
    with proton.scope("after_finalize"):
        pass
    print("wrote", proton.control.close_window(), flush=True)
""")


def test_finalize_without_an_id_leaves_a_window_recording(tmp_path):
    (tmp_path / "f.py").write_text(FINALIZED_DURING_WINDOW)
    env = dict(os.environ, PROTON_CONTROL_DIR=str(tmp_path / "run"))
    env.pop("PROTON_IDLE", None)
    r = subprocess.run([sys.executable, str(tmp_path / "f.py"), str(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["window open: True", f"wrote {tmp_path}/win.w0.hatchet"]
    own = read(tmp_path / "own.hatchet")[0]
    assert child(own, "both") is not None
    assert not any(c["frame"]["name"] == "after_finalize" for c in own["children"])
    win = read(tmp_path / "win.w0.hatchet")[0]
    assert child(win, "both") is not None and child(win, "after_finalize") is not None



def test_deactivate_and_activate_without_an_id_leave_a_window_alone(tmp_path):
    proton.control.configure(str(tmp_path / "win"))
    path = proton.control.open_window()  # as proton-ctl start would
    proton.start(str(tmp_path / "own"))
    proton.deactivate()  # the program pauses its own session only
    with proton.scope("paused"):
        pass
    proton.activate()
    with proton.scope("resumed"):
        pass
    assert proton.control.close_window() == path
    proton.finalize()
    win, own = read(path)[0], read(tmp_path / "own.hatchet")[0]
    assert child(win, "paused") is not None and child(win, "resumed") is not None
    assert not any(c["frame"]["name"] == "paused" for c in own["children"])
    assert child(own, "resumed") is not None

# -- PROTON_FLUSH_EVERY: idle mode's flush period from the environment alone ----------------

PRINT_FLUSH = "import proton; from proton import _proton; print(_proton.control_flush_ms())"


def _idle_env(tmp_path, **extra):
    env = dict(os.environ, PROTON_CONTROL_DIR=str(tmp_path / "run"), **extra)
    for var in ("PROTON_IDLE", "PROTON_FLUSH_EVERY"):
        if var not in extra:
            env.pop(var, None)
    return env


def test_proton_flush_every_sets_the_period_of_proton_idle_at_import(tmp_path):
    r = subprocess.run([sys.executable, "-c", PRINT_FLUSH], cwd=tmp_path, capture_output=True,
                       env=_idle_env(tmp_path, PROTON_IDLE="1", PROTON_FLUSH_EVERY="2s"),
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2000"


def test_proton_flush_every_for_the_idle_command_and_the_flag_wins(tmp_path):
    (tmp_path / "p.py").write_text(PRINT_FLUSH)
    env = _idle_env(tmp_path, PROTON_FLUSH_EVERY="750ms")
    outs = []
    for flag in ([], ["--flush-every", "3s"]):
        r = subprocess.run([sys.executable, "-m", "proton", "--idle", *flag, "p.py"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout.strip())
    assert outs == ["750", "3000"]


def test_bad_proton_flush_every_is_one_line_naming_it(tmp_path):
    r = subprocess.run([sys.executable, "-c", PRINT_FLUSH], cwd=tmp_path, capture_output=True,
                       env=_idle_env(tmp_path, PROTON_IDLE="1", PROTON_FLUSH_EVERY="soon"),
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "0"  # imported, not idle
    assert "PROTON_FLUSH_EVERY='soon' is not a time from 1ms to 24h" in r.stderr
    (tmp_path / "p.py").write_text(PRINT_FLUSH)
    r = subprocess.run([sys.executable, "-m", "proton", "--idle", "p.py"], cwd=tmp_path,
                       env=_idle_env(tmp_path, PROTON_FLUSH_EVERY="soon"), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    assert "PROTON_FLUSH_EVERY='soon' is not a time from 1ms to 24h" in r.stderr
