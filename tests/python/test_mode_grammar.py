"""proton.mode objects render to the one native mode grammar and parse back through it; Proton's
environment variables are read by the native module and listed in one README table."""

import pathlib
import re

import pytest

import proton
from proton import _proton, mode
from proton._counters_mode import Counters

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("obj, kind", [
    (mode.Default(), "instrumentation"),
    (mode.MMA(granularity="warp_group_2", buffer_type="shared", buffer_size=4096,
              optimizations="time_shift"), "instrumentation"),
    (mode.Default(sampling_strategy="selective", sampling_options="3,1"), "instrumentation"),
    (mode.Default(optimizations=""), "instrumentation"),
    (mode.PCSampling(), "pcsampling"),
    (mode.PCSampling(interval=None), "pcsampling"),
    (mode.PCSampling(interval=65536, buffer_mb=8, sleep_ms=10, drain_ms=5, adapt=False),
     "pcsampling"),
    (Counters(), "counters"),
    (Counters(["dram__bytes_read.sum"], range="auto", replay=True, sampling="both",
              interval_us=50), "counters"),
    (Counters(range="user"), "counters"),
])
def test_objects_render_to_the_grammar_and_parse_back(obj, kind):
    assert _proton.parse_mode(str(obj))["kind"] == kind
    again = mode.parse(str(obj))
    assert again == obj and type(again) is type(obj)
    assert str(again) == str(obj) or isinstance(obj, Counters)


def test_pcsampling_takes_every_option_the_engine_takes():
    # Python once accepted interval alone while the engine took five options.
    m = mode.parse("pcsampling:interval=131072:buffer_mb=8:sleep_ms=10:drain_ms=7:adapt=0")
    assert (m.interval, m.buffer_mb, m.sleep_ms, m.drain_ms, m.adapt) == (131072, 8, 10, 7, False)
    assert mode.parse("pcsampling").interval is None  # the engine picks the period
    assert str(mode.PCSampling(interval=None)) == "pcsampling"
    with pytest.raises(ValueError, match="sleep_ms"):
        mode.PCSampling(sleep_ms=0)
    with pytest.raises(ValueError, match="colour"):
        mode.parse("pcsampling:colour=1")


def test_every_mode_string_goes_through_the_native_grammar():
    assert mode.parse("graph") == "graph"
    assert mode.parse("periodic_flushing:format=hatchet_msgpack") == (
        "periodic_flushing:format=hatchet_msgpack")
    assert mode.parse("counters:range=auto") == Counters(range="auto")
    with pytest.raises(ValueError, match="unknown mode 'fancy'") as e:
        mode.parse("fancy")
    assert "counters" in str(e.value) and "pcsampling" in str(e.value)


def test_counters_options_are_checked_by_the_grammar():
    with pytest.raises(ValueError, match="sampling=pm"):
        Counters(range="user", sampling="pm")
    assert Counters(["x.sum"]) == Counters("x.sum")
    assert Counters(sampling="pm") == Counters()  # the same session either way
    assert len({Counters(), Counters(sampling="pm")}) == 1


def test_an_instrumentation_mode_needs_the_instrumentation_backend(tmp_path):
    with pytest.raises(ValueError, match="backend='instrumentation'"):
        proton.start(str(tmp_path / "p"), mode="default:granularity=warp")
    assert not _proton.has_sessions()


def test_every_variable_is_in_the_readme_table():
    names = {name for name, _, _ in _proton.env_variables()}
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `(PROTON_[A-Z_0-9]+)` \|", section, re.M))
    assert rows == names


def test_python_reads_no_proton_variable_itself():
    # The native module reads PROTON_*; Python only passes values on (the CLI sets them for
    # the program it runs).
    for path in (ROOT / "python" / "proton").rglob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"environ(\.get)?\s*[\[(]\s*[\"']PROTON_", line) or (
                    "getenv" in line and "PROTON_" in line):
                assert path.name == "cli.py" and "] = " in line, f"{path}:{n}: {line.strip()}"


def test_env_values_reach_python_through_the_native_module(monkeypatch):
    monkeypatch.setenv("PROTON_RANK_PATTERN", "{name}/r{rank}")
    assert _proton.env_value("PROTON_RANK_PATTERN") == "{name}/r{rank}"
    with pytest.raises(ValueError, match="not one of Proton's variables"):
        _proton.env_value("HOME")


@pytest.mark.parametrize("var, value", [
    ("PROTON_NVTX", "maybe"), ("PROTON_INSTR_POOL_MB", "0"), ("PROTON_COUNTER_BATCH", "lots"),
    ("PROTON_PM_BUFFER_MB", "9000"), ("PROTON_INSTR_KERNEL_TIME", "yes"),
])
def test_a_bad_value_fails_start_naming_the_variable(tmp_path, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=f"{var}='{value}' is not"):
        proton.start(str(tmp_path / "p"))
    assert not _proton.has_sessions()
