"""The analyzer from Python: proton.profiles.read(p).advise() and `proton --advise`.

The rules themselves are tested in C++ (tests/cpp/analysis); here: the same findings reach
Python as `proton-viewer --advise --format json` prints them, and the command prints them when
the run ends.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import proton.profiles as profiles

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "viewer"
PROFILE = FIXTURES / "advise_profile.json"


def test_advise_returns_ranked_findings_with_the_documented_fields():
    found = profiles.read(PROFILE).advise()
    assert [f["rule"] for f in found[:2]] == ["launch_bound", "roofline"]
    first = found[0]
    assert set(first) >= {"rule", "severity", "frame", "evidence", "suggestion", "saving_ns"}
    assert first["frame"] == ["step"] and first["severity"] == "high"
    assert first["evidence"]["launches"] == 4000
    assert first["evidence"]["gpu_busy_share"] == pytest.approx(0.2)
    assert first["saving_ns"] == pytest.approx(32e6)
    assert found[1]["frame"] == ["loss", "copy_kernel"]
    assert found[1]["evidence"]["bound"] == "memory"
    assert found[-1]["rule"] == "hint.pcsampling" and found[-1]["saving_ns"] is None


def test_launch_facts_and_device_limits_reach_the_rules():
    # A profile as the session writes it on an H100: launch facts on each kernel (pty), the SM's
    # limits in the device map.
    p = profiles.read(FIXTURES / "launch_facts_profile.json")
    device = p.devices[0]
    assert device["max_warps_per_sm"] == 64 and device["shared_memory_per_sm"] == 233472
    found = p.advise()
    by_rule = {}
    for f in found:
        by_rule.setdefault(f["rule"], []).append(f)
    assert by_rule["tail_effect"][0]["frame"] == ["step", "small_gemm"]
    assert by_rule["tail_effect"][0]["evidence"]["shape"] == "small_grid"
    assert [f["frame"][-1] for f in by_rule["spills"]] == ["rownorm"]
    limiters = {f["frame"][-1]: f["evidence"]["limiter"] for f in by_rule["occupancy"]}
    assert limiters == {"rownorm": "registers", "small_gemm": "registers",
                        "transpose": "shared_memory"}
    assert "hint.launch_config" not in by_rule and "hint.device_limits" not in by_rule
    # Properties are shown as stored, never summed into the scope above.
    assert p.find("step/transpose").metrics["registers_per_thread"] == 32
    assert "registers_per_thread" not in p.find("step").metrics


def test_compiled_kernel_facts_and_launch_spread_reach_the_rules():
    # A profile as the session writes it with the compiled Triton kernels' facts (triton_*),
    # each kernel's shortest and longest launch, and regions with their per-warp spread.
    found = profiles.read(FIXTURES / "kernel_facts_profile.json").advise()
    by_rule = {}
    for f in found:
        by_rule.setdefault(f["rule"], []).append(f)
    (spread,) = by_rule["autotune_spread"]
    assert spread["frame"] == ["configs", "copy[STRIDE=33,W=2]"]
    assert spread["evidence"]["worst_config"] == "STRIDE=33, BLOCK=1024, num_warps=2, num_stages=3"
    assert spread["evidence"]["best_config"] == "STRIDE=1, BLOCK=1024, num_warps=8, num_stages=3"
    assert "variant_spread" not in by_rule
    (variance,) = by_rule["kernel_time_variance"]
    assert variance["frame"] == ["work", "spin"]
    assert variance["evidence"]["min_ns"] == 45000 and variance["evidence"]["max_ns"] == 1.6e6
    (spills,) = by_rule["spills"]
    assert spills["frame"] == ["work", "matmul"] and spills["evidence"]["n_spills"] == 48
    assert spills["evidence"]["source"] == "mm.py:21"
    assert "num_stages 4 -> 3" in spills["suggestion"]
    (imbalance,) = by_rule["region_imbalance"]
    assert imbalance["frame"] == ["ws_gemm", "mainloop"]
    assert imbalance["evidence"]["imbalance"] == pytest.approx(3.0)


def test_advise_matches_the_viewer_json():
    viewer = os.environ.get("PROTON_VIEWER", "proton-viewer")
    try:
        r = subprocess.run([viewer, "--advise", "--format", "json", str(PROFILE)],
                           capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("proton-viewer is not on PATH (set PROTON_VIEWER)")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == profiles.read(PROFILE).advise()


def test_advice_text_is_the_viewer_text():
    text = profiles.read(PROFILE).advice_text(top=1)
    assert f"Advice for {PROFILE}" in text
    assert "1. [high] launch_bound  step" in text
    assert "2. " not in text and "(1 more; --format json lists all)" in text
    assert "What more would help:" in text


def test_a_profile_without_kernels_says_what_would_help(tmp_path):
    path = tmp_path / "cpu.hatchet"
    path.write_text('[{"frame": {"name": "ROOT"}, "metrics": {},'
                    ' "children": [{"frame": {"name": "step"}, "metrics": {"cpu_time (ns)": 5}}]}]')
    found = profiles.read(path).advise()
    assert [f["rule"] for f in found] == ["hint.kernels"]


def run_proton(args, cwd):
    return subprocess.run([sys.executable, "-m", "proton", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


SCRIPT = """
import proton
with proton.cpu_timed_scope("step"):
    print("the script's own output")
"""


def test_the_command_prints_findings_when_the_run_ends(tmp_path):
    (tmp_path / "s.py").write_text(textwrap.dedent(SCRIPT))
    r = run_proton(["--advise", "-n", "out", "s.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "the script's own output\n"  # findings go to stderr
    assert "Advice for out.hatchet" in r.stderr
    # No GPU here: the profile holds the CPU scope alone, and the analyzer says what it lacks.
    assert "The profile has no kernels." in r.stderr
    plain = run_proton(["-n", "plain", "s.py"], tmp_path)
    assert plain.returncode == 0 and "Advice for" not in plain.stderr


def test_the_command_says_when_there_is_no_profile_to_analyze(tmp_path):
    (tmp_path / "s.py").write_text("pass\n")
    r = run_proton(["--advise", "-n", "t", "-d", "trace", "s.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "proton: --advise: no profile to analyze (no t.hatchet was written)" in r.stderr


def test_the_command_times_host_calls_only_with_advise(tmp_path):
    # Host calls are off by default (the tree stays triton.profiler's); --advise asks for them,
    # and a value the user set wins.
    (tmp_path / "s.py").write_text("import os\nprint(os.environ.get('PROTON_HOST_CALLS'))\n")
    assert run_proton(["--advise", "-n", "a", "s.py"], tmp_path).stdout == "1\n"
    assert run_proton(["-n", "b", "s.py"], tmp_path).stdout == "None\n"
    env = {**os.environ, "PROTON_HOST_CALLS": "0"}
    r = subprocess.run([sys.executable, "-m", "proton", "--advise", "-n", "c", "s.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.stdout == "0\n", r.stderr


def test_exposed_communication_reaches_comm_exposed(tmp_path):
    # A rank's file as the session writes it: exposed_comm a summed column on the root, the
    # NCCL kernel's share of its time alone on its node.
    def kernel(name, time_ns, extra=None):
        metrics = {"time (ns)": time_ns, "count": 100, "device_id": "0", "device_type": "CUDA"}
        metrics.update(extra or {})
        return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": []}

    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    doc = [{"frame": {"name": "ROOT", "type": "function"},
            "metrics": {"time (ns)": 0, "count": 0, "exposed_comm (ns)": 0},
            "children": [{"frame": {"name": "step", "type": "function"}, "metrics": {},
                          "children": [kernel("gemm", 80_000_000),
                                       kernel(nccl, 20_000_000, {"exposed_comm (ns)": 19_000_000})]}]},
           {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1755000,
                           "memory_clock_rate": 2619000, "num_sms": 132}}}]
    path = tmp_path / "ddp.rank0.hatchet"
    path.write_text(json.dumps(doc))
    p = profiles.read(path)
    assert p.find(f"step/{nccl}").metrics["exposed_comm (ns)"] == 19_000_000
    found = [f for f in p.advise() if f["rule"] == "comm_exposed"]
    assert len(found) == 1, p.advise()
    assert found[0]["frame"] == ["step", nccl]
    assert found[0]["evidence"]["exposed_share"] == pytest.approx(0.95)
    assert found[0]["saving_ns"] == pytest.approx(19e6)
