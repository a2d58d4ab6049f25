"""Fixtures for the GPU suite: where profiles go, and how tests read them back.

This file imports neither torch nor proton at module level, so that collecting the suite on a
machine without them only skips (each test module skips itself when there is no CUDA GPU).
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import threading

import pytest

# Every multi-GPU job of the suite runs with NVLink multicast off (NCCL, torch's symmetric memory,
# NVSHMEM): on a shared host a program that uses it can put every GPU out of service.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}


def is_kernel(node):
    """Kernel nodes are the ones that carry device metrics; scope and state frames do not."""
    metrics = node.get("metrics", {})
    return "time (ns)" in metrics and "device_id" in metrics


class Profile:
    """A loaded Hatchet file: `[root, device_map]`, with lookups by frame-name path."""

    def __init__(self, data, path=None):
        assert isinstance(data, list) and len(data) == 2, f"not [root, device_map]: {path}"
        self.root, self.device_map = data
        self.path = path
        assert self.root["frame"]["name"] == "ROOT", self.root["frame"]

    @property
    def root_metrics(self):
        return self.root.get("metrics", {})

    def node(self, *names, start=None):
        """The node at `names` below `start` (ROOT by default); fails with the tree shown."""
        node = start or self.root
        for name in names:
            found = [c for c in node.get("children", []) if c["frame"]["name"] == name]
            if not found:
                pytest.fail(f"no frame {'/'.join(names)!r} in profile:\n{self.render()}")
            assert len(found) == 1, f"frame {name!r} appears {len(found)} times as siblings"
            node = found[0]
        return node

    def has(self, *names, start=None):
        node = start or self.root
        for name in names:
            node = next((c for c in node.get("children", []) if c["frame"]["name"] == name), None)
            if node is None:
                return False
        return True

    def kernels(self, node=None, match=None, direct=False):
        """Kernel nodes under `node` (all descendants, or children only when `direct`)."""
        node = node or self.root
        out = []
        for child in node.get("children", []):
            if is_kernel(child) and (match is None or match in child["frame"]["name"]):
                out.append(child)
            if not direct:
                out.extend(self.kernels(child, match))
        return out

    def count(self, node=None, match=None, direct=False):
        return sum(int(k["metrics"]["count"]) for k in self.kernels(node, match, direct))

    def time_ns(self, node=None, match=None, direct=False):
        return sum(float(k["metrics"]["time (ns)"]) for k in self.kernels(node, match, direct))

    def render(self, node=None, depth=0, limit=200):
        """The tree as indented text, for assertion messages."""
        node = node or self.root
        metrics = node.get("metrics", {})
        shown = {k: metrics[k] for k in ("count", "time (ns)", "dropped_records") if k in metrics}
        lines = [f"{'  ' * depth}{node['frame']['name'][:100]} {shown if shown else ''}"]
        for child in node.get("children", []):
            lines.extend(self.render(child, depth + 1, limit).splitlines())
        return "\n".join(lines[:limit])


def load_profile(path):
    path = pathlib.Path(path)
    if path.suffix != ".hatchet":
        path = path.with_name(path.name + ".hatchet")
    assert path.exists(), f"profile not written: {path} (dir has {sorted(path.parent.iterdir())})"
    with path.open() as f:
        return Profile(json.load(f), path)


def run_under_proton(tmp_path, name, code, flags=(), env=None):
    """Runs `code` (dedented) under `proton -n NAME flags` in `tmp_path`; returns the path of
    the profile it wrote."""
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(code))
    r = subprocess.run([sys.executable, "-m", "proton", "-n", name, *flags, str(script)],
                       cwd=tmp_path, env={**os.environ, **(env or {})}, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return tmp_path / f"{name}.hatchet"


@pytest.fixture
def out_name(tmp_path):
    """Output name for proton.start (no extension: proton adds `.hatchet`)."""
    return str(tmp_path / "profile")


@pytest.fixture
def read_profile(out_name):
    """read_profile() loads the profile at out_name; read_profile(other) loads another."""

    def read(name=None):
        return load_profile(name or out_name)

    return read


@pytest.fixture
def to_profile():
    """Wraps in-memory data (e.g. `proton.data.get(session)`) like a loaded file."""
    return Profile


@pytest.fixture(autouse=True)
def _no_session_outlives_a_test():
    """A failed test must not leave a session running into the next one."""
    yield
    proton = sys.modules.get("proton")
    if proton is not None:
        try:
            proton.finalize()
        except Exception:
            pass


@pytest.fixture
def run_script(tmp_path):
    """Runs `code` in a fresh interpreter (for tests that need a process of their own:
    environment variables read at start-up, or another profiler holding CUPTI)."""

    def run(code, *args, env=None, timeout=180):
        script = tmp_path / "script.py"
        script.write_text(code)
        return subprocess.run([sys.executable, str(script), *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=timeout)

    return run


def _run_threads(target, n):
    """Runs target(i) on n threads at once; the first exception of any thread is raised here."""
    errors = []

    def guarded(i):
        try:
            target(i)
        except BaseException as e:  # surfaced in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.fixture
def run_threads():
    return _run_threads
