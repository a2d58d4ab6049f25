"""Behaviours of the newest triton.profiler that need a GPU: Triton's activity-buffer knob,
per-phase chrome traces under periodic flushing, proton.hooks.launch.id on every launch."""

import json
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)


BUFFER_SIZE_SCRIPT = """
import json, sys
import torch
import proton
x = torch.ones(16, device="cuda")
torch.cuda.synchronize()
proton.start(sys.argv[1])
for _ in range(100):
    x + x
torch.cuda.synchronize()
stats = proton._proton._buffer_stats()
proton.finalize()
print(json.dumps(stats))
"""


def test_tritons_profile_buffer_size_sizes_cuptis_activity_buffers(run_script, tmp_path, read_profile):
    # A fresh process: the backend sizes its buffers when the first session starts.
    env = {k: v for k, v in os.environ.items() if k != "PROTON_BUFFER_SIZE"}
    env["TRITON_PROFILE_BUFFER_SIZE"] = str(4 << 20)
    out = tmp_path / "buf"
    r = run_script(BUFFER_SIZE_SCRIPT, out, env=env)
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout.strip().splitlines()[-1])
    assert stats["buffer_bytes"] == 4 << 20, stats
    assert stats["allocated"] >= 1, stats
    prof = read_profile(str(out))
    assert prof.count(prof.root) == 100, prof.render()
