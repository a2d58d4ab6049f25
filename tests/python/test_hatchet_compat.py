"""Our files load in llnl-hatchet, as triton.profiler's viewer loads them."""

import json

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
