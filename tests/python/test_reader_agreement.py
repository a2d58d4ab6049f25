"""proton.profiles and proton-viewer give one answer: same frames, names and numbers.

Every fixture is read both ways: `proton-viewer --output-format json` (the shown tree with every
requested column) and `proton.profiles.read`, then compared node by node for every raw metric and
every derived metric the file supports. A metric one side cannot derive must fail on the other
with the same message. With a GPU, files written by triton.profiler are compared the same way.
"""

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import proton.profiles as profiles

from test_viewer_cli import VIEWER, _is_ours  # the binary under test, and that it is ours

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "viewer"
pytestmark = pytest.mark.skipif(not _is_ours(VIEWER),
                                reason="C++ proton-viewer not built (set PROTON_VIEWER)")

DERIVED = ["time/s", "time/ms", "time/us", "time/ns", "time/%", "avg_time/us", "avg_time/ns",
           "cpu_time/ms", "avg_cpu_time/us", "flop/s", "gflop/s", "tflop/s", "flop8/s",
           "tflop16/s", "gflop32/s", "flop64/s", "byte/s", "gbyte/s", "tbyte/s", "util"]


def fixture_files():
    seeds = FIXTURES.parent / "fuzz" / "proton_viewer_reader_fuzzer"
    files = sorted(FIXTURES.glob("*.json")) + sorted(seeds.glob("*.json"))
    return [f for f in files if _readable(f)]


def _readable(path):
    try:
        profiles.read(path)
    except profiles.ProfileError:
        return False
    return True


def viewer(*args):
    return subprocess.run([VIEWER, *map(str, args)], capture_output=True, text=True, timeout=60)


def requests_for(prof):
    """Raw metric names, their percentages and every derived metric profiles can compute."""
    wanted = [m for m in prof.metric_names if "," not in m]
    wanted += [m + "/%" for m in wanted]
    wanted += DERIVED
    ok, refused = [], []
    for m in wanted:
        try:
            prof.column(m)
            ok.append(m)
        except KeyError as e:
            refused.append((m, e.args[0]))
    return ok, refused


def compare(path, show_metadata=False):
    prof = profiles.read(path, show_metadata=show_metadata)
    ok, refused = requests_for(prof)
    extra = ["--show-metadata"] if show_metadata else []
    args = [*extra, "--output-format", "json", path]
    if ok:
        args = ["-m", ",".join(ok), *args]
    r = viewer(*args)
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    nodes = list(prof)
    assert len(shown["nodes"]) == len(nodes), path
    assert len(shown["columns"]) == len(ok)
    position = {n.index: k for k, n in enumerate(nodes)}
    for k, (want, node) in enumerate(zip(shown["nodes"], nodes)):
        where = f"{path} node {k} ({want['name']})"
        assert node.name == want["name"], where
        assert node.full_name == want["full_name"], where
        parent = -1 if node.parent is None else position[node.parent.index]
        assert parent == want["parent"], where
        for m, value in zip(ok, want["values"]):
            mine = node[m]
            if value is None:
                assert mine is None, (where, m)
            elif value == "nan":  # a NaN value, not an absent one
                assert mine is not None and math.isnan(mine), (where, m, mine)
            else:
                assert mine is not None and float(mine) == float(value), (where, m, mine, value)
    for m, message in refused:  # what profiles cannot derive the viewer refuses with its words
        r = viewer("-m", m, path)
        assert r.returncode == 2, (path, m)
        assert r.stderr.strip() == f"proton-viewer: error: {message}", (path, m)
    return prof


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES.parent)))
def test_profiles_and_viewer_agree_on_every_fixture(path):
    prof = compare(path)
    assert all(not n.name.startswith("__proton_launch_metadata") for n in prof)
    compare(path, show_metadata=True)


def test_the_fixtures_cover_metadata_and_mangled_names():
    # The comparisons above are only as strong as what the fixtures hold.
    prof = profiles.read(FIXTURES / "triton_style.json")
    every = profiles.read(FIXTURES / "triton_style.json", show_metadata=True)
    assert len(every) > len(prof)
    assert any(n.name.startswith("__proton_launch_metadata") for n in every)
    kernel = prof["vector_add_f32"]
    assert kernel.stored_name == "_Z14vector_add_f32PKfS0_Pfi"
    assert kernel.full_name == "vector_add_f32(float const*, float const*, float*, int)"
    assert prof.find(["_Z14vector_add_f32PKfS0_Pfi"]) == kernel


def test_metadata_frames_do_not_count_in_the_totals():
    # The viewer hides metadata frames before rolling up; so does read().
    prof = profiles.read(FIXTURES / "triton_style.json")
    every = profiles.read(FIXTURES / "triton_style.json", show_metadata=True)
    assert prof.root["time (ns)"] == 6_000_000
    assert every.root["time (ns)"] == 6_050_000


PROTON_WRITER = """
import proton
proton.start("own")
with proton.scope("outer", {"bytes": 3, "flops16": 2.5, "note (pty)": 7, "peak (exc)": 4}):
    for _ in range(3):
        with proton.cpu_timed_scope("_ZN2ns4stepIiEEvv", {"vec": [1, 2, 3]}):
            pass
    with proton.scope("__proton_launch_metadata", {"bytes": 1000}):
        pass
proton.finalize()
"""


def test_profiles_and_viewer_agree_on_what_proton_writes(tmp_path):
    script = tmp_path / "write.py"
    script.write_text(textwrap.dedent(PROTON_WRITER))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    prof = compare(tmp_path / "own.hatchet")
    step = prof["outer/ns::step<…>"]
    assert step.full_name == "void ns::step<int>()" and step["cpu_calls"] == 3
    assert step["avg_cpu_time/ns"] == pytest.approx(step["cpu_time/ns"] / 3)
    assert prof.root["bytes"] == 3  # the metadata scope's 1000 bytes are hidden
    compare(tmp_path / "own.hatchet", show_metadata=True)


TRITON_WRITER = """
import sys, torch, triton, triton.language as tl
import triton.profiler as proton

def meta(grid, kernel, args):
    torch.zeros(1, device="cuda")  # a kernel inside the hook: a launch-metadata frame
    return {"name": "add_meta", "bytes": 3 * 4 * args["n"], "flops32": args["n"]}

@triton.jit(launch_metadata=meta)
def add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)

x = torch.randn(4096, device="cuda")
proton.start(sys.argv[1], hook="triton")
with proton.scope("step", {"bytes": 7}):
    for _ in range(3):
        add[(4,)](x, x, torch.empty_like(x), x.numel(), BLOCK=1024)
    torch.mm(torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda"))
proton.finalize()
"""


def test_profiles_and_viewer_agree_on_files_triton_writes(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton.profiler")
    if not torch.cuda.is_available():
        pytest.skip("triton.profiler writes profiles only with a GPU")
    script = tmp_path / "write.py"
    script.write_text(textwrap.dedent(TRITON_WRITER))
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "triton")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    path = tmp_path / "triton.hatchet"
    prof = compare(path)
    every = compare(path, show_metadata=True)
    assert len(every) > len(prof)  # the hook's own kernel was written, and hidden
    assert any(n.name != n.full_name for n in prof)  # torch's C++ kernels, shortened
