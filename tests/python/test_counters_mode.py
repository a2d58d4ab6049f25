"""Hardware counters on a CPU machine: the mode object, the CLI flag and bad modes.

Without a GPU a counters session still records CPU-side scopes (the backend says why it is
off); tests/gpu/test_gpu_counters.py checks the counters themselves.
"""

import subprocess
import sys

import pytest

import proton
from proton import cli
from proton._counters_mode import Counters


def test_mode_object_spells_the_mode_string():
    assert str(Counters()) == "counters"
    assert str(Counters(["dram__bytes_read.sum", "lts__t_sector_hit_rate.pct"])) == (
        "counters:metrics=dram__bytes_read.sum,lts__t_sector_hit_rate.pct")
    assert str(Counters("a__b.sum,c__d.sum", range="auto", replay=True, sampling="both",
                        interval_us=50)) == (
        "counters:metrics=a__b.sum,c__d.sum:range=auto:replay:sampling=both:interval_us=50")
    assert Counters(["x.sum"]) == Counters("x.sum")
    assert "counters" in repr(Counters())


@pytest.mark.parametrize("kwargs", [dict(metrics=[]), dict(metrics=["a b"]), dict(range="x"),
                                    dict(sampling="never"), dict(interval_us=0)])
def test_mode_object_rejects_bad_options(kwargs):
    with pytest.raises(ValueError):
        Counters(**kwargs)


@pytest.mark.parametrize("mode", ["counters:range=sideways", "counters:bogus",
                                  "counters:metrics=", "counters:interval_us=-1"])
def test_bad_counters_mode_is_refused_at_start(out, mode):
    with pytest.raises(ValueError) as e:
        proton.start(out.name, mode=mode)
    assert "counters" in str(e.value)


def test_counters_session_without_a_gpu_still_records_scopes(out):
    proton.start(out.name, mode=Counters())
    with proton.scope("cpu_side", metrics={"mark": 1}):
        pass
    proton.finalize()
    root = out.read()[0]
    assert any(c["frame"]["name"] == "cpu_side" for c in root["children"])


def test_cli_counters_flag(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import proton\nwith proton.scope('x'):\n    pass\n")
    name = str(tmp_path / "p")
    r = subprocess.run([sys.executable, "-m", "proton", "--counter-metrics=dram__bytes_read.sum", "-n",
                        name, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "proton", "--counters", "-m", "graph", str(script)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "--counters" in r.stderr


def test_cli_parser_maps_the_flag():
    opts = cli._parser().parse_args(["--counters", "script.py"])
    assert opts.counters and opts.target == "script.py"
    opts = cli._parser().parse_args(["--counter-metrics", "a.sum,b.sum", "script.py"])
    assert opts.counter_metrics == "a.sum,b.sum" and opts.target == "script.py"
