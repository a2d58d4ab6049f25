"""A benchmark step in a child process: run it with a timeout, keep its output, and read the
one JSON line it ends with (optionally after a marker such as "RESULT ")."""

import json
import os
import subprocess
from dataclasses import dataclass

from lib import BENCH


@dataclass
class Child:
    cmd: list
    rc: int  # None when killed at the timeout; negative: killed by that signal
    stdout: str
    stderr: str
    timeout: float = None

    @property
    def timed_out(self):
        return self.rc is None

    def result(self, marker=""):
        """The last stdout line that starts with `marker`, parsed as JSON (marker removed);
        None when there is none or it does not parse."""
        for line in reversed(self.stdout.splitlines()):
            line = line.strip()
            if line.startswith(marker) and line[len(marker):].startswith("{"):
                try:
                    return json.loads(line[len(marker):])
                except ValueError:
                    return None
        return None

    def error(self, tail=2000):
        """Why the child gave no result, in a line and the tail of its stderr; None when it
        exited with 0."""
        if self.timed_out:
            return f"timeout after {self.timeout} s"
        if self.rc != 0:
            return f"exit status {self.rc}: " + self.stderr[-tail:]
        return None


def run(cmd, timeout=None, **kwargs):
    """Runs `cmd` to the end or to `timeout` seconds; never raises for either."""
    cmd = [str(c) for c in cmd]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")  # noqa: E731
        return Child(cmd, None, text(e.stdout), text(e.stderr), timeout)
    return Child(cmd, p.returncode, p.stdout, p.stderr, timeout)


def json_result(cmd, timeout=None, marker="", **kwargs):
    """The child's JSON result, or {"error": why} (with its stderr's tail)."""
    child = run(cmd, timeout, **kwargs)
    why = child.error()
    if why:
        return {"error": why}
    result = child.result(marker)
    if result is None:
        return {"error": "no result line: " + child.stdout[-1000:] + child.stderr[-1000:]}
    return result


def env_with_bench(env=None):
    """`env` (default: this process's) with bench/ on PYTHONPATH, for a child script written
    elsewhere that imports lib."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BENCH), env.get("PYTHONPATH")) if p)
    return env


def run_logged(cmd, log, timeout=None, **kwargs):
    """run(), with the command and everything it printed written to the file `log`."""
    child = run(cmd, timeout, **kwargs)
    head = "$ " + " ".join(child.cmd) + "\n"
    if child.timed_out:
        head += f"TIMEOUT after {timeout} s\n"
    with open(log, "w") as f:
        f.write(head + child.stdout + "\n--- stderr ---\n" + child.stderr)
    return child
