"""bench/always_on.py on the CPU, reduced: every variant that can run here gives a time, the
`idle` child really had no session, and the windows part opens and closes windows through the
control socket, each file written by the time the stop reply comes."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def test_always_on_bench_runs_reduced_on_the_cpu(tmp_path):
    env = dict(os.environ)
    env.pop("PROTON_IDLE", None)
    r = subprocess.run([sys.executable, str(BENCH / "always_on.py"), "--cpu", "--out",
                        str(tmp_path), "--windows", "12", "--launches", "200", "--regions", "2",
                        "--rounds", "1"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    [json_file] = tmp_path.glob("*-always-on.json")
    assert json_file.with_suffix(".md").exists()
    data = json.loads(json_file.read_text())
    launches = data["launches"]
    for variant in ("none", "idle", "window"):
        assert launches[variant]["ns_per_launch"] > 0, launches[variant]
    assert launches["floor"]["skipped"]  # no GPU here
    assert launches["idle"]["runs"][0]["note"] == {"sessions": False}
    w = data["windows"]
    assert w["windows"] == 12 and len(w["open_ms_all"]) == 12 and len(w["close_ms_all"]) == 12
    assert w["files_missing_at_reply"] == 0
    assert list(w["memory"]) == ["idle", "after 1", "after 10", "after 12"]
    assert w["target_exit"] == 0
    assert "| close: `stop` sent" in json_file.with_suffix(".md").read_text()
