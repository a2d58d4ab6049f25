"""proton.viewer: the Python entry points run the native binary."""

import os

import pytest

import proton
from proton import viewer


@pytest.fixture
def profile(tmp_path):
    name = str(tmp_path / "p")
    proton.start(name)
    with proton.scope("wrapped", {"bytes": 7}):
        pass
    proton.finalize()
    return name + ".hatchet"


def _have_binary():
    return os.path.exists(viewer._binary())


@pytest.mark.skipif(not _have_binary(), reason="native proton-viewer not installed")
def test_view_returns_the_rendered_tree(profile):
    text = viewer.view(profile, "-m", "bytes", "--no-color")
    assert "wrapped" in text
    assert "7" in text


@pytest.mark.skipif(not _have_binary(), reason="native proton-viewer not installed")
def test_main_propagates_the_exit_code(tmp_path):
    bad = tmp_path / "bad.hatchet"
    bad.write_text("[{")
    assert viewer.main([str(bad)]) != 0
