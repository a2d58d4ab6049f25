"""Our files load in llnl-hatchet, as triton.profiler's viewer loads them."""

import json
from pathlib import Path

import pytest

import proton

ht = pytest.importorskip("hatchet")


def test_graphframe_from_literal(out):
    proton.start(out.name)
    with proton.scope("model", {"flops16": 1e9, "bytes": 4096}):
        with proton.scope("layer0", {"bytes": 1024}):
            pass
    proton.finalize()
    with open(out.path) as f:
        data = json.load(f)
    device_map = data.pop(1)
    gf = ht.GraphFrame.from_literal(data)
    names = set(gf.dataframe["name"])
    assert {"ROOT", "model", "layer0"} <= names
    assert "bytes" in gf.show_metric_columns()
    gf.update_inclusive_columns()
    model = gf.dataframe[gf.dataframe["name"] == "model"]
    assert float(model["bytes (inc)"].iloc[0]) == 5120
    assert device_map == {}


FACTS = Path(__file__).resolve().parents[1] / "fixtures" / "viewer" / "launch_facts_profile.json"


def test_launch_facts_stay_per_node_in_hatchet():
    # Kernel launch facts are not among the root's metric columns: Hatchet keeps them per node
    # (as device_id) and never rolls them up into inclusive columns.
    with open(FACTS) as f:
        data = json.load(f)
    device_map = data.pop(1)
    assert device_map["CUDA"]["0"]["max_warps_per_sm"] == 64
    gf = ht.GraphFrame.from_literal(data)
    assert "registers_per_thread" not in gf.show_metric_columns()
    gf.update_inclusive_columns()
    assert "registers_per_thread (inc)" not in gf.dataframe.columns
    df = gf.dataframe.set_index("name")
    assert df.loc["transpose", "registers_per_thread"] == 32
    assert df.loc["rownorm", "local_bytes_per_thread"] == 176
    assert float(df.loc["step", "time (ns) (inc)"]) == 100e6


def test_tritons_viewer_reads_launch_facts_and_device_limits():
    viewer = pytest.importorskip("triton.profiler.viewer")
    gf, inclusive, exclusive, device_info = viewer.read(str(FACTS))  # Triton 3.6 and 3.9
    assert "time (ns)" in inclusive and "registers_per_thread" not in inclusive
    assert "registers_per_thread" in exclusive  # listed like device_id, as stored
    assert device_info["CUDA"]["0"]["num_sms"] == 132
    derived = viewer.derive_metrics(gf, ["time/ms"], inclusive, exclusive, device_info)
    assert derived == ["time/ms (inc)"]
    df = gf.dataframe.set_index("name")
    assert df.loc["step", "time/ms (inc)"] == pytest.approx(100)


KERNEL_FACTS = FACTS.parent / "kernel_facts_profile.json"


def test_compiled_kernel_facts_stay_per_node_in_hatchet():
    # The compiled Triton kernel's facts (numbers and strings) and the launch-time spread are
    # properties like the launch facts: per node, never a rolled-up column.
    with open(KERNEL_FACTS) as f:
        data = json.load(f)
    data.pop(1)
    gf = ht.GraphFrame.from_literal(data)
    columns = gf.show_metric_columns()
    for name in ("triton_n_spills", "triton_config", "time_min (ns)", "time_max (ns)"):
        assert name not in columns, name
    gf.update_inclusive_columns()
    df = gf.dataframe.set_index("name")
    assert df.loc["matmul", "triton_n_spills"] == 48
    assert df.loc["matmul", "triton_config"].startswith("BLOCK_M=128")
    assert df.loc["spin", "time_max (ns)"] == 1600000
    assert float(df.loc["work", "time (ns) (inc)"]) == 51e6


def test_tritons_viewer_reads_compiled_kernel_facts():
    viewer = pytest.importorskip("triton.profiler.viewer")
    gf, inclusive, exclusive, device_info = viewer.read(str(KERNEL_FACTS))
    assert "time (ns)" in inclusive and "triton_n_spills" not in inclusive
    derived = viewer.derive_metrics(gf, ["time/ms"], inclusive, exclusive, device_info)
    assert derived == ["time/ms (inc)"]
    df = gf.dataframe.set_index("name")
    assert df.loc["work", "time/ms (inc)"] == pytest.approx(51)
