"""proton.mode: Triton 3.6's mode classes and spellings, importable without Triton."""

import subprocess
import sys

import pytest

from proton import mode


def test_mode_imports_without_triton():
    code = ("import sys; sys.modules['triton'] = None; import proton.mode as m; "
            "print(m.parse('default:granularity=warp'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "granularity=GRANULARITY.WARP" in out.stdout


def test_defaults_are_the_cheapest_correct_options():
    m = mode.Default()
    assert m.optimizations == [mode.Optimize.CLOCK32, mode.Optimize.SCHED_STORES]
    assert m.granularity == mode.GRANULARITY.WARP
    assert m.buffer_type == mode.BUFFER_TYPE.GLOBAL
    assert str(m) == ("default:metric_type=METRIC_TYPE.CYCLE:sampling_strategy=SAMPLING_STRATEGY.NONE"
                      ":sampling_options=:granularity=GRANULARITY.WARP"
                      ":buffer_strategy=BUFFER_STRATEGY.CIRCULAR:buffer_type=BUFFER_TYPE.GLOBAL"
                      ":buffer_size=0:optimizations=clock32,sched_stores")
    assert mode.Default(optimizations="").optimizations == []


@pytest.mark.parametrize("text, field, value", [
    ("default:granularity=warp_group", "granularity", mode.GRANULARITY.WARP_GROUP),
    ("mma:buffer_type=shared", "buffer_type", mode.BUFFER_TYPE.SHARED),
    ("default:buffer_strategy=flush", "buffer_strategy", mode.BUFFER_STRATEGY.FLUSH),
    ("default:sampling_strategy=selective:sampling_options=4,0", "sampling_options", "0,4"),
    ("default:buffer_size=4096", "buffer_size", 4096),
    ("default:optimizations=time_shift,clock32", "optimizations",
     [mode.Optimize.TIMESHIFT, mode.Optimize.CLOCK32]),
    ("mma_cycle::[warpgroup::circular::all]", "granularity", mode.GRANULARITY.WARP_GROUP),
    ("default_cycle::[warp::circular::0;2]", "sampling_options", "0,2"),
])
def test_parse_spellings(text, field, value):
    assert getattr(mode.parse(text), field) == value


def test_string_round_trips():
    m = mode.MMA(granularity="warp_2", sampling_strategy="selective", sampling_options="1,3",
                 buffer_size=1024, optimizations="sched_stores")
    again = mode.parse(str(m))
    assert again == m and isinstance(again, mode.MMA)


def test_pcsampling():
    assert str(mode.PCSampling(interval=500)) == "pcsampling:interval=500"
    assert mode.parse("pcsampling:interval=64").interval == 64
    with pytest.raises(ValueError):
        mode.PCSampling(interval=0)


@pytest.mark.parametrize("bad, words", [
    ("fancy", ["unknown mode", "default", "mma"]),
    ("default:granularity=block", ["unknown granularity", "warp_group"]),
    ("default:colour=red", ["unknown option", "buffer_size"]),
    ("default:buffer_size", ["malformed option", "key=value"]),
    ("default:buffer_size=1000", ["power of two"]),
    ("default:optimizations=turbo", ["unknown optimization", "clock32"]),
    ("default:sampling_strategy=selective", ["sampling_options"]),
    ("default:sampling_options=a,b", ["warp ids"]),
    ("mma_cycle::warp", ["malformed mode"]),
])
def test_bad_modes_name_the_valid_parts(bad, words):
    with pytest.raises(ValueError) as e:
        mode.parse(bad)
    for w in words:
        assert w in str(e.value)


def test_triton_enum_values_are_accepted():
    class GRANULARITY:  # what str() of Triton's pybind enum looks like
        name = "WARP_4"

    assert mode.Default(granularity=GRANULARITY()).granularity == mode.GRANULARITY.WARP_4
    assert mode.Default(granularity="GRANULARITY.WARP_8").granularity == mode.GRANULARITY.WARP_8
