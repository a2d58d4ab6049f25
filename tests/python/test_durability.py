"""Never lose a profile: exit without finalize(), SIGTERM/SIGINT, SIGKILL during writes, fork,
and 1,000 start/finalize cycles. Each case runs a small program in a fresh interpreter."""

import json
import signal
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc")


def _program(tmp_path, *parts):
    """A script from `parts`, each dedented on its own."""
    script = tmp_path / "prog.py"
    body = "".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts)
    script.write_text("import os, signal, sys, time\nimport proton\n" + body)
    return [sys.executable, str(script)]


def _default_sigint():
    # A test command started in the background by a shell without job control inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt: the programs get the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # exec then lets Python install its own


def _run(tmp_path, *parts, timeout=60):
    return subprocess.run(_program(tmp_path, *parts), capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path, preexec_fn=_default_sigint)


def _spawn(tmp_path, *parts):
    """Starts the program and waits for its 'ready' line."""
    proc = subprocess.Popen(_program(tmp_path, *parts), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            preexec_fn=_default_sigint)
    line = proc.stdout.readline()
    assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def _names(path):
    """Every frame name in a Hatchet JSON file (which must parse as a whole)."""
    with open(path) as f:
        root = json.load(f)[0]
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(node["frame"]["name"])
        stack.extend(node.get("children", []))
    return out


RECORD = """
a = proton.start("a")
b = proton.start("b")
with proton.scope("work", {"bytes": 5}):
    pass
"""

WAIT = """
with proton.scope("loop", {"bytes": 1}):
    pass
print("ready", flush=True)
while True:
    with proton.scope("loop", {"bytes": 1}):
        time.sleep(0.01)
"""


# -- interpreter exit -----------------------------------------------------------------------


def test_exit_without_finalize_writes_every_open_session(tmp_path):
    done = _run(tmp_path, RECORD, "proton.deactivate(b)\n")
    assert done.returncode == 0, done.stderr
    assert "work" in _names(tmp_path / "a.hatchet")
    assert "work" in _names(tmp_path / "b.hatchet")  # a deactivated session is written too


@pytest.mark.parametrize("ending, status", [("sys.exit(3)", 3), ("raise RuntimeError('x')", 1)])
def test_sys_exit_and_uncaught_errors_write_and_keep_the_status(tmp_path, ending, status):
    done = _run(tmp_path, RECORD, ending)
    assert done.returncode == status, done.stderr
    assert "work" in _names(tmp_path / "a.hatchet")


def test_exit_hook_reports_an_unwritable_profile_and_keeps_the_status(tmp_path):
    done = _run(tmp_path, """
        import shutil
        os.mkdir("gone")
        proton.start("gone/p")
        with proton.scope("s", {"bytes": 1}):
            pass
        shutil.rmtree("gone")
        sys.exit(4)
        """)
    assert done.returncode == 4
    assert "proton: could not write the profile at interpreter exit" in done.stderr


def test_finalized_sessions_are_not_written_again_at_exit(tmp_path):
    done = _run(tmp_path, RECORD, """
        proton.finalize()
        os.remove("a.hatchet")
        """)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "a.hatchet").exists()


# -- signals --------------------------------------------------------------------------------


def test_sigterm_writes_then_dies_by_sigterm(tmp_path):
    proc = _spawn(tmp_path, RECORD, WAIT)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM, proc.stderr.read()
    assert "loop" in _names(tmp_path / "a.hatchet")
    assert "work" in _names(tmp_path / "b.hatchet")


def _scope_names(events):
    # A scope's own frame: its event's name, or "<scope>: <metric, value>, ..." for a scope
    # given metrics (Triton's metric event); the call path ends with the scope either way.
    return {e["args"]["call_stack"][-1] for e in events
            if e.get("ph") == "X" and e.get("args", {}).get("call_stack")}


def test_sigterm_writes_trace_and_tree_of_a_tree_trace_session(tmp_path):
    proc = _spawn(tmp_path, """
        proton.start("both", data="tree,trace")
        """, WAIT)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM, proc.stderr.read()
    assert "loop" in _names(tmp_path / "both.hatchet")
    trace = json.loads((tmp_path / "both.chrome_trace").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert "loop" in _scope_names(events)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("both")) == \
        ["both.chrome_trace", "both.hatchet"]  # no temporary left behind


def test_sigterm_exit_status_is_143_in_a_shell(tmp_path):
    prog = _program(tmp_path, RECORD, "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(30)")
    done = subprocess.run(["sh", "-c", '"$0" "$1"; echo "status=$?"', *prog], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert "status=143" in done.stdout, done.stderr
    assert "work" in _names(tmp_path / "a.hatchet")


def test_sigint_keyboardinterrupt_writes_and_exits_130(tmp_path):
    proc = _spawn(tmp_path, RECORD, WAIT)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == -signal.SIGINT  # Python's own KeyboardInterrupt exit (status 130)
    assert "KeyboardInterrupt" in proc.stderr.read()
    assert "loop" in _names(tmp_path / "a.hatchet")


def test_sigint_with_default_action_writes_and_dies_by_sigint(tmp_path):
    proc = _spawn(tmp_path, "signal.signal(signal.SIGINT, signal.SIG_DFL)", RECORD, WAIT)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == -signal.SIGINT, proc.stderr.read()
    assert "loop" in _names(tmp_path / "a.hatchet")


def test_caught_keyboardinterrupt_keeps_the_session_recording(tmp_path):
    done = _run(tmp_path, """
        s = proton.start("a")
        with proton.scope("before", {"bytes": 1}):
            pass
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        except KeyboardInterrupt:
            print("caught", flush=True)
        with proton.scope("after", {"bytes": 1}):
            pass
        proton.finalize()
        """)
    assert done.returncode == 0, done.stderr
    assert "caught" in done.stdout
    names = _names(tmp_path / "a.hatchet")
    assert "before" in names and "after" in names


def test_program_handler_installed_before_start_keeps_working(tmp_path):
    proc = _spawn(tmp_path, """
        got = []
        signal.signal(signal.SIGTERM, lambda n, f: got.append(n))
        """, RECORD, """
        print("ready", flush=True)
        while not got:
            time.sleep(0.01)
        print("handled", flush=True)
        with proton.scope("after_signal", {"bytes": 1}):
            pass
        sys.exit(7)
        """)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 7, proc.stderr.read()
    assert "handled" in proc.stdout.read()
    assert "after_signal" in _names(tmp_path / "a.hatchet")  # the session outlived the signal


def test_program_handler_installed_after_start_keeps_working(tmp_path):
    proc = _spawn(tmp_path, RECORD, """
        def stop(n, f):
            print("theirs", flush=True)
            sys.exit(5)
        signal.signal(signal.SIGTERM, stop)
        """, WAIT)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 5, proc.stderr.read()
    assert "theirs" in proc.stdout.read()
    assert "loop" in _names(tmp_path / "a.hatchet")


def test_program_handler_chaining_to_ours_gets_the_default_action(tmp_path):
    proc = _spawn(tmp_path, RECORD, """
        ours = signal.getsignal(signal.SIGTERM)
        def chained(n, f):
            print("theirs", flush=True)
            ours(n, f)
        signal.signal(signal.SIGTERM, chained)
        """, WAIT)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM, proc.stderr.read()
    assert "theirs" in proc.stdout.read()
    assert "loop" in _names(tmp_path / "a.hatchet")


def test_ignored_sigterm_stays_ignored(tmp_path):
    done = _run(tmp_path, "signal.signal(signal.SIGTERM, signal.SIG_IGN)", RECORD, """
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        print("alive", flush=True)
        """)
    assert done.returncode == 0, done.stderr
    assert "alive" in done.stdout


# -- SIGKILL --------------------------------------------------------------------------------


@pytest.mark.parametrize("writes", [1, 2, 5])
def test_sigkill_during_writes_leaves_the_previous_profile(tmp_path, writes):
    # Each round writes a large profile over the last and says so; killed once `writes` rounds
    # are written, wherever the next write is, the file is a whole profile (no timing involved:
    # the kill follows a line the program prints after its write).
    proc = _spawn(tmp_path, """
        print("ready", flush=True)
        i = 0
        while True:
            proton.start("big")
            for k in range(3000):
                with proton.scope(f"scope_{i}_{k}", {"bytes": k}):
                    pass
            proton.finalize()
            i += 1
            print("written", i, flush=True)
        """)
    for i in range(1, writes + 1):
        assert proc.stdout.readline().split() == ["written", str(i)]
    proc.kill()
    proc.wait(30)
    names = _names(tmp_path / "big.hatchet")  # parses as a whole: never truncated
    assert len(names) == 3001


@pytest.mark.parametrize("earlier_writes", [0, 1])
def test_sigkill_in_the_middle_of_a_write_keeps_the_previous_profile(tmp_path, earlier_writes):
    # A write is caught half way, deterministically: its temporary file is a FIFO made
    # beforehand, so the writer blocks once the pipe holds 64 KB; a thread reads the first bytes
    # (the write is under way) and kills the process with SIGKILL. After one earlier write the
    # file is that profile, whole; killed in the first write, there is no file, never a part.
    proc = _spawn(tmp_path, f"""
        import threading
        def write_big():
            proton.start("big")
            for k in range(3000):
                with proton.scope(f"scope_{{k}}", {{"bytes": k}}):
                    pass
            proton.finalize()
        for _ in range({earlier_writes}):
            write_big()
        tmp = f"big.hatchet.tmp.{{os.getpid()}}"
        os.mkfifo(tmp)
        def kill_mid_write():
            with open(tmp, "rb") as fifo:
                got = fifo.read(4096)
                print("read", len(got), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        threading.Thread(target=kill_mid_write, daemon=True).start()
        print("ready", flush=True)
        write_big()
        print("never killed", flush=True)
        """)
    assert proc.wait(120) == -signal.SIGKILL, proc.stdout.read()
    assert "read 4096" in proc.stdout.read()  # killed with the write under way
    if earlier_writes:
        assert len(_names(tmp_path / "big.hatchet")) == 3001  # the previous profile, whole
    else:
        assert not (tmp_path / "big.hatchet").exists()


def test_periodic_flushing_loses_at_most_the_current_phase_on_sigkill(tmp_path):
    proc = _spawn(tmp_path, """
        s = proton.start("pf", mode="periodic_flushing")
        print("ready", flush=True)
        for phase in range(3):
            with proton.scope(f"phase{phase}", {"bytes": phase + 1}):
                pass
            proton.data.advance_phase(s)
            print(phase, flush=True)
        with proton.scope("unfinished", {"bytes": 1}):
            pass
        time.sleep(60)
        """)
    for phase in range(3):
        assert proc.stdout.readline().strip() == str(phase)
    proc.kill()
    proc.wait(30)
    for phase in range(3):
        assert f"phase{phase}" in _names(tmp_path / f"pf.part_{phase}.hatchet")
    assert not (tmp_path / "pf.part_3.hatchet").exists()  # the open phase is what is lost


# -- fork -----------------------------------------------------------------------------------


def test_fork_child_never_writes_the_parent_profile(tmp_path):
    done = _run(tmp_path, """
        proton.start("parent")
        with proton.scope("before_fork", {"bytes": 1}):
            pass
        pid = os.fork()
        if pid == 0:
            with proton.scope("in_child", {"bytes": 1}):
                pass
            proton.finalize()  # inherited: not the child's to write
            proton.start("child_own")
            with proton.scope("child_scope", {"bytes": 1}):
                pass
            sys.exit(0)  # the exit hook writes the child's own session only
        os.waitpid(pid, 0)
        print("after_child", os.path.exists("parent.hatchet"), flush=True)
        with proton.scope("after_fork", {"bytes": 1}):
            pass
        proton.finalize()
        """)
    assert done.returncode == 0, done.stderr
    assert "after_child False" in done.stdout
    names = _names(tmp_path / "parent.hatchet")
    assert "before_fork" in names and "after_fork" in names and "in_child" not in names
    child = _names(tmp_path / "child_own.hatchet")
    assert "child_scope" in child and "before_fork" not in child


def test_fork_child_killed_by_sigterm_does_not_write_the_parent_profile(tmp_path):
    done = _run(tmp_path, """
        proton.start("parent")
        with proton.scope("before_fork", {"bytes": 1}):
            pass
        pid = os.fork()
        if pid == 0:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
            os._exit(9)
        _, status = os.waitpid(pid, 0)
        print("child", os.WTERMSIG(status) if os.WIFSIGNALED(status) else -1,
              os.path.exists("parent.hatchet"), flush=True)
        """)
    assert done.returncode == 0, done.stderr
    assert f"child {int(signal.SIGTERM)} False" in done.stdout
    assert "before_fork" in _names(tmp_path / "parent.hatchet")  # written by the parent's exit


def test_fork_child_does_not_disturb_the_parent_trace(tmp_path):
    done = _run(tmp_path, """
        proton.start("t", data="trace")
        with proton.scope("parent_scope", {"bytes": 1}):
            pass
        pid = os.fork()
        if pid == 0:
            for i in range(20000):
                with proton.scope("child_scope", {"bytes": 1}):
                    pass
            sys.exit(0)
        os.waitpid(pid, 0)
        proton.finalize()
        """)
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "t.chrome_trace").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = _scope_names(events)
    assert "parent_scope" in names and "child_scope" not in names


# -- many sessions --------------------------------------------------------------------------


def test_thousand_start_finalize_cycles_keep_memory_and_fds_flat(tmp_path):
    done = _run(tmp_path, """
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        def cycle(i):
            proton.start("cycle")
            with proton.scope("s", {"bytes": i}):
                pass
            proton.finalize()
        for i in range(200):  # warm up allocator pools and name tables
            cycle(i)
        rss0, fds0 = rss(), len(os.listdir("/proc/self/fd"))
        for i in range(1000):
            cycle(i)
        print(rss() - rss0, len(os.listdir("/proc/self/fd")) - fds0)
        """, timeout=300)
    assert done.returncode == 0, done.stderr
    grown, fds = map(int, done.stdout.split())
    assert grown < 2 * 1024 * 1024, f"RSS grew by {grown} bytes over 1,000 cycles"
    assert fds == 0
