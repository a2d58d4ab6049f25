"""Inputs that are not profiles, and every encoding Proton writes, through the built
proton-viewer (main view, --diff-profile, merge) and proton.profiles.

Each bad input must get one line that names the path and what it is: never an internal error,
a MemoryError, or a hang (a FIFO opened for reading blocks until a writer comes).
"""
import gzip
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import proton
import proton.profiles as profiles

from test_viewer_cli import VIEWER, _is_ours  # the binary under test, and that it is ours

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "viewer"


needs_viewer = pytest.mark.skipif(not _is_ours(VIEWER),
                                  reason="C++ proton-viewer not built (set PROTON_VIEWER)")


def viewer(*args):
    # A FIFO that blocked would hit this timeout and fail the test.
    return subprocess.run([VIEWER, *map(str, args)], capture_output=True, text=True, timeout=30)


def _bad_inputs(tmp):
    """(path, what the message must say) for each kind of non-profile."""
    tmp = Path(tmp)
    fifo = tmp / "pipe.hatchet"
    os.mkfifo(fifo)
    empty = tmp / "empty.hatchet"
    empty.write_bytes(b"")
    noise = tmp / "noise.hatchet"
    noise.write_bytes(bytes([0x00, 0xff, 0x13, 0x37]) * 64)
    gz = tmp / "p.hatchet.gz"
    gz.write_bytes(gzip.compress((FIXTURES / "triton_style.json").read_bytes()))
    trace = tmp / "run.chrome_trace"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2}]}))
    return [
        (tmp / "a_directory", "a directory"),
        (fifo, "a FIFO"),
        (empty, "an empty file"),
        (noise, "binary data (first byte 0x00)"),
        (gz, "gzip-compressed data"),
        (trace, "proton-viewer merge --output-format trace"),
        # A regular file whose read fails, whoever runs the test (root reads a chmod 000 file).
        (Path("/proc/self/mem"), "cannot read: Input/output error"),
    ]


@pytest.fixture
def bad_inputs(tmp_path):
    (tmp_path / "a_directory").mkdir()
    return _bad_inputs(tmp_path)


def _one_line_naming(text, path, what):
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith(str(path) + ":"), text
    assert what in lines[0], text
    assert "internal error" not in text and "bad_alloc" not in text


@needs_viewer
def test_viewer_names_each_bad_path_in_one_line(bad_inputs):
    for path, what in bad_inputs:
        r = viewer(path)
        assert r.returncode == 1, (path, r.stderr)
        _one_line_naming(r.stderr, path, what)
        assert r.stdout == ""


@needs_viewer
def test_diff_profile_names_each_bad_path(bad_inputs):
    for path, what in bad_inputs:
        r = viewer(FIXTURES / "triton_style.json", "--diff-profile", path)
        assert r.returncode == 1, (path, r.stderr)
        _one_line_naming(r.stderr, path, what)


@needs_viewer
def test_merge_leaves_bad_inputs_out_and_exits_nonzero(bad_inputs, tmp_path):
    out = tmp_path / "merged.hatchet"
    good = [FIXTURES / "triton_style.json", FIXTURES / "triton_style_new.json"]
    r = viewer("merge", *good, *[p for p, _ in bad_inputs], "-o", out)
    assert r.returncode == 1, r.stderr
    # Everything good was merged and written.
    assert "(rank 0)" in r.stdout and "(rank 1)" in r.stdout and "(rank 2)" not in r.stdout
    root, _ = json.loads(out.read_text())
    assert root["frame"]["name"] == "ROOT"
    warnings = r.stderr.strip().splitlines()
    for path, what in bad_inputs:
        line = [w for w in warnings if f" {path}:" in w or w.startswith(f"proton-viewer: warning: {path}:")]
        assert len(line) == 1 and what in line[0] and "left out of the merge" in line[0], r.stderr
    # Only good inputs: success.
    assert viewer("merge", *good, "-o", out).returncode == 0


@needs_viewer
def test_unreadable_file(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode (/proc/self/mem covers the read error)")
    locked = tmp_path / "locked.hatchet"
    shutil.copy(FIXTURES / "triton_style.json", locked)
    locked.chmod(0)
    r = viewer(locked)
    _one_line_naming(r.stderr, locked, "cannot open: Permission denied")


def test_profiles_read_names_each_bad_path(bad_inputs):
    for path, what in bad_inputs:
        with pytest.raises(profiles.ProfileError) as e:
            profiles.read(path)
        _one_line_naming(str(e.value), path, what)
        assert e.value.path == str(path)


@needs_viewer
def test_byte_order_mark_is_read_past(tmp_path):
    bom = tmp_path / "bom.hatchet"
    bom.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "triton_style.json").read_bytes())
    plain, marked = viewer(FIXTURES / "triton_style.json"), viewer(bom)
    assert marked.returncode == 0, marked.stderr
    assert marked.stdout == plain.stdout
    assert profiles.read(bom).root["time/ms"] == profiles.read(FIXTURES / "triton_style.json").root["time/ms"]


# A msgpack encoder that picks its header widths (the writer may use any of them).
def _header(n, width, fix, m16, m32):
    if width == "short" and n < 16:
        return bytes([fix | n])
    if width == "16":
        return bytes([m16]) + n.to_bytes(2, "big")
    return bytes([m32]) + n.to_bytes(4, "big")


def _pack(v, width):
    if v is None:
        return b"\xc0"
    if isinstance(v, bool):
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if width == "short" and 0 <= v < 128:
            return bytes([v])
        return b"\xd3" + struct.pack(">q", v) if v < 0 else b"\xcf" + struct.pack(">Q", v)
    if isinstance(v, float):
        # float32 where it holds the value exactly (the C++ tests cover every width).
        if width == "16" and struct.unpack(">f", struct.pack(">f", v))[0] == v:
            return b"\xca" + struct.pack(">f", v)
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        if width == "short" and len(b) < 32:
            return bytes([0xa0 | len(b)]) + b
        return (b"\xd9" + bytes([len(b)]) if width == "16" and len(b) < 256
                else b"\xdb" + len(b).to_bytes(4, "big")) + b
    if isinstance(v, list):
        return _header(len(v), width, 0x90, 0xdc, 0xdd) + b"".join(_pack(x, width) for x in v)
    return _header(len(v), width, 0x80, 0xde, 0xdf) + b"".join(
        _pack(k, width) + _pack(x, width) for k, x in v.items())


@needs_viewer
@pytest.mark.parametrize("width", ["short", "16", "32"])
def test_msgpack_of_every_header_width_reads_like_the_json(tmp_path, width):
    source = FIXTURES / "triton_style.json"
    packed = tmp_path / "p.hatchet_msgpack"
    packed.write_bytes(_pack(json.loads(source.read_text()), width))
    for args in ([], ["-m", "time/ms,count,flops16"], ["--list"]):
        want, got = viewer(*args, source), viewer(*args, packed)
        assert got.returncode == 0, got.stderr
        assert got.stdout == want.stdout
    a, b = profiles.read(source), profiles.read(packed)
    assert [n.path for n in a] == [n.path for n in b]
    assert [n.exclusive for n in a] == [n.exclusive for n in b]


@needs_viewer
def test_reads_the_msgpack_proton_writes(tmp_path):
    name = str(tmp_path / "own")
    proton.start(name)
    for _ in range(2):
        with proton.scope("outer", {"bytes": 1, "flops16": 2.5}):
            with proton.scope("inner", {"count": 2**40, "hist": [1, 2], "neg": -300}):
                pass
    proton.finalize(output_format="hatchet,hatchet_msgpack")
    packed = name + ".hatchet_msgpack"
    assert open(packed, "rb").read(1) == b"\xdd"  # array32: the header that was refused
    want, got = viewer("-m", "bytes,flops16,count,hist,neg", name + ".hatchet"), \
        viewer("-m", "bytes,flops16,count,hist,neg", packed)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout and "inner" in got.stdout
    inner = profiles.read(packed)["outer/inner"]
    assert inner.exclusive == {"count": 2 * 2**40, "hist": 6, "neg": -600}
    # merge and --diff-profile take it too.
    merged = tmp_path / "m.hatchet"
    assert viewer("merge", packed, name + ".hatchet", "-o", merged).returncode == 0
    assert viewer(name + ".hatchet", "--diff-profile", packed).returncode == 0
