"""Host-call frames (docs/advise.md, "Host calls") in a profile as Proton writes them: summed
columns llnl-hatchet and Triton's viewer read, time units in our viewer, and the analyzer's
host_sync and sync_copy. The fixture has the writer's shape (tests/cpp/host_call_test.cpp checks
the writer itself); the GPU side is tests/gpu/test_gpu_host_calls.py.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import proton.profiles as profiles

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "viewer" / "host_calls_profile.json"
VIEWER = os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")
needs_viewer = pytest.mark.skipif(not VIEWER or not os.path.exists(VIEWER),
                                  reason="C++ proton-viewer not built (set PROTON_VIEWER)")


def test_llnl_hatchet_sums_the_host_call_columns():
    ht = pytest.importorskip("hatchet")
    data = json.loads(FIXTURE.read_text())
    data.pop(1)
    gf = ht.GraphFrame.from_literal(data)
    columns = gf.show_metric_columns()
    for m in ("sync_time (ns)", "sync_calls", "memcpy_time (ns)", "memcpy_bytes"):
        assert m in columns
    gf.update_inclusive_columns()
    df = gf.dataframe.set_index("name")
    assert float(df.loc["step", "sync_time (ns) (inc)"]) == 900e6
    assert float(df.loc["step", "memcpy_bytes (inc)"]) == 100 * (64 << 20)
    # Host time is never the kernels' time.
    assert float(df.loc["step", "time (ns) (inc)"]) == 2e9


def test_tritons_viewer_reads_the_host_call_columns():
    viewer = pytest.importorskip("triton.profiler.viewer")
    gf, inclusive, exclusive, _ = viewer.read(str(FIXTURE))
    assert {"sync_time (ns)", "memcpy_time (ns)", "memcpy_bytes"} <= set(inclusive)
    assert viewer.derive_metrics(gf, ["time/ms"], inclusive, exclusive, {}) == ["time/ms (inc)"]


@needs_viewer
def test_our_viewer_shows_host_time_in_any_unit():
    r = subprocess.run([VIEWER, "-m", "sync_time/ms,memcpy_time/s", str(FIXTURE)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[-1]: line.split()[:2] for line in r.stdout.splitlines()[1:] if line}
    assert float(rows["cudaStreamSynchronize"][0]) == 900
    assert float(rows["(pageable)"][1]) == pytest.approx(1.118, abs=1e-3)
    # Per call: "<x>_time" is counted by "<x>_calls", as cpu_time by cpu_calls.
    r = subprocess.run([VIEWER, "-m", "avg_sync_time/us,avg_memcpy_time/ms", str(FIXTURE)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[-1]: line.split()[:2] for line in r.stdout.splitlines()[1:] if line}
    assert float(rows["cudaStreamSynchronize"][0]) == 900
    assert float(rows["(pageable)"][1]) == pytest.approx(11.18, abs=1e-2)


def test_the_analyzer_answers_host_sync_and_sync_copy():
    found = profiles.read(FIXTURE).advise()
    by_rule = {f["rule"]: f for f in found}
    copy = by_rule["sync_copy"]
    assert copy["frame"] == ["step", "data.py:30@to_gpu"]
    assert copy["evidence"]["bytes"] == 100 * (64 << 20)
    assert copy["saving_ns"] > 0 and copy["severity"] == "high"
    sync = by_rule["host_sync"]
    assert sync["frame"] == ["step", "train.py:12@loss_value"]
    assert sync["evidence"]["calls"] == 1000 and sync["evidence"]["blocked_share"] == 0.9
    assert found[0]["rule"] == "sync_copy"  # the larger saving first
