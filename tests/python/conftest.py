import json
import os

import pytest

import proton


@pytest.fixture
def out(tmp_path):
    """Output name for a session, and a reader for the file it writes."""

    class Out:
        name = str(tmp_path / "profile")
        path = name + ".hatchet"

        def read(self):
            with open(self.path) as f:
                return json.load(f)

    yield Out()
    # Leave no session behind for the next test.
    proton.finalize()


def child(node, name):
    for c in node.get("children", []):
        if c["frame"]["name"] == name:
            return c
    raise KeyError(f"{name!r} not under {node['frame']['name']!r}: "
                   f"{[c['frame']['name'] for c in node.get('children', [])]}")


@pytest.fixture(autouse=True)
def _no_gpu_backend(monkeypatch):
    # CPU tests must not depend on whether this machine happens to have a GPU.
    os.environ.setdefault("PROTON_TEST_CPU_ONLY", "1")
