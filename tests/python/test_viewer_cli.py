"""Runs the built proton-viewer binary on the recorded fixtures.

The binary comes from $PROTON_VIEWER, else `proton-viewer` on PATH; without one the module is
skipped (the C++ GoogleTest suite covers the same code in-process).
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "viewer"
VIEWER = os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")



def _is_ours(path):
    # triton.profiler installs a Python `proton-viewer` too; only test the C++ one.
    if not path or not os.path.exists(path):
        return False
    r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    return r.returncode == 0 and r.stdout.startswith("proton-viewer ")


pytestmark = pytest.mark.skipif(not _is_ours(VIEWER),
                                reason="C++ proton-viewer not built (set PROTON_VIEWER)")

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(*args, cwd=FIXTURES, env=None):
    return subprocess.run([VIEWER, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=60)


def table(stdout):
    """Maps frame name -> list of column strings from the tree output."""
    rows = {}
    for line in stdout.splitlines()[1:]:
        if not line.strip() or line.startswith("Sorted"):
            break
        cells = line.split()
        name = re.sub(r"^[\s│├└─]+", "", line.split("  ")[-1]).strip()
        rows[name] = cells
    return rows


def test_default_tree_is_plain_when_piped():
    r = run("triton_style.json")
    assert r.returncode == 0, r.stderr
    assert not ANSI.search(r.stdout)
    rows = table(r.stdout)
    assert rows["ROOT"][0] == "6.000"
    assert rows["matmul_kernel"][0] == "4.000"
    assert "__proton_launch_metadata" not in r.stdout
    assert "vector_add_f32" in rows  # demangled and shortened


def test_color_forced_and_no_color_env():
    assert ANSI.search(run("--color", "triton_style.json").stdout)
    env = dict(os.environ, NO_COLOR="1")
    assert not ANSI.search(run("triton_style.json", env=env).stdout)


def test_derived_metrics_numbers():
    r = run("-m", "time/us,count,tflop16/s,gbyte/s,avg_time/us,time/%", "triton_style.json")
    assert r.returncode == 0, r.stderr
    cells = table(r.stdout)["matmul_kernel"]
    assert [float(c) for c in cells[:6]] == [4000.0, 10, 500.0, 2500.0, 400.0, pytest.approx(66.667)]


def test_triton_option_spellings():
    for sorted_flag in ("--print-sorted", "--print_sorted"):
        r = run("-m", "time/ms", sorted_flag, "-f", "function_line", "triton_style.json")
        assert r.returncode == 0 and "Sorted frames by time/ms" in r.stdout
        assert "12@main" in r.stdout
    r = run("--metrics=TIME/MS", "--depth=1", "triton_style.json")
    assert r.returncode == 0 and "matmul" not in r.stdout


def test_diff_marks_one_sided_frames():
    r = run("-m", "time/ms", "-diff", "triton_style.json", "triton_style_new.json")
    assert r.returncode == 0, r.stderr
    assert "softmax [only in triton_style_new.json]" in r.stdout
    assert "vector_add_f32 [only in triton_style.json]" in r.stdout
    assert table(r.stdout)["ROOT"][0] == "-1.100"


def test_bad_inputs_name_file_offset_reason(tmp_path):
    r = run("errors/truncated.json")
    assert r.returncode == 1
    assert re.match(r"errors/truncated\.json:\d+: \S", r.stderr)
    bad = tmp_path / "bad.json"
    data = b'[{"frame": {"name": "ROOT"}, "metrics": {"t": {}}}]'
    bad.write_bytes(data)
    r = run(bad)
    offset = data.index(b"{}")  # the offending value
    assert r.returncode == 1 and f"{bad}:{offset}: metric \"t\" must be a number" in r.stderr


def test_usage_errors_exit_2():
    assert run("-m", "nope", "triton_style.json").returncode == 2
    assert run("--nope", "triton_style.json").returncode == 2
    assert run().returncode == 2
    assert run("-h").returncode == 0


def test_random_corruptions_never_crash():
    data = (FIXTURES / "triton_style.json").read_bytes()
    rng = random.Random(5)
    for i in range(60):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        path = Path(f"/tmp/proton_viewer_mutant_{os.getpid()}.json")
        path.write_bytes(bytes(mutated))
        r = run(path)
        assert r.returncode in (0, 1), (i, r.returncode, r.stderr)
        path.unlink()


def test_merge_writes_a_viewable_profile(tmp_path):
    out = tmp_path / "merged.json"
    r = run("merge", "triton_style.json", "triton_style_new.json", "-o", out)
    assert r.returncode == 0, r.stderr
    root, devices = json.loads(out.read_text())
    assert root["frame"]["name"] == "ROOT" and "CUDA" in devices
    r = run("-m", "time:max/ms,time:argmax,time/ms", out)
    assert r.returncode == 0, r.stderr
    assert table(r.stdout)["_attn_fwd"][:3] == ["1.700", "1", "3.200"]


def test_folded_and_speedscope(tmp_path):
    r = run("--format", "folded", "-m", "time/ns", "triton_style.json")
    assert r.stdout.splitlines()[0] == "/home/user/proj/train.py:12@main;matmul;matmul_kernel 4000000"
    out = tmp_path / "p.speedscope.json"
    assert run("--output-format", "speedscope", "-o", out, "triton_style.json").returncode == 0
    doc = json.loads(out.read_text())
    assert doc["profiles"][0]["unit"] == "milliseconds"
    assert sum(doc["profiles"][0]["weights"]) == pytest.approx(6.0)


def write_profile(path, root_metrics, children, frame=None):
    root = {"frame": {"name": "ROOT", **(frame or {})}, "metrics": root_metrics,
            "children": children}
    path.write_text(json.dumps([root, {}]))
    return path


def scope(name, metrics=None, children=()):
    return {"frame": {"name": name}, "metrics": metrics or {}, "children": list(children)}


def test_without_m_time_is_shown_quietly_else_the_first_metric_is_named(tmp_path):
    timed = write_profile(tmp_path / "t.json", {},
                          [scope("k", {"bytes": 5, "time (ns)": 2_000_000})])
    r = run(timed)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.splitlines()[0].split()[0] == "time/ms"
    untimed = write_profile(tmp_path / "u.json", {}, [scope("k", {"bytes": 5, "count": 2})])
    r = run(untimed)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split()[0] == "bytes"
    assert table(r.stdout)["k"][0] == "5"
    assert r.stderr.count("\n") == 1 and "showing 'bytes'" in r.stderr
    assert run("-m", "count", untimed).stderr == ""  # asked for: nothing to say


def test_scopes_without_metrics_print_their_tree(tmp_path):
    bare = write_profile(tmp_path / "bare.json", {},
                         [scope("outer", children=[scope("inner")]), scope("other")])
    r = run(bare)
    assert r.returncode == 0, r.stderr
    assert "error" not in r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].strip() == "frame"
    names = [re.sub(r"^[\s│├└─]+", "", x) for x in lines[1:]]
    assert names == ["ROOT", "outer", "inner", "other"]
    r = run("--output-format", "folded", bare)
    assert r.returncode == 2 and "needs a metric" in r.stderr


def test_stragglers_without_m_rank_by_time(tmp_path):
    files = []
    for rank, ms in ((0, 1), (1, 9)):
        # "bytes" is the files' first metric and varies the other way round: ranking by it
        # would name rank 0.
        files.append(write_profile(
            tmp_path / f"job.rank{rank}.json", {},
            [scope("step", {"bytes": 100 - 90 * rank, "time (ns)": ms * 1_000_000})],
            frame={"rank": rank, "world_size": 2}))
    r = run("--stragglers", *files)
    assert r.returncode == 0, r.stderr
    row = next(line.split() for line in r.stdout.splitlines() if line.rstrip().endswith("step"))
    assert row[3] == "1", r.stdout  # the slowest rank by time
    assert "time" in r.stdout.splitlines()[0] and "bytes" not in r.stdout


def test_avg_cpu_time_on_cpu_timed_scopes(tmp_path):
    script = tmp_path / "w.py"
    script.write_text("import proton\nproton.start('cts')\nfor _ in range(4):\n"
                      "    with proton.cpu_timed_scope('step'):\n        pass\nproton.finalize()\n")
    w = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert w.returncode == 0, w.stderr
    r = run("-m", "cpu_time/ns,avg_cpu_time/ns", tmp_path / "cts.hatchet")
    assert r.returncode == 0, r.stderr
    total, average = (float(x) for x in table(r.stdout)["step"][:2])
    assert average == pytest.approx(total / 4, rel=1e-3)


def test_merge_of_one_profile_is_singular(tmp_path):
    r = run("merge", "triton_style.json", "-o", tmp_path / "m.json")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("merged 1 profile into ")


def test_output_errors_name_the_path_asked_for(tmp_path):
    target = tmp_path / "missing_dir" / "out.txt"
    r = run("-o", target, "triton_style.json")
    assert r.returncode == 1
    assert r.stderr.startswith(f"{target}: cannot create")
    assert ".tmp." not in r.stderr


def test_diff_names_the_file_lacking_the_metric(tmp_path):
    other = write_profile(tmp_path / "other.json", {}, [scope("k", {"count": 1})])
    r = run("-m", "bytes", "--diff-profile", other, "triton_style.json")
    assert r.returncode == 2
    assert f"error: {other}: metric 'bytes' is not in the profile" in r.stderr
    r = run("-m", "bytes", "--diff-profile", "triton_style.json", other)
    assert r.returncode == 2 and f"error: {other}: metric 'bytes'" in r.stderr


def test_help_lists_every_option_before_the_paragraph_on_several_profiles():
    text = run("--help").stdout
    paragraph = text.index("Several profiles")
    for option in ("--color, --no-color", "--version", "--stragglers"):
        assert text.index(option) < paragraph, option
    assert "json" in text[:paragraph]


def test_cuda_regions_example_shows_the_binarys_own_error(tmp_path):
    # A fake nvcc "builds" a program that fails as the real one does on a machine without a GPU.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nvcc = bin_dir / "nvcc"
    program = "#!/bin/sh\necho 'CUDA error: no CUDA-capable device is detected' >&2\nexit 1\n"
    nvcc.write_text("#!/bin/sh\nwhile [ \"$1\" != -o ]; do shift; done\n"
                    f"cat > \"$2\" <<'EOF'\n{program}EOF\nchmod +x \"$2\"\n")
    nvcc.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    example = FIXTURES.parents[2] / "examples" / "cuda_regions" / "run_example.py"
    r = subprocess.run([sys.executable, str(example), str(tmp_path / "out")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "CUDA error: no CUDA-capable device is detected" in r.stderr
    assert "Traceback" not in r.stderr
