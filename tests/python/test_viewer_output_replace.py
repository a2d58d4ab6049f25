"""proton-viewer -o replaces its target by rename, never by writing into it.

A hard link to the old file proves it deterministically: written in place, the link would see
the new bytes; replaced by rename, the link keeps the old bytes and the target is a new inode.
A reader holding the old file (a browser, a second viewer) never sees half a file.
"""

import json
import os
import subprocess

import pytest

import proton

# The viewer binary, and the module's skip when it is not ours (the same as the viewer tests').
from test_viewer_cli import FIXTURES, VIEWER, pytestmark  # noqa: F401 (pytestmark: the skip)

OLD = b"old content, kept by the hard link\n"


def traces(tmp_path):
    """Two Chrome traces written by Proton on this machine (CPU scopes only)."""
    paths = []
    for rank in (0, 1):
        name = str(tmp_path / f"t{rank}")
        session = proton.start(name, data="trace")
        with proton.scope(f"scope{rank}"):
            pass
        proton.finalize(session)
        paths.append(name + ".chrome_trace")
    return paths


CASES = {
    "speedscope": lambda t: ["--output-format", "speedscope", "-m", "time/ms",
                             str(FIXTURES / "triton_style.json")],
    "folded": lambda t: ["--format", "folded", "-m", "time/ns",
                         str(FIXTURES / "triton_style.json")],
    "html": lambda t: ["--output-format", "html", "-m", "time/ms",
                       str(FIXTURES / "triton_style.json")],
    "merge": lambda t: ["merge", str(FIXTURES / "triton_style.json"),
                        str(FIXTURES / "triton_style_new.json")],
    "merge_trace": lambda t: ["merge", "--output-format", "trace", *traces(t)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_output_replaces_the_target_by_rename(tmp_path, case):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "result"
    target.write_bytes(OLD)
    link = out_dir / "link_to_old"
    os.link(target, link)
    old_inode = target.stat().st_ino

    args = CASES[case](tmp_path)
    r = subprocess.run([VIEWER, *args, "-o", str(target)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr

    new = target.read_bytes()
    assert new != OLD and len(new) > 0
    if case in ("merge", "merge_trace", "speedscope"):
        json.loads(new)  # whole documents
    # Renamed over, not written into: the old inode (seen through the link) is untouched.
    assert link.read_bytes() == OLD
    assert target.stat().st_ino != old_inode
    assert link.stat().st_nlink == 1
    # And nothing is left beside it (no temporary file).
    assert sorted(p.name for p in out_dir.iterdir()) == ["link_to_old", "result"]
