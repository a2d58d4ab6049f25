"""Wrong arguments to the Python API: one-line errors that name the argument, raised before
anything is recorded or written.

bench/probes/api_errors_triton.py prints triton.profiler's answer to the same calls beside ours.
"""

import contextlib
import os
import types

import pytest

import proton
from proton import _proton


def one_line(excinfo):
    text = str(excinfo.value)
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize("make", [
    lambda n: proton.scope(n).__enter__(),
    lambda n: proton.cpu_timed_scope(n).__enter__(),
    lambda n: proton.enter_scope(n),
    lambda n: proton.state(n).__enter__(),
    lambda n: proton.enter_state(n),
], ids=["scope", "cpu_timed_scope", "enter_scope", "state", "enter_state"])
@pytest.mark.parametrize("bad", [None, 123, b"bytes", ["a"]], ids=["None", "int", "bytes", "list"])
def test_a_name_that_is_not_a_str_is_a_one_line_type_error(out, make, bad):
    proton.start(out.name)
    with pytest.raises(TypeError) as e:
        make(bad)
    text = one_line(e)
    shown = "None" if bad is None else type(bad).__name__
    assert "name must be a str, not " + shown in text, text
    assert "incompatible function arguments" not in text
    # Nothing was opened or labelled.
    assert _proton.open_scopes() == 0
    assert _proton.state() == ""


def test_a_bad_name_fails_without_a_session_too():
    # Fail early: a script is wrong the same way whether or not a profiler is running.
    with pytest.raises(TypeError, match=r"^proton\.scope: name must be a str, not None$") as e:
        with proton.scope(None):
            pass
    assert e.value.__suppress_context__  # the binding's several-line error is not shown
    with pytest.raises(TypeError, match=r"^proton\.state: name must be a str, not int 123$"):
        proton.state(123)


@pytest.mark.parametrize("bad", [[("a", 1)], "abc", 5, {"a", "b"}],
                         ids=["pairs", "str", "int", "set"])
def test_metrics_that_are_not_a_mapping_are_a_one_line_type_error(out, bad):
    proton.start(out.name)
    for call in (lambda: proton.scope("s", bad), lambda: proton.cpu_timed_scope("s", bad),
                 lambda: proton.enter_scope("s", metrics=bad)):
        with pytest.raises(TypeError) as e:
            with contextlib.ExitStack() as stack:
                made = call()
                if isinstance(made, proton.scope):
                    stack.enter_context(made)
        text = one_line(e)
        assert "metrics must be a dict" in text, text
        assert _proton.open_scopes() == 0  # the scope was not left open
    proton.enter_scope("open")
    with pytest.raises(TypeError, match="proton.exit_scope: metrics must be a dict"):
        proton.exit_scope(metrics=bad)
    assert _proton.open_scopes() == 1  # a rejected exit closes nothing
    # A name that is no scope's is a mismatch, as in triton.profiler (a ValueError).
    with pytest.raises(ValueError, match="Scope name mismatch"):
        proton.exit_scope(7)
    assert _proton.open_scopes() == 1
    proton.exit_scope("open")
    assert _proton.open_scopes() == 0


def test_falsy_metrics_add_nothing_as_in_triton(out):
    # triton.profiler skips metrics that are empty or falsy (`if metrics:`); so do we.
    proton.start(out.name)
    for empty in (None, {}, [], 0, ""):
        with proton.scope("s", empty):
            pass
        proton.enter_scope("e", metrics=empty)
        proton.exit_scope(metrics=empty)
    proton.finalize()
    names = {c["frame"]["name"]: c["metrics"] for c in out.read()[0]["children"]}
    assert set(names) == {"s", "e"}


def test_any_mapping_is_accepted_as_metrics(out):
    # triton.profiler takes any mapping (its binding converts a Mapping).
    proton.start(out.name)
    with proton.scope("proxy", types.MappingProxyType({"flops": 3})):
        pass
    proton.enter_scope("entered", metrics=types.MappingProxyType({"flops": 4}))
    proton.exit_scope()
    proton.finalize()
    values = {c["frame"]["name"]: c["metrics"]["flops"] for c in out.read()[0]["children"]}
    assert values == {"proxy": 3, "entered": 4}


@pytest.mark.parametrize("backend", ["bogus", "roctracer", "CUPTI", 1])
def test_unknown_backend_is_a_value_error_listing_the_backends(tmp_path, backend):
    name = str(tmp_path / "p")
    with pytest.raises(ValueError) as e:
        proton.start(name, backend=backend)
    text = one_line(e)
    assert f"unknown backend {backend!r}" in text
    assert "'cupti'" in text and "'instrumentation'" in text
    # triton.profiler raises RuntimeError("Unknown profiler: ...") here: both catch it.
    assert isinstance(e.value, RuntimeError)
    assert not _proton.has_sessions()
    proton.finalize()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["", "out/", os.sep])
def test_a_name_that_names_no_file_is_refused(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    if name == "out/":
        (tmp_path / "out").mkdir()
    with pytest.raises(ValueError) as e:
        proton.start(name)
    text = one_line(e)
    assert f"name {name!r} names no file" in text
    assert not _proton.has_sessions()
    proton.finalize()
    # Before, "" wrote a hidden ".hatchet" in the working directory.
    assert not (tmp_path / ".hatchet").exists()
    assert not (tmp_path / "out" / ".hatchet").exists()


@pytest.mark.parametrize("option", ["context", "data", "mode"])
def test_unknown_context_data_and_mode_are_value_and_runtime_errors(tmp_path, option):
    # triton.profiler raises RuntimeError ("Unknown context source: ...", "Unknown data: ...").
    with pytest.raises(ValueError) as e:
        proton.start(str(tmp_path / "p"), **{option: "bogus"})
    assert isinstance(e.value, RuntimeError)
    assert "'bogus'" in one_line(e)
    assert not _proton.has_sessions()


def test_name_type_context_and_data_types(tmp_path):
    with pytest.raises(TypeError, match=r"^proton\.start: name must be a str or path \(or None\), "
                                        r"not int 123$"):
        proton.start(123)
    with pytest.raises(TypeError, match=r"^proton\.start: context must be a str"):
        proton.start(str(tmp_path / "p"), context=1)
    with pytest.raises(TypeError, match=r"^proton\.start: data must be a str"):
        proton.start(str(tmp_path / "p"), data=["tree"])
    assert not _proton.has_sessions()


def test_a_path_object_is_a_name(tmp_path):
    session = proton.start(tmp_path / "as_path")
    proton.finalize(session)
    assert (tmp_path / "as_path.hatchet").is_file()


def test_the_backends_start_takes_are_the_engines_registry():
    import importlib

    profile = importlib.import_module("proton.profile")  # the module, not proton.profile()
    assert profile.BACKENDS == tuple(_proton.backend_names())
    assert set(profile.BACKENDS) == {"cupti", "instrumentation"}
