"""data="trace" and "tree,trace" without a GPU: CPU scope lanes, formats and their errors."""

import json
import os
import threading

import pytest

import proton


def load_trace(path):
    with open(path) as f:
        trace = json.load(f)
    assert trace["displayTimeUnit"] == "ns"
    assert trace["otherData"]["proton_base_time_ns"] == trace["baseTimeNanoseconds"] > 0
    return trace


def scopes(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "scope"]


def test_trace_records_cpu_scopes_per_thread(out):
    session = proton.start(out.name, data="trace")

    def work():
        with proton.scope("worker"):
            pass

    with proton.scope("main"):
        with proton.scope("inner"):
            t = threading.Thread(target=work)
            t.start()
            t.join()
    proton.finalize(session)
    assert not os.path.exists(out.path)  # no tree for a trace-only session
    trace = load_trace(out.name + ".chrome_trace")
    events = {e["name"]: e for e in scopes(trace)}
    assert set(events) == {"main", "inner", "worker"}
    assert events["inner"]["args"]["call_stack"] == ["main", "inner"]
    assert events["inner"]["tid"] == events["main"]["tid"] != events["worker"]["tid"]
    main, inner = events["main"], events["inner"]
    assert main["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= main["ts"] + main["dur"]
    lanes = {(e["pid"], e["tid"]) for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in events.values()} <= lanes


def test_tree_and_trace_from_one_session(out):
    session = proton.start(out.name, data="tree,trace")
    with proton.scope("both", {"bytes": 1}):
        pass
    proton.finalize(session)
    assert out.read()[0]["children"][0]["frame"]["name"] == "both"
    # A scope given metrics is triton.profiler's "metric" event.
    events = [e for e in load_trace(out.name + ".chrome_trace")["traceEvents"] if e["ph"] == "X"]
    assert [(e["cat"], e["name"]) for e in events] == [("metric", "both: <bytes, 1>")]


def test_scope_events_carry_scope_id_and_scope_metrics(out):
    # As Triton 3.9 writes them: args.scope_id on every scope event (one per instance), and the
    # metrics of proton.scope(name, metrics) / enter_scope(metrics=) / cpu_timed_scope as a
    # "metric" event whose name lists them, sorted, and whose args.metrics holds them as text.
    session = proton.start(out.name, data="trace")
    for _ in range(2):
        with proton.scope("step", {"flops": 2.5, "peak (exc)": 3}):
            with proton.scope("plain"):
                pass
    proton.enter_scope("manual", metrics={"n": 1})
    proton.exit_scope(metrics={"tag (pty)": "x"})
    proton.finalize(session)
    events = [e for e in load_trace(out.name + ".chrome_trace")["traceEvents"] if e["ph"] == "X"]
    ids = [e["args"]["scope_id"] for e in events]
    assert len(ids) == 5 and len(set(ids)) == 5
    steps = [e for e in events if e["name"].startswith("step")]
    assert [e["cat"] for e in steps] == ["metric", "metric"]
    assert steps[0]["name"] == "step: <flops, 2.500000>, <peak, 3>"
    assert steps[0]["args"]["metrics"] == {"flops": "2.500000", "peak": "3"}
    assert steps[0]["args"]["call_stack"] == ["step"]
    plain = [e for e in events if e["name"] == "plain"]
    assert [e["cat"] for e in plain] == ["scope", "scope"]
    assert "metrics" not in plain[0]["args"]
    manual = next(e for e in events if e["name"].startswith("manual"))
    assert manual["name"] == "manual: <n, 1>, <tag, x>"
    assert manual["args"]["metrics"] == {"n": "1", "tag": "x"}


def test_scopes_open_at_finalize_are_closed_and_counted(out):
    session = proton.start(out.name, data="trace")
    proton.enter_scope("left_open")
    proton.finalize(session)
    proton.exit_scope()
    trace = load_trace(out.name + ".chrome_trace")
    assert [e["name"] for e in scopes(trace)] == ["left_open"]
    assert trace["otherData"]["proton_unfinished_scopes"] == 1


def test_format_errors_name_the_fix(out):
    session = proton.start(out.name)  # data="tree"
    with pytest.raises(ValueError, match="data='trace' or data='tree,trace'"):
        proton.finalize(session, output_format="chrome_trace")
    with pytest.raises(ValueError, match="output format 'csv'"):
        proton.finalize(session, output_format="csv")
    proton.finalize(session)
    trace_session = proton.start(out.name + "_t", data="trace")
    with pytest.raises(ValueError, match="no call tree"):
        proton.data.get(trace_session)
    with pytest.raises(ValueError, match="writes a call tree"):
        proton.finalize(trace_session, output_format="hatchet")
    proton.finalize(trace_session)
    with pytest.raises(ValueError, match="unknown data 'timeline'"):
        proton.start(out.name, data="timeline")


def test_trace_budget_env(out, monkeypatch):
    monkeypatch.setenv("PROTON_TRACE_BUDGET_MB", "lots")
    with pytest.raises(ValueError, match="PROTON_TRACE_BUDGET_MB"):
        proton.start(out.name, data="trace")
    monkeypatch.setenv("PROTON_TRACE_BUDGET_MB", "0.5")
    session = proton.start(out.name, data="trace")
    for i in range(20000):  # 20k scopes > 0.5 MB of events: the oldest are dropped
        with proton.scope("s"):
            pass
    proton.finalize(session)
    trace = load_trace(out.name + ".chrome_trace")
    other = trace["otherData"]
    assert other["proton_trace_budget_bytes"] == 512 * 1024
    assert other["proton_dropped_events"] > 0
    assert len(scopes(trace)) + other["proton_dropped_events"] == 20000
    assert any(e["ph"] == "i" and "dropped" in e["name"] for e in trace["traceEvents"])
