"""proton.data: phases, msgpack and clearing, on a machine with no GPU (scope metrics only)."""

import json
import os

import msgpack
import pytest

import proton
from tree_util import child


def names(tree):
    return [c["frame"]["name"] for c in tree[0]["children"]]


def test_get_and_get_msgpack_return_the_same_tree(out):
    session = proton.start(out.name)
    with proton.scope("outer", {"bytes": 3, "flops16": 2.5, "hist": [1, 2], "big": 1 << 40}):
        with proton.scope("inner é ✓", {"neg": -7}):
            pass
    as_json = proton.data.get(session)
    packed = proton.data.get_msgpack(session)
    assert isinstance(packed, bytes)
    assert msgpack.unpackb(packed, raw=False, strict_map_key=False) == as_json
    proton.finalize(session, output_format="hatchet,hatchet_msgpack")
    with open(out.name + ".hatchet_msgpack", "rb") as f:
        from_file = msgpack.unpackb(f.read(), raw=False)
    assert from_file == out.read()
    assert child(child(from_file[0], "outer"), "inner é ✓")["metrics"] == {"neg": -7}


def test_phases_split_the_tree_and_files(out):
    session = proton.start(out.name)
    with proton.scope("a", {"n": 1}):
        pass
    assert proton.data.advance_phase(session) == 1
    with proton.scope("b", {"n": 1}):
        pass
    assert names(proton.data.get(session, 0)) == ["a"]
    assert names(proton.data.get(session, phase=1)) == ["b"]
    assert proton.data.is_phase_complete(session, 0)  # no kernels were launched in it
    assert not proton.data.is_phase_complete(session, 1)  # the current phase is never complete
    assert proton.data.is_phase_flushed is proton.data.is_phase_complete
    with pytest.raises(ValueError, match="has not begun"):
        proton.data.get(session, 5)
    proton.finalize(session)
    assert not os.path.exists(out.path)
    for phase, name in enumerate(["a", "b"]):
        with open(f"{out.name}.part_{phase}.hatchet") as f:
            assert names(json.load(f)) == [name]


def test_clear_one_phase_or_up_to_a_phase(out):
    session = proton.start(out.name)
    for name in "abc":
        with proton.scope(name, {"n": 1}):
            pass
        proton.data.advance_phase(session)
    proton.data.clear(session, 1)
    assert names(proton.data.get(session, 1)) == []
    assert names(proton.data.get(session, 0)) == ["a"]
    proton.data.clear(session, 2, clear_up_to_phase=True)
    assert [names(proton.data.get(session, p)) for p in range(4)] == [[], [], [], []]
    proton.finalize(session)
    assert sorted(os.listdir(os.path.dirname(out.name))) == ["profile.part_3.hatchet"]


def test_periodic_flushing_writes_phase_files(out):
    session = proton.start(out.name, mode="periodic_flushing:format=hatchet_msgpack")
    for i in range(3):
        with proton.scope(f"step_{i}", {"count": 1}):
            pass
        proton.data.advance_phase(session)
        # CPU-only phases are complete at once: each advance writes the one before.
        with open(f"{out.name}.part_{i}.hatchet_msgpack", "rb") as f:
            assert names(msgpack.unpackb(f.read(), raw=False)) == [f"step_{i}"]
    proton.finalize(session)
    assert os.path.exists(f"{out.name}.part_3.hatchet_msgpack")


def test_periodic_flushing_writes_a_chrome_trace_per_phase(out):
    # As the newest triton.profiler: name.part_<N>.chrome_trace for each completed phase.
    import json

    session = proton.start(out.name, data="trace", mode="periodic_flushing:format=chrome_trace")
    for i in range(3):
        with proton.scope(f"step_{i}"):
            pass
        proton.data.advance_phase(session)
        with open(f"{out.name}.part_{i}.chrome_trace") as f:
            events = json.load(f)["traceEvents"]
        assert [e["name"] for e in events if e.get("cat") == "scope"] == [f"step_{i}"]
    with proton.scope("last"):
        pass
    proton.finalize(session)
    with open(f"{out.name}.part_3.chrome_trace") as f:
        assert [e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "scope"] == ["last"]
    assert not os.path.exists(f"{out.name}.chrome_trace")


@pytest.mark.parametrize(
    "mode, match",
    [("periodic_flushing:format=xml", "periodic_flushing format 'xml'"),
     ("periodic_flushing:every=3", "periodic_flushing option"),
     ("periodic_flushing:format=chrome_trace", "writes a trace per phase; it needs data='trace'")])
def test_bad_periodic_flushing_modes(out, mode, match):
    with pytest.raises(ValueError, match=match):
        proton.start(out.name, mode=mode)


def test_none_session_is_a_no_op():
    assert proton.data.get(None) is None
    assert proton.data.get_msgpack(None) is None
    assert proton.data.advance_phase(None) is None
    assert proton.data.is_phase_complete(None) is False
    proton.data.clear(None)
