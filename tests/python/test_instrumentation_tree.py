"""Regions on the call tree, from synthetic profile-scratch buffers (no GPU, no Triton)."""

import struct

import pytest

import proton
from proton.hooks import instrumentation


def slice_bytes(warps, data):
    return 40 + 4 * warps + data


def build(ctas, warps=2, data=256, preamble=0xDEADBEEF):
    """ctas: list (per CTA) of lists (per warp) of (is_end, scope, clock[, async])."""
    out = bytearray()
    seg = data // warps
    for cta, per_warp in enumerate(ctas):
        s = bytearray(slice_bytes(warps, data))
        struct.pack_into("<IIII QQQ", s, 0, preamble, cta, 3, data, 1000, 2000, 2100)
        for w, events in enumerate(per_warp):
            struct.pack_into("<I", s, 40 + 4 * w, 2 * len(events))
            for i, (end, scope, clock, *is_async) in enumerate(events):
                w0 = (1 << 31 if end else 0) | (scope << 23) | ((clock >> 32) & 0x7FF)
                w0 |= (1 << 22) if is_async and is_async[0] else 0  # Triton 3.8+ async event
                struct.pack_into("<II", s, 40 + 4 * warps + w * seg + 8 * i, w0, clock & 0xFFFFFFFF)
        out += s
    return bytes(out)


def region(node, *path):
    for name in path:
        node = next(c for c in node["children"] if c["frame"]["name"] == name)
    return node


def test_regions_land_under_the_kernel_of_the_current_scope(out):
    warp = [(False, 0, 100), (False, 1, 110), (True, 1, 150), (True, 0, 300)]
    raw = build([[warp, warp], [warp, []]])
    session = proton.start(out.name)
    with proton.scope("outer"):
        stats = instrumentation.add_cuda_regions(
            "matmul", raw, num_warps=2, scratch_bytes=slice_bytes(2, 256),
            scope_names={0: "loop", 1: "load"}, scope_parents={1: 0})
    proton.finalize(session)
    assert stats["samples"] == 6 and stats["errors"] == []
    loop = region(out.read()[0], "outer", "matmul", "loop")
    assert loop["metrics"]["cycles"] == 3 * 200
    assert loop["metrics"]["count"] == 3
    assert loop["metrics"]["normalized_cycles"] == pytest.approx(600 / 4)  # 2 warps x 2 CTAs
    assert loop["metrics"]["device_id"] == "0"
    assert loop["metrics"]["device_type"] == "1"  # CUDA, as triton.profiler writes cycle metrics
    load = region(loop, "load")
    assert load["metrics"]["cycles"] == 3 * 40


def test_corrupt_slices_are_reported_and_the_rest_kept(out):
    good = [[(False, 0, 1), (True, 0, 11)], []]
    raw = build([good]) + build([good], preamble=0x1234) + build([good])[:-7]
    session = proton.start(out.name)
    stats = instrumentation.add_cuda_regions("k", raw, num_warps=2,
                                             scratch_bytes=slice_bytes(2, 256),
                                             scope_names={0: "r"})
    proton.finalize(session)
    assert stats["corrupt_ctas"] == 1
    assert any("bad preamble" in e for e in stats["errors"])
    assert any("truncated" in e for e in stats["errors"])
    assert region(out.read()[0], "k", "r")["metrics"]["cycles"] == 10


def test_unnamed_scope_ids_get_a_placeholder(out):
    session = proton.start(out.name)
    instrumentation.add_cuda_regions("k", build([[[(False, 7, 5), (True, 7, 9)], []]]),
                                     num_warps=2, scratch_bytes=slice_bytes(2, 256),
                                     scope_names={})
    proton.finalize(session)
    assert region(out.read()[0], "k", "scope_7")["metrics"]["cycles"] == 4


def test_decoder_is_exposed_for_raw_buffers():
    raw = build([[[(False, 0, 5), (True, 0, 9)], [(False, 0, 5), (True, 0, 6)]]])
    d = proton._proton.instr_decode(raw, 2, slice_bytes(2, 256), [])
    assert [s[5] - s[4] for s in d["samples"]] == [4, 1]
    assert d["ctas"][0][2] == 1000  # global time at init


def _viewer():
    import os
    import shutil

    return os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")


@pytest.mark.skipif(_viewer() is None, reason="C++ proton-viewer not built (set PROTON_VIEWER)")
def test_viewer_shows_cycles_share_of_the_kernel(out):
    import subprocess

    warp = [(False, 0, 100), (False, 1, 110), (True, 1, 135), (True, 0, 200)]
    session = proton.start(out.name)
    instrumentation.add_cuda_regions("kern", build([[warp, warp]]), num_warps=2,
                                     scratch_bytes=slice_bytes(2, 256),
                                     scope_names={0: "loop", 1: "load"}, scope_parents={1: 0})
    # A second kernel with as many cycles: shares of the root would halve, of the kernel not.
    instrumentation.add_cuda_regions("other", build([[[(False, 0, 0), (True, 0, 250)], warp[:0]]]),
                                     num_warps=2, scratch_bytes=slice_bytes(2, 256),
                                     scope_names={0: "body"})
    proton.finalize(session)
    r = subprocess.run([_viewer(), "-m", "cycles/%,cycles", out.path], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = {line.split()[-1]: line for line in r.stdout.splitlines() if line.strip()}
    # loop: 2 x 100 of its own, load (nested, inclusive in loop) 2 x 25: the viewer rolls
    # load into loop as Hatchet does, so loop is 250 of the kernel's 250.
    assert "100.0" in lines["kern"], r.stdout
    assert "100.0" in lines["other"], r.stdout
    assert "20.0" in lines["load"], r.stdout  # 50 of kern's 250 (10.0 of the root's 500)


def test_regions_on_the_trace_one_lane_per_sm_cta_warp(tmp_path):
    import json

    warp = [(False, 0, 100), (True, 0, 1100)]
    name = str(tmp_path / "t")
    session = proton.start(name, data="tree,trace")
    instrumentation.add_cuda_regions("kern", build([[warp, warp], [warp, []]]), num_warps=2,
                                     scratch_bytes=slice_bytes(2, 256), scope_names={0: "loop"},
                                     clock_khz=1_000_000)  # 1 GHz: a cycle is a ns
    proton.finalize(session)
    events = json.load(open(name + ".chrome_trace"))["traceEvents"]
    regions = [e for e in events if e.get("cat") == "region"]
    assert len(regions) == 3
    assert {(e["args"]["cta"], e["args"]["warp"]) for e in regions} == {(0, 0), (0, 1), (1, 0)}
    assert all(e["name"] == "loop" and e["args"]["kernel"] == "kern" for e in regions)
    assert all(abs(e["dur"] - 1.0) < 1e-6 for e in regions)  # 1,000 cycles = 1 us
    assert len({e["tid"] for e in regions}) == 3
    lanes = [e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name" and "warp" in e["args"]["name"]]
    assert sorted(lanes) == ["SM 3 / CTA 0 / warp 0", "SM 3 / CTA 0 / warp 1",
                             "SM 3 / CTA 1 / warp 0"]


def test_async_events_across_warps_on_the_tree_and_as_trace_arrows(tmp_path):
    import json

    # Per iteration, warp 0 starts the copy (event "tma", id 1) inside its region "loop" (id 0)
    # and warp 1 ends it; the records carry the async flag (bit 22), as Triton 3.8+ writes them.
    producer = [(False, 0, 100), (False, 1, 110, True), (False, 1, 510, True), (True, 0, 900)]
    consumer = [(True, 1, 400, True), (True, 1, 700, True)]
    raw = build([[producer, consumer]])
    d = proton._proton.instr_decode(raw, 2, slice_bytes(2, 256), [])
    assert d["async_events"] == 2 and d["cross_unit_events"] == 2 and d["unmatched_events"] == 0
    assert [(s[2], s[6], s[7], s[5] - s[4]) for s in d["samples"] if s[7]] == [(0, 1, True, 290),
                                                                              (0, 1, True, 190)]
    name = str(tmp_path / "t")
    session = proton.start(name, data="tree,trace")
    stats = instrumentation.add_cuda_regions(
        "kern", raw, num_warps=2, scratch_bytes=slice_bytes(2, 256),
        scope_names={0: "loop", 1: "tma"}, scope_parents={1: 0}, clock_khz=1_000_000)
    proton.finalize(session)
    assert stats["async_events"] == 2 and stats["unmatched_async"] == 0
    tree = json.load(open(name + ".hatchet"))
    tma = region(tree[0], "kern", "loop", "tma")
    assert tma["metrics"]["cycles"] == 290 + 190 and tma["metrics"]["count"] == 2
    events = json.load(open(name + ".chrome_trace"))["traceEvents"]
    spans = [e for e in events if e.get("name") == "tma" and e["ph"] == "X" and e["dur"] > 0]
    assert len(spans) == 2 and all(e["args"]["is_async"] and e["args"]["end_warp"] == 1
                                   for e in spans)
    starts = {e["id"]: e for e in events if e["ph"] == "s" and e.get("cat") == "async"}
    ends = {e["id"]: e for e in events if e["ph"] == "f" and e.get("cat") == "async"}
    assert len(starts) == 2 and starts.keys() == ends.keys()
    lanes = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for i in starts:
        assert lanes[starts[i]["tid"]] == "SM 3 / CTA 0 / warp 0"
        assert lanes[ends[i]["tid"]] == "SM 3 / CTA 0 / warp 1"
        assert ends[i]["ts"] > starts[i]["ts"]


def test_loss_report_names_each_loss_and_its_remedy():
    before = {"overflows": 1, "wrapped_units": 0, "overwritten_events": 0, "copy_errors": 0}
    after = {"overflows": 4, "wrapped_units": 8, "overwritten_events": 96, "copy_errors": 0,
             "unmatched_events": 2, "largest_overflow_bytes": 300 << 20}
    lines = instrumentation.loss_report(before, after, proton.mode.Default(buffer_size=4096))
    text = "\n".join(lines)
    assert len(lines) == 3
    assert "3 launches found the device pool full" in text and "PROTON_INSTR_POOL_MB" in text
    assert "the largest asked for 300 MB" in text
    assert "8 warp buffers wrapped" in text and "96 events" in text and "4096 bytes" in text
    assert "2 region events had no partner" in text
    assert instrumentation.loss_report(after, after) == []
    other = instrumentation.loss_report({}, {"other_context_launches": 5})
    assert len(other) == 1 and "5 launches ran on another GPU" in other[0]
    graphs = instrumentation.loss_report({}, {"graph_dropped": 2})
    assert len(graphs) == 1 and "2 launches captured into CUDA graphs" in graphs[0]
    # Waits for a full pool lose nothing; long ones are said, with the knob that shortens them.
    waited = instrumentation.loss_report({"full_wait_ns": 10**6}, {"full_wait_ns": 251 * 10**6})
    assert len(waited) == 1 and "waited 250 ms" in waited[0] and "PROTON_INSTR_POOL_MB" in waited[0]
    assert instrumentation.loss_report({}, {"full_wait_ns": 50 * 10**6}) == []


def test_finalize_says_what_the_session_lost(monkeypatch, capsys):
    # The runtime's counters move while the session runs: finalize prints the difference, once
    # the engine has drained and closed the session's pool.
    counters = {"overflows": 5, "wrapped_units": 0, "overwritten_events": 0}

    class FakeRuntime:
        def instr_stats(self):
            return dict(counters)

    monkeypatch.setattr(instrumentation, "_proton", lambda: FakeRuntime())
    monkeypatch.setitem(instrumentation._stats_at_start, 77, dict(counters))

    class Hook:
        def detach(self, sid):
            pass

    monkeypatch.setitem(instrumentation._Registry.sessions, 77, Hook())
    counters["overflows"] = 7
    counters["copy_errors"] = 1
    report = instrumentation.detach(77)  # Triton's hooks out, before the engine drains
    assert capsys.readouterr().err == ""
    report()  # once the engine drained and closed the pool
    err = capsys.readouterr().err
    assert "proton: instrumentation session 77: 2 launches found the device pool full" in err
    assert "1 launches' records could not be copied back" in err
    assert 77 not in instrumentation._stats_at_start


def test_the_engine_starts_an_instrumentation_session_by_itself(tmp_path):
    # No Python hook in between: the native start takes backend="instrumentation" with its
    # mode, checks it, and keeps it for Triton's compiler hooks; other sessions have none.
    from proton import _proton

    s = _proton.start(str(tmp_path / "p"), "shadow", "tree", "instrumentation",
                      "default:buffer_size=1024")
    plain = _proton.start(str(tmp_path / "q"), "shadow", "tree", "", "")
    try:
        assert _proton.instrumentation_mode(s) == "default:buffer_size=1024"
        assert _proton.instrumentation_mode(plain) is None
        with pytest.raises(ValueError, match="differs from the running session's"):
            _proton.start(str(tmp_path / "r"), "shadow", "tree", "instrumentation", "")
    finally:
        _proton.finalize(s, "")
        _proton.finalize(plain, "")
    with pytest.raises(ValueError, match="takes an instrumentation mode, not 'graph'"):
        _proton.start(str(tmp_path / "r"), "shadow", "tree", "instrumentation", "graph")
    assert not _proton.has_sessions()
