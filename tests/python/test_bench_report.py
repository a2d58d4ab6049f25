"""bench/ without a GPU: the report and its targets block on a recorded run, the command line,
CPU pinning, and a whole run.py pass with a fake child."""

import importlib
import json
import pathlib
import sys
import types

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"
# A real run of bench/run.py --quick (H200), kept as a fixture of the report code.
RECORDED = BENCH.parent / "tests" / "fixtures" / "bench" / "2026-11-21-h200-quick-first.json"
sys.path.insert(0, str(BENCH))

import report  # noqa: E402  (bench/ is not a package)


@pytest.fixture
def run_module(monkeypatch):
    """bench/run.py, importable where torch is not installed (workloads.py imports it, but
    only the benchmark's children use it)."""
    try:
        importlib.import_module("torch")
    except ImportError:
        monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    return importlib.import_module("run")


def recorded():
    with open(RECORDED) as f:
        return json.load(f)


def test_lower_quartile_interpolates_like_numpy():
    assert report.lower_quartile([5, 1, 4, 2, 3]) == 2
    assert report.lower_quartile([1, 2, 3, 4]) == 1.75
    assert report.lower_quartile([7]) == 7


def test_run_time_uses_the_runs_statistic():
    run = {"median_ms": 3.0, "region_ms": [1.0, 2.0, 3.0, 10.0, 11.0]}
    assert report.run_ms(run) == 3.0  # recorded before `stat` existed: the median
    assert report.run_ms({**run, "stat": "q1"}) == 2.0


def test_targets_block_on_a_recorded_run():
    data = recorded()
    text = report.markdown(data["meta"], data["results"])
    block = text[text.index("Targets for"):]
    lines = [ln for ln in block.splitlines() if ln.startswith("- ")]
    assert [ln.split(":")[0] for ln in lines] == [
        "- tiny_torch ratio", "- tiny_torch above floor", "- tiny_triton above floor",
        "- mlp_train vs triton", "- gemm_bf16 ratio", "- RSS net of none", "- output vs triton"]
    assert lines[0] == "- tiny_torch ratio: 1.157x [1.155–1.159]; target ≤ 1.200x: met"
    assert "target ≤ +0.150 µs/launch" in lines[1]
    assert lines[5].startswith("- RSS net of none: 26.8 MB (worst of 5: tiny_torch)")
    assert lines[6].endswith("target ≤ 1.000x: met")
    # No floor_cb in this run: no split of the cost above the floor.
    assert "CUPTI dispatch" not in block


def test_targets_follow_the_data():
    results = recorded()["results"]
    for r in results:  # make proton 10% slower than `none` on tiny_torch in every round
        if r["workload"] == "tiny_torch" and r["variant"] == "proton":
            base = next(b for b in results if b["workload"] == "tiny_torch"
                        and b["variant"] == "none" and b["round"] == r["round"])
            r["region_ms"] = [t * 1.5 for t in base["region_ms"]]
    measured, missing = report.targets(results)
    ratio = next(t for t in measured if t["label"] == "tiny_torch ratio")
    assert ratio["value"] == pytest.approx(1.5) and not ratio["met"]
    assert missing == []


def test_rss_net_subtracts_the_same_rounds_none():
    data = recorded()
    rows = {(r["workload"], r["variant"]): r for r in report.summarize(data["results"])}
    proton, none = rows["tiny_torch", "proton"], rows["tiny_torch", "none"]
    assert proton["rss_net_mb"] == pytest.approx(proton["rss_growth_mb"] - none["rss_growth_mb"],
                                                 abs=0.5)
    assert "rss_net_mb" in rows["gemm_bf16", "floor"]


def test_missing_targets_are_named():
    results = [r for r in recorded()["results"] if r["workload"] in ("tiny_torch", "tiny_triton")]
    _, missing = report.targets(results)
    assert missing == ["mlp_train vs triton", "gemm_bf16 ratio"]
    assert "not measured in this run: mlp_train vs triton, gemm_bf16 ratio" in \
        report.targets_markdown(results)


def test_presets_and_overrides(run_module):
    args = run_module.parse_args(["--preset", "steady", "--cpus", "none"])
    assert args.workloads == ["tiny_torch", "tiny_triton"]
    assert args.variants == ["none", "floor", "floor_cb", "proton", "triton"]
    assert args.cpus is None
    assert run_module.config_for(args)["rounds"] == 9
    args = run_module.parse_args(["--quick", "--variants", "proton", "--rounds", "4"])
    assert args.preset == "quick" and args.variants == ["none", "proton"]
    assert run_module.config_for(args) == {"rounds": 4, "loops": 3, "warmup": 1, "budget_s": 110}
    default = run_module.parse_args(["--cpus", "none"])
    assert "floor_cb" in default.variants and "cuda_graph" in default.workloads


def test_auto_pinning_skips_the_first_core_and_hyperthread_siblings(run_module, monkeypatch):
    # 8 cores with 2 threads each, siblings numbered n and n + 8 (the usual x86 layout).
    monkeypatch.setattr(run_module.os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(run_module, "_siblings", lambda cpu: {cpu % 8, cpu % 8 + 8})
    assert run_module.pick_cpus("auto") == [1, 2, 3, 4]
    assert run_module.pick_cpus("none") is None
    assert run_module.pick_cpus("3,5-6,9") == [3, 5, 6, 9]
    with pytest.raises(SystemExit):
        run_module.pick_cpus("20-21")
    # Too few CPUs to spare the first core and still have four: no pinning.
    monkeypatch.setattr(run_module.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(run_module, "_siblings", lambda cpu: {cpu})
    assert run_module.pick_cpus("auto") is None


def test_a_whole_run_with_a_fake_child(run_module, monkeypatch, tmp_path):
    """run.py end to end: jobs carry the pinned CPUs, files are named after the preset, and
    the JSON holds the targets the table prints."""
    slowdown = {"none": 1.0, "floor": 1.10, "floor_cb": 1.14, "proton": 1.16, "triton": 1.30}
    jobs = []

    def fake_child(job):
        jobs.append(job)
        base = 30.0 + job["round"]  # drift between rounds: paired ratios cancel it
        times = [base * slowdown[job["variant"]] * (1 + 0.01 * i) for i in range(job["loops"])]
        return {"variant": job["variant"], "workload": job["workload"], "round": job["round"],
                "region_ms": times, "median_ms": sorted(times)[len(times) // 2], "stat": "q1",
                "kernels": 5000, "kernels_seen": None, "start_ms": 10.0, "finalize_ms": 2.0,
                "rss_growth_mb": 18.0 + (20.0 if job["variant"] != "none" else 0.0),
                "output_bytes": {"proton": 500, "triton": 1300}.get(job["variant"], 0),
                "device": "Fake GPU", "versions": {}}

    monkeypatch.setattr(run_module, "preload_for_fork", lambda: fake_child)
    rc = run_module.main(["--preset", "steady", "--rounds", "3", "--cpus", "none",
                          "--out", str(tmp_path)])
    assert rc == 0
    assert len(jobs) == 3 * 2 * 5 and {j["cpus"] for j in jobs} == {None}
    assert {j["loops"] for j in jobs} == {30}
    (json_path,) = tmp_path.glob("*-fake-gpu-steady.json")
    data = json.loads(json_path.read_text())
    assert data["meta"]["config"]["preset"] == "steady"
    by_label = {t["label"]: t for t in data["targets"]}
    assert by_label["tiny_torch ratio"]["value"] == pytest.approx(1.16)
    assert by_label["RSS net of none"]["value"] == pytest.approx(20.0)
    md = json_path.with_suffix(".md").read_text()
    assert "3 of 3 rounds x 30 timed regions" in md
    assert "Time of a run: lower quartile (tiny_torch, tiny_triton)" in md
    assert "CUPTI dispatch" in md  # floor_cb ran: proton's cost above the floor is split
