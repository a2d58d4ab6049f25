"""proton.profiles: the dependency-free reading API over the viewer's C++ reader."""

import math
import subprocess
import sys
from pathlib import Path

import pytest

import proton
import proton.profiles as profiles

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "viewer"
MAIN = "/home/user/proj/train.py:12@main"


def golden_stderr(name):
    text = (FIXTURES / "golden" / name).read_text()
    return text.split("--- stderr\n", 1)[1].strip()


@pytest.fixture
def triton_style():
    return profiles.read(FIXTURES / "triton_style.json")


def test_tree_names_paths_and_lookup(triton_style):
    prof = triton_style
    assert prof.root.name == "ROOT" and prof.root.path == () and prof.root.parent is None
    assert len(prof) == 7  # the launch-metadata frame and its kernel are hidden, as the viewer does
    assert len(profiles.read(FIXTURES / "triton_style.json", show_metadata=True)) == 9
    kernel = prof.find(f"{MAIN}/matmul/matmul_kernel")
    assert kernel is not None and kernel.name == "matmul_kernel"
    assert kernel.path == (MAIN, "matmul", "matmul_kernel")
    assert kernel.parent.name == "matmul" and kernel.is_kernel
    assert kernel.text == {"device_id": "0", "device_type": "CUDA"}
    assert prof.find([MAIN, "attention"]).children[0].name == "_attn_fwd"
    assert prof.find("no/such/frame") is None
    with pytest.raises(KeyError, match="no/such"):
        prof["no/such"]
    order = [n.path for n in prof]  # pre-order: every parent before its children
    assert order[0] == () and order.index((MAIN,)) < order.index((MAIN, "matmul"))
    assert len(order) == len(set(order)) == len(prof)
    assert [n.name for n in prof.find(MAIN).walk()][:2] == [MAIN, "matmul"]


def test_raw_metrics_inclusive_and_exclusive(triton_style):
    prof = triton_style
    assert prof.metric_names == ["bytes", "count", "flops16", "time (ns)"]
    main = prof.find(MAIN)
    # Inclusive, as the viewer shows: matmul (4.0 ms; its 0.05 ms of launch metadata hidden)
    # + attention (1.5 ms).
    assert main.metrics["time (ns)"] == 5_500_000
    assert isinstance(main.metrics["count"], int)
    assert main.exclusive == {}  # the scope itself stores nothing
    kernel = prof.find(f"{MAIN}/matmul/matmul_kernel")
    assert kernel.exclusive == kernel.metrics
    assert prof.root["time (ns)"] == 6_000_000


def test_derived_metrics_have_the_viewers_names(triton_style):
    prof = triton_style
    kernel = prof.find(f"{MAIN}/matmul/matmul_kernel")
    assert kernel["time/ms"] == pytest.approx(4.0)
    assert kernel["time"] == 4_000_000  # "time" finds "time (ns)", as -m time does
    assert kernel["avg_time/us"] == pytest.approx(400.0)
    assert kernel["tflop16/s"] == pytest.approx(2e12 / 4e-3 / 1e12)
    assert kernel["gbyte/s"] == pytest.approx(1e10 / 4e-3 / 1e9)
    assert prof.root["time/%"] == pytest.approx(100.0)
    assert prof.find(MAIN)["time/%"] == pytest.approx(5.5 / 6.0 * 100)
    assert prof.find("vector_add_f32")["tflop16/s"] is None  # no flops there
    util = kernel["util"]
    assert util is not None and 0 < util
    assert prof.default_metric == "time/ms"
    assert prof.devices and prof.devices[0]["arch"]


def test_names_are_the_viewers_with_the_full_name_on_the_node(triton_style):
    kernel = triton_style.find("_Z14vector_add_f32PKfS0_Pfi")  # any spelling finds it
    assert kernel.name == "vector_add_f32"
    assert kernel.full_name == "vector_add_f32(float const*, float const*, float*, int)"
    assert kernel.stored_name == "_Z14vector_add_f32PKfS0_Pfi"
    assert kernel.path == ("vector_add_f32",)
    assert triton_style["vector_add_f32"] == kernel
    python_frame = triton_style.find(MAIN)
    assert python_frame.name == python_frame.full_name == python_frame.stored_name == MAIN


def test_a_profile_without_metrics_has_no_default_metric():
    prof = profiles.parse('[{"frame": {"name": "ROOT"}, "children": [{"frame": {"name": "a"}}]},'
                          ' {}]')
    assert prof.default_metric is None and [n.name for n in prof] == ["ROOT", "a"]


def test_unknown_metric_raises_the_viewers_message(triton_style):
    with pytest.raises(KeyError) as e:
        triton_style.root["bogus"]
    assert e.value.args[0] == golden_stderr("error_unknown_metric.txt").split("error: ")[1]
    assert triton_style.root.get("bogus", 7) == 7


@pytest.mark.parametrize("name, golden", [("errors/truncated.json", "error_truncated.txt"),
                                          ("errors/not_an_array.json", "error_not_array.txt")])
def test_bad_files_raise_the_viewers_errors_with_offsets(monkeypatch, name, golden):
    monkeypatch.chdir(FIXTURES)  # the golden files were recorded with relative paths
    with pytest.raises(profiles.ProfileError) as e:
        profiles.read(name)
    expected = golden_stderr(golden)
    assert str(e.value) == expected
    assert e.value.path == name
    assert e.value.offset == int(expected.split(":")[1])
    assert isinstance(e.value, ValueError)


def test_missing_and_msgpack_files(tmp_path):
    with pytest.raises(profiles.ProfileError, match="cannot open") as e:
        profiles.read(tmp_path / "nope.hatchet")
    assert e.value.offset is None
    # msgpack is read like JSON, and its errors name the byte: here the root map (byte 1).
    packed = tmp_path / "p.hatchet_msgpack"
    packed.write_bytes(b"\x92\x80\x80")
    with pytest.raises(profiles.ProfileError, match='node has no "frame"') as e:
        profiles.read(packed)
    assert e.value.offset == 1


def test_parse_from_memory_reports_byte_offsets():
    prof = profiles.parse('[{"frame": {"name": "ROOT"}, "metrics": {"count": 2}, "children": []}]')
    assert prof.root["count"] == 2 and prof.path is None
    with pytest.raises(profiles.ProfileError) as e:
        profiles.parse(b'[{"frame": {"name": "ROOT"}, "metrics": {"count": }}]')
    assert e.value.offset == 50 and e.value.path is None


def test_reads_what_proton_writes(tmp_path):
    name = str(tmp_path / "own")
    proton.start(name)
    with proton.scope("outer", {"bytes": 1}):
        with proton.scope("inner", {"bytes": 2, "flops16": 3.0}):
            pass
    proton.finalize()
    prof = profiles.read(name + ".hatchet")
    inner = prof["outer/inner"]
    assert inner.exclusive == {"bytes": 2, "flops16": 3.0}
    assert prof["outer"].metrics["bytes"] == 3  # inclusive, like the viewer's default column


def test_deep_trees_do_not_hit_the_recursion_limit():
    depth = 990
    opening = '{{"frame": {{"name": "f{}"}}, "metrics": {{}}, "children": ['
    text = "".join(opening.format(i) for i in range(depth))
    text += '{"frame": {"name": "leaf"}, "metrics": {"count": 1}, "children": []}' + "]}" * depth
    prof = profiles.parse("[" + text + ", {}]")
    leaf = next(n for n in prof if n.name == "leaf")
    assert len(leaf.path) == depth and prof.root["count"] == 1
    assert prof.find(leaf.path) == leaf and prof.find("/".join(leaf.path)) == leaf


def test_to_pandas(triton_style):
    pd = pytest.importorskip("pandas")
    df = triton_style.to_pandas(["time/ms", "tflop16/s"])
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["path", "name", "depth", "type", "time/ms", "tflop16/s"]
    row = df[df["path"] == f"{MAIN}/matmul/matmul_kernel"].iloc[0]
    assert row["time/ms"] == pytest.approx(4.0) and row["depth"] == 3
    raw = triton_style.to_pandas()
    assert set(triton_style.metric_names) <= set(raw.columns)
    assert not math.isnan(df[df["path"] == ""]["tflop16/s"].iloc[0])  # the root has flops


def test_to_pandas_without_pandas_names_the_package(triton_style, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        triton_style.to_pandas()


def test_importing_needs_neither_pandas_nor_hatchet():
    code = ("import sys, proton.profiles as p; p.read(sys.argv[1]);"
            "print('pandas' in sys.modules, 'hatchet' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(FIXTURES / "triton_style.json")],
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
