"""The triton.profiler-compatible API, on a machine with no GPU (CPU-side data only)."""

import threading

import pytest

import proton
from tree_util import child


def test_start_returns_id_and_finalize_writes_hatchet(out):
    session = proton.start(out.name)
    assert isinstance(session, int)
    with proton.scope("s", {"bytes": 10}):
        pass
    proton.finalize(session)
    root, devices = out.read()
    assert root["frame"] == {"name": "ROOT", "type": "function"}
    assert child(root, "s")["metrics"] == {"bytes": 10}
    assert devices == {}


def test_default_name_is_proton(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proton.start()
    proton.finalize()
    assert (tmp_path / "proton.hatchet").exists()


def test_output_format_hatchet_and_unknown_format(out):
    session = proton.start(out.name)
    with pytest.raises(ValueError, match="output format 'xml'"):
        proton.finalize(session, output_format="xml")
    proton.finalize(session, output_format="hatchet")
    assert out.read()[0]["frame"]["name"] == "ROOT"


def test_nested_scopes_metrics_sum_and_rules(out):
    proton.start(out.name)
    for _ in range(3):
        with proton.scope("outer", {"flops16": 2, "bytes": 1.0}):
            with proton.scope("inner", {"peak (exc)": 5, "ver (pty)": 1, "hist": [1, 2]}):
                pass
    with proton.scope("outer"):
        with proton.scope("inner", {"ver (pty)": 7}):
            pass
    proton.finalize()
    root, _ = out.read()
    outer = child(root, "outer")
    assert outer["metrics"] == {"flops16": 6.0, "bytes": 3}
    assert isinstance(outer["metrics"]["flops16"], float)
    # Written as triton.profiler writes them: the rule suffix removed (kept in metric_rules).
    assert child(outer, "inner")["metrics"] == {"peak": 15, "ver": 7, "hist": [3, 6]}


def test_scope_as_decorator(out):
    @proton.scope("decorated", {"count_calls": 1})
    def f(x):
        return x + 1

    proton.start(out.name)
    assert f(1) == 2 and f(2) == 3
    proton.finalize()
    assert child(out.read()[0], "decorated")["metrics"] == {"count_calls": 2}


def test_cpu_timed_scope_records_cpu_time(out):
    proton.start(out.name)
    with proton.cpu_timed_scope("busy"):
        sum(range(100000))
    proton.finalize()
    ns = child(out.read()[0], "busy")["metrics"]["cpu_time (ns)"]
    assert isinstance(ns, int) and ns > 0


def test_nested_cpu_timed_scopes_are_not_counted_twice(out):
    # Triton writes "cpu_time (ns)(exc)": a scope's time already holds its nested timed scopes'.
    import proton.profiles

    proton.start(out.name)
    with proton.cpu_timed_scope("outer"):
        with proton.cpu_timed_scope("inner"):
            sum(range(10000))
    proton.finalize()
    root = out.read()[0]
    assert root["metric_rules"]["cpu_time (ns)"] == "exc"
    outer = child(root, "outer")
    stored_outer = outer["metrics"]["cpu_time (ns)"]
    stored_inner = child(outer, "inner")["metrics"]["cpu_time (ns)"]
    assert 0 < stored_inner <= stored_outer
    prof = proton.profiles.read(out.path)
    assert prof["outer"]["cpu_time"] == stored_outer  # not outer + inner
    assert prof["outer"]["avg_cpu_time/ns"] == stored_outer  # one run of it, not two
    with pytest.raises(ValueError, match="The metric name 'cpu_time' is reserved."):
        proton.cpu_timed_scope("s", {"cpu_time": 1})


def test_enter_exit_scope(out):
    proton.start(out.name)
    proton.enter_scope("a", metrics={"n": 1})
    proton.enter_scope("b")
    assert proton.context.depth() == 2
    proton.exit_scope(metrics={"n": 2})
    proton.exit_scope(name="a")
    assert proton.context.depth() == 0
    proton.finalize()
    a = child(out.read()[0], "a")
    assert a["metrics"] == {"n": 1}
    assert child(a, "b")["metrics"] == {"n": 2}


def test_exit_scope_errors():
    with pytest.raises(RuntimeError, match="no scope"):
        proton.exit_scope()
    proton.enter_scope("open")
    with pytest.raises(ValueError, match="exit_scope\\('other'\\).*'open'"):
        proton.exit_scope(name="other")
    with pytest.raises(RuntimeError):  # still a RuntimeError, as before
        proton.exit_scope("other")
    proton.exit_scope(name="open")


def test_unbalanced_context_manager_exit_is_reported():
    s = proton.scope("x")
    with pytest.raises(RuntimeError, match="no scope is open"):
        s.__exit__(None, None, None)


def test_states(out):
    proton.start(out.name)
    with proton.scope("layer"):
        with proton.state("prefill"):
            assert proton.context.depth() == 2
            proton.data  # noqa: B018 - module is importable
            with proton.scope("attn", {"n": 1}):
                pass
        proton.enter_state("decode")
        proton.exit_state()
    proton.finalize()
    layer = child(out.read()[0], "layer")
    # As triton.profiler: the scope path, then the state as the leaf the metrics land on.
    assert child(child(layer, "attn"), "prefill")["metrics"] == {"n": 1}


def test_state_decorator():
    @proton.state("s")
    def f():
        return proton.context.depth()

    assert f() == 1
    assert proton.context.depth() == 0


def test_metric_type_change_is_a_clear_error(out):
    proton.start(out.name)
    with proton.scope("m", {"latency": 1}):
        pass
    with pytest.raises(TypeError, match="Metric value type mismatch for valueId of metric 'latency': it was "
                                        "int, now float"):
        with proton.scope("m", {"latency": 1.5}):
            pass
    with pytest.raises(TypeError, match="metric 'bad'"):
        with proton.scope("m", {"bad": {"a": 1}}):
            pass


def test_unknown_session_errors():
    with pytest.raises(RuntimeError, match="Session has not been initialized: 42"):
        proton.activate(42)
    with pytest.raises(RuntimeError, match="Session has not been initialized: 42"):
        proton.deactivate(42)
    with pytest.raises(RuntimeError, match="Session has not been initialized: 42"):
        proton.finalize(42)


def test_bad_options():
    with pytest.raises(ValueError, match="unknown context 'weird'"):
        proton.start("x", context="weird")
    with pytest.raises(ValueError, match="Unsupported hook"):
        proton.start("x", hook="nope")


def test_unwritable_path_is_reported_at_start(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        proton.start(str(tmp_path / "missing" / "p"))


def test_deactivate_activate_and_two_sessions(out, tmp_path):
    a = proton.start(out.name)
    b = proton.start(str(tmp_path / "second"))
    assert a != b
    proton.deactivate(a)
    with proton.scope("only_b", {"n": 1}):
        pass
    proton.activate(a)
    with proton.scope("both", {"n": 1}):
        pass
    proton.deactivate()
    with proton.scope("none", {"n": 1}):
        pass
    proton.activate()
    proton.finalize()
    root_a = out.read()[0]
    import json

    root_b = json.load(open(tmp_path / "second.hatchet"))[0]
    names_a = {c["frame"]["name"] for c in root_a["children"]}
    names_b = {c["frame"]["name"] for c in root_b["children"]}
    assert names_a == {"both"}
    assert names_b == {"only_b", "both"}


def test_starting_same_name_reactivates(out):
    a = proton.start(out.name)
    proton.deactivate(a, flushing=True)
    assert proton.start(out.name) == a


def test_profile_decorator_with_and_without_parentheses(out, tmp_path):
    @proton.profile
    def plain():
        with proton.scope("p", {"n": 1}):
            pass

    @proton.profile(name=out.name)
    def named():
        with proton.scope("q", {"n": 1}):
            pass

    named()
    named()
    proton.finalize()
    assert child(out.read()[0], "q")["metrics"] == {"n": 2}
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        plain()
        proton.finalize()
        assert (tmp_path / "proton.hatchet").exists()
    finally:
        os.chdir(cwd)


def test_threads_without_scopes_follow_the_main_thread(out):
    proton.start(out.name)
    with proton.scope("main"):
        t = threading.Thread(target=lambda: proton.scope("worker", {"n": 1}).__enter__().__exit__(None, None, None))
        t.start()
        t.join()
    proton.finalize()
    assert child(child(out.read()[0], "main"), "worker")["metrics"] == {"n": 1}


def test_data_get_returns_the_live_tree(out):
    session = proton.start(out.name)
    with proton.scope("live", {"n": 3}):
        pass
    root, devices = proton.data.get(session)
    assert child(root, "live")["metrics"] == {"n": 3}
    assert devices == {}


def test_numpy_like_scalars_are_accepted(out):
    class Scalar:
        def item(self):
            return 4

    proton.start(out.name)
    with proton.scope("s", {"n": Scalar()}):
        pass
    proton.finalize()
    assert child(out.read()[0], "s")["metrics"] == {"n": 4}


def test_processor_stats_are_exposed():
    stats = proton._proton._processor_stats()
    assert set(stats) == {"records", "unattributed", "dropped", "pending_tags", "waiting"}
    assert all(isinstance(v, int) for v in stats.values())


@pytest.mark.parametrize("var, value", [
    ("PROTON_BUFFER_SIZE", "1MB"), ("PROTON_BUFFER_SIZE", "12"), ("PROTON_BUFFER_SIZE", "-4096"),
    ("PROTON_FLUSH_INTERVAL_MS", "fast"), ("PROTON_FLUSH_INTERVAL_MS", "90000"),
    ("PROTON_LAUNCH_CALLBACKS", "runtime"), ("PROTON_BUFFER_THREAD", "yes"),
    ("PROTON_FLUSH_TAGS", "many"), ("PROTON_FLUSH_TAGS", "-1"), ("PROTON_MAX_BUFFERS", "0"),
])
def test_bad_backend_environment_is_an_error_and_starts_nothing(out, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=var):
        proton.start(out.name)
    assert not proton._proton.has_sessions()
    monkeypatch.setenv(var, {"PROTON_BUFFER_SIZE": "4096", "PROTON_FLUSH_INTERVAL_MS": "0",
                             "PROTON_LAUNCH_CALLBACKS": "all", "PROTON_BUFFER_THREAD": "1",
                             "PROTON_FLUSH_TAGS": "0", "PROTON_MAX_BUFFERS": "1"}[var])
    proton.start(out.name)
    proton.finalize()
