"""Two ranks sharing one GPU under torchrun (gloo for the collective): each rank's kernels land
in its own file under its own call path, and the merged views add them up correctly.

    python -m pytest tests/gpu/test_gpu_ranks.py -v
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

VIEWER = os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")

STEPS = 6
# Rank r launches (r + 1) x 5 adds per step in "compute", inside its own "rank{r}_only" scope; the
# all_reduce runs over gloo on a CPU tensor.
TRAIN = f"""
import torch, torch.distributed as dist
import proton
dist.init_process_group("gloo")
r = dist.get_rank()
torch.cuda.set_device(0)                      # both ranks share GPU 0
x = torch.ones(1 << 20, device="cuda")
t = torch.ones(8)
for _ in range({STEPS}):
    with proton.scope("step"):
        with proton.scope("compute"):
            with proton.scope(f"rank{{r}}_only"):
                for _ in range((r + 1) * 5):
                    x.add_(1)
        torch.cuda.synchronize()
        with proton.scope("all_reduce"):
            dist.all_reduce(t)
dist.destroy_process_group()
"""


def kernels_under(node):
    own = node["metrics"].get("count", 0) if "device_id" in node.get("metrics", {}) else 0
    return own + sum(kernels_under(c) for c in node.get("children", []))


def child(node, name):
    found = [c for c in node.get("children", []) if c["frame"]["name"] == name]
    assert found, f"no {name!r} under {node['frame']['name']!r}"
    return found[0]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    d = tmp_path_factory.mktemp("ranks")
    (d / "train.py").write_text(textwrap.dedent(TRAIN))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", "-m", "proton", "-n", "shared", "-d",
                        "tree,trace", "train.py"], cwd=d, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return d


def test_each_rank_has_its_own_file_with_its_own_kernels(job):
    assert not (job / "shared.hatchet").exists()
    for rank in (0, 1):
        with open(job / f"shared.rank{rank}.hatchet") as f:
            root = json.load(f)[0]
        frame = root["frame"]
        assert (frame["rank"], frame["world_size"], frame["launcher"]) == (rank, 2, "torchrun")
        assert frame["device"] == "0" and frame["host"]
        step = child(root, "step")
        compute = child(step, "compute")
        names = [c["frame"]["name"] for c in compute["children"]]
        assert names == [f"rank{rank}_only"], names  # the other rank's scope is not here
        assert kernels_under(compute) == STEPS * (rank + 1) * 5
        # Nothing of the other rank anywhere in this file.
        text = json.dumps(root)
        assert f"rank{1 - rank}_only" not in text


@pytest.mark.skipif(VIEWER is None, reason="proton-viewer not built (set PROTON_VIEWER)")
def test_merged_view_adds_both_ranks(job):
    files = [str(job / f"shared.rank{r}.hatchet") for r in (0, 1)]
    view = subprocess.run([VIEWER, "--no-color", "-m", "count", *files], capture_output=True,
                          text=True, timeout=120)
    assert view.returncode == 0, view.stderr
    print(view.stdout)
    compute = next(line for line in view.stdout.splitlines() if line.rstrip().endswith("compute"))
    count, imbalance = compute.split()[:2]
    assert int(count) == STEPS * 15  # 5 + 10 per step
    assert abs(float(imbalance) - 10 / 7.5) < 0.01
    s = subprocess.run([VIEWER, "--stragglers", "-m", "time", *files], capture_output=True,
                       text=True, timeout=120)
    assert s.returncode == 0, s.stderr
    print(s.stdout)
    only = [line for line in s.stdout.splitlines() if "_only" in line]
    assert any("rank1_only" in line and line.split()[4] == "0" for line in only), s.stdout
    merged = job / "merged.json"
    t = subprocess.run([VIEWER, "merge", "--output-format", "trace", "-o", str(merged),
                        *[str(job / f"shared.rank{r}.chrome_trace") for r in (0, 1)]],
                       capture_output=True, text=True, timeout=120)
    assert t.returncode == 0, t.stderr
    print(t.stdout)
    with open(merged) as f:
        trace = json.load(f)
    kernels = {1: 0, 2: 0}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            kernels[e["pid"]] += 1
    # Rank 1 ran 5 more adds per step; every other kernel (the ones() fill) both ran alike.
    assert kernels[1] > 0 and kernels[2] - kernels[1] == STEPS * 5, kernels
