"""proton.viewer as a library: triton.profiler.viewer's functions, same signatures and results.

Results are compared with Triton's own module where Triton is installed (CI installs it), on
the recorded profiles in tests/fixtures/viewer; the rest needs only llnl-hatchet and pandas.
"""

import inspect
import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from proton import viewer

# Compared with the installed Triton's module: scripts/test runs this against 3.6 and 3.9.
pytestmark = pytest.mark.triton

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "viewer"
FILES = ["triton_style.json", "triton_style_new.json", "proton_style.json"]
FUNCTIONS = ["read", "parse", "get_raw_metrics", "derive_metrics", "format_frames",
             "filter_frames", "print_tree", "apply_diff_profile"]


def _hatchet():
    pytest.importorskip("pandas")
    pytest.importorskip("hatchet")


def _triton_viewer():
    _hatchet()
    return pytest.importorskip("triton.profiler.viewer")


def _frame(gf, metrics):
    cols = ["name"] + [m for m in metrics if m in gf.dataframe.columns]
    return gf.dataframe[cols].reset_index(drop=True)


def test_functions_exist_with_tritons_signatures():
    theirs = _triton_viewer()
    for name in FUNCTIONS:
        ours = inspect.signature(getattr(viewer, name))
        their = inspect.signature(getattr(theirs, name))
        if name == "get_raw_metrics":  # 3.6: (file), 3.9: (database); ours takes either
            assert len(ours.parameters) == len(their.parameters) == 1
            continue
        assert ours == their, name


@pytest.mark.parametrize("metrics", [["time/ms"], ["time/ms", "tflop16/s"], ["util"],
                                     ["avg_time/us"], ["time/%"], ["bytes"], ["gbyte/s"],
                                     ["count/%"], ["time"], ["flop/s"]])
@pytest.mark.parametrize("name", FILES)
def test_parse_matches_triton(name, metrics):
    import pandas as pd

    theirs = _triton_viewer()
    path = str(FIXTURES / name)
    try:
        expected, expected_names = theirs.parse(metrics, path)
    except KeyError as e:  # Triton's viewer needs "metrics" on every node; ours reads the file
        assert e.args == ("metrics",) and name == "proton_style.json"
        try:
            got, names = viewer.parse(metrics, path)
            assert names and len(got.dataframe) > 1
        except RuntimeError as missing:  # flop/s: the file has no plain "flops"
            assert "is not found" in str(missing)
        return
    except Exception as e:  # the same request fails the same way
        with pytest.raises(type(e), match=None) as ours:
            viewer.parse(metrics, path)
        assert str(ours.value) == str(e)
        return
    got, names = viewer.parse(metrics, path)
    assert names == expected_names
    pd.testing.assert_frame_equal(_frame(got, names), _frame(expected, names))
    assert got.inc_metrics == expected.inc_metrics and got.exc_metrics == expected.exc_metrics


@pytest.mark.parametrize("options", [dict(include=".*matmul.*"), dict(exclude=".*attention.*"),
                                     dict(threshold=1.0)])
def test_filters_match_triton(options):
    import pandas as pd

    theirs = _triton_viewer()
    path = str(FIXTURES / "triton_style.json")
    expected, names = theirs.parse(["time/ms"], path, **options)
    got, _ = viewer.parse(["time/ms"], path, **options)
    pd.testing.assert_frame_equal(_frame(got, names), _frame(expected, names))


def _printed(module, path, **kwargs):
    gf, names = module.parse(["time/ms", "tflop16/s"], path)
    out = io.StringIO()
    with redirect_stdout(out):
        module.print_tree(gf, names, **kwargs)
    return out.getvalue()


@pytest.mark.parametrize("kwargs", [{}, dict(depth=2), dict(format="function_line"),
                                    dict(format="file_function", print_sorted=True),
                                    dict(format="file_function_line")])
def test_print_tree_matches_triton(kwargs):
    theirs = _triton_viewer()
    path = str(FIXTURES / "triton_style.json")
    assert _printed(viewer, path, **kwargs) == _printed(theirs, path, **kwargs)


def test_apply_diff_profile_matches_triton():
    import pandas as pd

    theirs = _triton_viewer()
    a, b = str(FIXTURES / "triton_style.json"), str(FIXTURES / "triton_style_new.json")
    results = []
    for module in (viewer, theirs):
        gf, names = module.parse(["time/ms"], a)
        diff = module.apply_diff_profile(gf, names, b, ["time/ms"], None, None, None)
        results.append(_frame(diff, names))
    pd.testing.assert_frame_equal(*results)


def test_read_and_raw_metrics_match_triton():
    theirs = _triton_viewer()
    path = str(FIXTURES / "triton_style.json")
    gf, inc, exc, devices = viewer.read(path)
    gf2, inc2, exc2, devices2 = theirs.read(path)
    assert (inc, exc, devices) == (inc2, exc2, devices2)
    assert viewer.COMPUTE_METADATA_SCOPE_NAME not in set(gf.dataframe["name"])
    with open(path) as f:
        raw = viewer.get_raw_metrics(f)  # Triton 3.6's form: an open file
    assert raw[1] == inc2 and raw[3] == devices2
    with open(path) as f:
        raw = viewer.get_raw_metrics(json.load(f))  # Triton 3.9's form: the parsed list
    assert raw[1] == inc2 and raw[3] == devices2
    root_only = viewer.get_raw_metrics([{"frame": {"name": "ROOT"}, "metrics": {"count": 1},
                                         "children": []}])
    assert root_only[3] == {}  # no device map: an empty one, as 3.9 reads it


def test_metadata_frames_of_both_spellings_are_hidden():
    _hatchet()
    leaf = {"frame": {"name": "k"}, "metrics": {"count": 1}, "children": []}
    db = [{"frame": {"name": "ROOT"}, "metrics": {"count": 0}, "children": [
        dict(leaf, frame={"name": "real"}),
        {"frame": {"name": viewer.COMPUTE_METADATA_SCOPE_NAME}, "metrics": {}, "children": [leaf]},
        {"frame": {"name": viewer.COMPUTE_METADATA_SCOPE_NAME + ":matmul"}, "metrics": {},
         "children": [leaf]}]}, {}]
    gf = viewer.get_raw_metrics(db)[0]
    assert sorted(gf.dataframe["name"]) == ["ROOT", "real"]


def test_results_without_triton():
    _hatchet()
    path = str(FIXTURES / "triton_style.json")
    gf, names = viewer.parse(["time/ms", "tflop16/s"], path)
    assert names == ["time/ms (inc)", "tflop16/s (inc)"]
    df = gf.dataframe.reset_index(drop=True)
    kernel = df[df["name"] == "matmul_kernel"].iloc[0]
    assert kernel["time/ms (inc)"] == pytest.approx(4.0)
    assert kernel["tflop16/s (inc)"] == pytest.approx(500.0)
    with pytest.raises(RuntimeError, match="Metric bogus is not found"):
        viewer.parse(["bogus"], path)
    with pytest.raises(ValueError, match="Unsupported unit ms"):
        viewer.parse(["bytes/ms"], path)


def test_without_hatchet_the_message_names_the_packages(monkeypatch):
    monkeypatch.setitem(sys.modules, "hatchet", None)
    with pytest.raises(ImportError, match="llnl-hatchet and pandas"):
        viewer.read(str(FIXTURES / "triton_style.json"))


def test_the_command_entry_still_runs_the_native_viewer(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(viewer.subprocess, "call", lambda argv: calls.append(argv) or 0)
    monkeypatch.setenv("PROTON_VIEWER", "/bin/proton-viewer-test")
    assert viewer.main(["-m", "time/ms", "x.hatchet"]) == 0
    assert calls == [["/bin/proton-viewer-test", "-m", "time/ms", "x.hatchet"]]
