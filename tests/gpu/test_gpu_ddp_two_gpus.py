"""DDP over NCCL on two GPUs under `torchrun --nproc-per-node 2 -m proton`: one file per
rank with its own rank block, NCCL kernels in each, under the backward pass that issued them.
Skipped unless two GPUs are present. The full run with timings is scripts/ddp-two-gpus.
"""

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
if torch.cuda.device_count() < 2:
    pytest.skip("needs two CUDA GPUs", allow_module_level=True)

from conftest import NO_MULTICAST  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_ddp_nccl_two_ranks(tmp_path):
    out = tmp_path / "ddp"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ddp_two_gpus.py"), "--out",
                        str(out), "--steps", "12",
                        "--modes", "base,proton,trace", "--rounds", "1"], capture_output=True, text=True, timeout=1800,
                       env=dict(os.environ, **NO_MULTICAST))
    print(r.stdout[-6000:])
    assert r.returncode == 0, r.stderr[-4000:]
    with open(out / "summary.json") as f:
        s = json.load(f)
    assert not s["ddp_hatchet_exists"]  # no shared file: each rank wrote its own
    devices = set()
    for rank in ("0", "1"):
        info = s["ranks"][rank]
        block = info["rank_block"]
        assert (block["rank"], block["world_size"]) == (int(rank), 2)
        assert block["host"] and block["device"] != ""
        devices.add(block["device"])
        assert info["nccl_by_kind"].get("AllReduce", 0) > 0, info
        # DDP's bucket hooks run in backward: the AllReduce kernels sit under step > backward.
        assert any("backward" in p for p in info["nccl_call_paths"]), info["nccl_call_paths"]
        # NCCL names its NVTX ranges with registered strings: they read as NCCL's API names.
        assert not any("<nvtx registered string>" in p for p in info["nccl_call_paths"]), \
            info["nccl_call_paths"]
    assert devices == {"0", "1"}
    assert s["merged_trace"]["processes"][0].startswith("rank 0")
    assert len(s["merged_trace"]["processes"]) == 2
