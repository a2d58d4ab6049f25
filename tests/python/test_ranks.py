"""Many processes: per-rank file names, the rank block in each file, launchers, merged views.

Real multi-process runs without a GPU: CPU-only scopes in workers started with a launcher's
environment (torchrun's RANK/WORLD_SIZE, srun's SLURM_*, mpirun's OMPI_*) and one real
`torchrun --nproc-per-node 2 -m proton` job over gloo. tests/gpu/test_gpu_ranks.py does the same
with kernels.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from proton import _ranks

VIEWER = os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")
needs_viewer = pytest.mark.skipif(VIEWER is None,
                                  reason="C++ proton-viewer not built (set PROTON_VIEWER)")

# Rank r records (2r + 1) x 100 ms of cpu_time in "step" (the metric cpu_timed_scope writes,
# given exactly rather than slept, so the numbers below do not depend on the machine's load):
# rank 1 of 2 is the straggler; rank 0 alone runs "log_rank0".
WORKER = """
import os
import proton
r = int(os.environ.get("RANK") or os.environ.get("SLURM_PROCID") or
        os.environ.get("OMPI_COMM_WORLD_RANK") or 0)
with proton.scope("step", {"cpu_time (ns)": 100_000_000 * (2 * r + 1)}):
    pass
if r == 0:
    with proton.scope("log_rank0", {"cpu_time (ns)": 30_000_000}):  # above the 1% floor
        pass
"""

CLEAN = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
         "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
         "PMI_RANK", "PMI_SIZE", "PROTON_RANK_PATTERN")


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    env.update(extra or {})
    return env


def launch(tmp_path, envs, args=("-n", "job", "-d", "tree,trace")):
    """Starts one `python -m proton ARGS worker.py` per env at once, as a launcher would."""
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(WORKER))
    procs = [subprocess.Popen([sys.executable, "-m", "proton", *args, str(script)], cwd=tmp_path,
                              env=clean_env(e), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for e in envs]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    return procs


def root_frame(path):
    with open(path) as f:
        return json.load(f)[0]["frame"]


# --- naming -------------------------------------------------------------------------------------

@pytest.mark.parametrize("env,expected", [
    ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3"}, (3, 8, 3, "torchrun")),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1"}, (5, 16, 1, "slurm")),
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4"}, (2, 4, -1, "mpi")),
    ({"PMI_RANK": "1", "PMI_SIZE": "2"}, (1, 2, -1, "mpi")),
    # torchrun inside an srun allocation: the worker's own RANK wins.
    ({"RANK": "1", "WORLD_SIZE": "2", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"},
     (1, 2, -1, "torchrun")),
])
def test_launcher_environments_are_detected(env, expected):
    r = _ranks.detect(env)
    assert (r.rank, r.world_size, r.local_rank, r.launcher) == expected
    assert r.host


@pytest.mark.parametrize("env", [
    {}, {"RANK": "0", "WORLD_SIZE": "1"}, {"SLURM_PROCID": "0", "SLURM_NTASKS": "1"},
    {"RANK": "x", "WORLD_SIZE": "2"}, {"RANK": "2", "WORLD_SIZE": "2"},
])
def test_single_processes_are_not_ranks(env):
    assert _ranks.detect(env) is None


def test_output_names():
    r = _ranks.Rank(3, 8, 1, "torchrun", "node7")
    assert _ranks.output_name("ddp", None) == "ddp"  # a single process keeps today's name
    assert _ranks.output_name("ddp", r) == "ddp.rank3"
    assert _ranks.output_name("out/ddp.hatchet", r) == "out/ddp.rank3"
    assert _ranks.output_name("ddp", r, "{name}-{host}-{local_rank}") == "ddp-node7-1"
    assert _ranks.output_name("run_{rank}_of_{world_size}", r) == "run_3_of_8"
    assert _ranks.output_name("run_{rank}", None) == "run_0"
    with pytest.raises(ValueError, match="must contain"):
        _ranks.output_name("ddp", r, "{name}.fixed")
    with pytest.raises(ValueError, match="placeholders"):
        _ranks.output_name("ddp", r, "{name}.{rank}.{nope}")


def test_pattern_from_the_environment(monkeypatch):
    monkeypatch.setenv("PROTON_RANK_PATTERN", "{name}/r{rank}")
    assert _ranks.output_name("ddp", _ranks.Rank(1, 2, 1, "torchrun", "h")) == "ddp/r1"


# --- real processes -----------------------------------------------------------------------------

@pytest.mark.parametrize("launcher", ["torchrun", "slurm", "mpi"])
def test_each_rank_writes_its_own_files(tmp_path, launcher):
    envs = {
        "torchrun": [{"RANK": str(r), "WORLD_SIZE": "2", "LOCAL_RANK": str(r)} for r in (0, 1)],
        "slurm": [{"SLURM_PROCID": str(r), "SLURM_NTASKS": "2", "SLURM_LOCALID": str(r)}
                  for r in (0, 1)],
        "mpi": [{"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": "2"} for r in (0, 1)],
    }[launcher]
    launch(tmp_path, envs)
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("job"))
    assert names == ["job.rank0.chrome_trace", "job.rank0.hatchet", "job.rank1.chrome_trace",
                     "job.rank1.hatchet"]
    for r in (0, 1):
        frame = root_frame(tmp_path / f"job.rank{r}.hatchet")
        assert frame["name"] == "ROOT"
        assert (frame["rank"], frame["world_size"]) == (r, 2)
        assert frame["host"] and "device" in frame and frame["proton_version"]
        with open(tmp_path / f"job.rank{r}.chrome_trace") as f:
            other = json.load(f)["otherData"]
        assert (other["proton_rank"], other["proton_world_size"]) == (r, 2)
        assert "proton_gpu_offset_ns" in other


def test_single_process_keeps_the_plain_name_and_file(tmp_path):
    launch(tmp_path, [{}], args=("-n", "job"))
    assert (tmp_path / "job.hatchet").exists()
    assert not any("rank" in p.name for p in tmp_path.iterdir())
    assert set(root_frame(tmp_path / "job.hatchet")) == {"name", "type"}


def test_rank_pattern_option(tmp_path):
    launch(tmp_path, [{"RANK": str(r), "WORLD_SIZE": "2"} for r in (0, 1)],
           args=("-n", "job", "--rank-pattern", "{name}_r{rank}of{world_size}"))
    assert (tmp_path / "job_r0of2.hatchet").exists() and (tmp_path / "job_r1of2.hatchet").exists()


def test_proton_before_the_launcher_is_refused(tmp_path):
    r = subprocess.run([sys.executable, "-m", "proton", "torchrun", "--nproc-per-node", "2",
                        "x.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "put proton after the launcher" in r.stderr
    assert not any(tmp_path.iterdir())


def test_hatchet_and_triton_viewer_read_rank_files(tmp_path):
    launch(tmp_path, [{"RANK": str(r), "WORLD_SIZE": "2"} for r in (0, 1)], args=("-n", "job"))
    hatchet = pytest.importorskip("hatchet")
    with open(tmp_path / "job.rank1.hatchet") as f:
        data = json.load(f)
    gf = hatchet.GraphFrame.from_literal(data[:1])
    assert "step" in set(gf.dataframe["name"])
    r = subprocess.run([sys.executable, "-m", "triton.profiler.viewer", "-m", "cpu_time/ms",
                        str(tmp_path / "job.rank1.hatchet")], capture_output=True, text=True,
                       timeout=120)
    if "No module named" in r.stderr:
        pytest.skip("triton.profiler not installed")
    assert r.returncode == 0, r.stderr
    assert "step" in r.stdout


@needs_viewer
def test_viewer_merges_rank_files_and_finds_the_straggler(tmp_path):
    launch(tmp_path, [{"RANK": str(r), "WORLD_SIZE": "2"} for r in (0, 1)])
    files = [str(tmp_path / f"job.rank{r}.hatchet") for r in (0, 1)]
    view = subprocess.run([VIEWER, "--no-color", "-m", "cpu_time/ms", *files],
                          capture_output=True, text=True, timeout=60)
    assert view.returncode == 0, view.stderr
    assert "imbalance" in view.stdout and "ranks" in view.stdout
    step = next(line for line in view.stdout.splitlines() if line.rstrip().endswith("step"))
    # rank 1 records 300 ms, rank 0 100 ms: max / mean = 300 / 200 = 1.5
    assert float(step.split()[1]) == 1.5, view.stdout
    s = subprocess.run([VIEWER, "--stragglers", "-m", "cpu_time", *files], capture_output=True,
                       text=True, timeout=60)
    assert s.returncode == 0, s.stderr
    rows = [line.split() for line in s.stdout.splitlines() if line.rstrip().endswith("step")]
    assert rows and rows[0][3] == "1"  # the max rank of "step"
    log = next(line for line in s.stdout.splitlines() if line.rstrip().endswith("log_rank0"))
    assert log.split()[4] == "1"  # rank 1 never ran it: listed as missing, not as a zero
    merged = tmp_path / "merged.hatchet"
    m = subprocess.run([VIEWER, "merge", "-o", str(merged), *files], capture_output=True,
                       text=True, timeout=60)
    assert m.returncode == 0, m.stderr
    with open(merged) as f:
        root = json.load(f)[0]
    assert root["metrics"]["ranks (exc)"] == 2
    traces = [str(tmp_path / f"job.rank{r}.chrome_trace") for r in (0, 1)]
    t = subprocess.run([VIEWER, "merge", "--output-format", "trace", "-o",
                        str(tmp_path / "all.json"), *traces], capture_output=True, text=True,
                       timeout=60)
    assert t.returncode == 0, t.stderr
    with open(tmp_path / "all.json") as f:
        trace = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "process_name"}
    assert sorted(names) == [1, 2] and names[2].startswith("rank 1")
    assert set(trace["otherData"]["proton_rank_shift_ns"]) == {"0", "1"}


@needs_viewer
def test_bad_rank_files_are_left_out_by_name(tmp_path):
    launch(tmp_path, [{"RANK": str(r), "WORLD_SIZE": "3"} for r in (0, 1)], args=("-n", "job"))
    good = [str(tmp_path / f"job.rank{r}.hatchet") for r in (0, 1)]
    cut = tmp_path / "job.rank2.hatchet"
    cut.write_text(open(good[0]).read()[:60])
    dup = tmp_path / "other.rank1.hatchet"
    shutil.copy(good[1], dup)
    r = subprocess.run([VIEWER, "merge", "-o", str(tmp_path / "m.hatchet"), *good, str(cut),
                        str(dup)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1  # written, but without two of the inputs: a script must notice
    assert "job.rank2.hatchet:" in r.stderr and "left out" in r.stderr
    assert "other.rank1.hatchet: claims rank 1" in r.stderr
    assert "rank 2 of 3 missing" in r.stderr
    assert (tmp_path / "m.hatchet").exists()


GLOO_WORKER = """
import os, time
import torch, torch.distributed as dist
import proton
dist.init_process_group("gloo")
r = dist.get_rank()
t = torch.ones(4)
for _ in range(3):
    with proton.cpu_timed_scope("step"):
        time.sleep(0.01 * (r + 1))
        with proton.cpu_timed_scope("all_reduce"):
            dist.all_reduce(t)
dist.destroy_process_group()
"""


def test_torchrun_gloo_job_writes_one_file_per_rank(tmp_path):
    pytest.importorskip("torch.distributed")
    (tmp_path / "train.py").write_text(textwrap.dedent(GLOO_WORKER))
    env = clean_env({"OMP_NUM_THREADS": "1"})
    # torchrun's own module with this interpreter, so the workers import this proton.
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", "-m", "proton", "-n", "ddp", "train.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    files = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".hatchet")
    assert files == ["ddp.rank0.hatchet", "ddp.rank1.hatchet"]  # and no ddp.hatchet
    for rank in (0, 1):
        with open(tmp_path / f"ddp.rank{rank}.hatchet") as f:
            root = json.load(f)[0]
        assert (root["frame"]["rank"], root["frame"]["world_size"]) == (rank, 2)
        assert root["frame"]["launcher"] == "torchrun"
        step = next(c for c in root["children"] if c["frame"]["name"] == "step")
        assert [c["frame"]["name"] for c in step["children"]] == ["all_reduce"]
