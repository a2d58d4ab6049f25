"""Do kernels whose module was loaded before PC sampling started get PC records?

A full bench run gave every sample as CUPTI's "non-user kernel" total (no PC records, no cubin
seen) when the workloads had run once before the first PC-sampling session; the GPU tests,
whose kernels load after start, resolve lines. This probe runs, in fresh processes, one Triton
kernel loaded (a) after start, (b) before start, and prints what the sampler saw.

    python bench/pc_load_order_probe.py
"""

import pathlib
import subprocess
import sys
import tempfile

CHILD = r'''
import json, sys, tempfile, os
import torch, triton, triton.language as tl
import proton
from proton import _proton

@triton.jit
def spin(o, N: tl.constexpr):
    acc = tl.program_id(0).to(tl.float32)
    for i in range(N):
        acc = acc * 1.0001 + 0.5
    tl.store(o + tl.program_id(0), acc)

o = torch.empty(132 * 8, device="cuda")
before = sys.argv[1] == "before"
if before:
    spin[(132 * 8,)](o, N=20000)
    torch.cuda.synchronize()
name = os.path.join(tempfile.mkdtemp(), "p")
proton.start(name, mode="pcsampling")
for _ in range(20):
    spin[(132 * 8,)](o, N=20000)
torch.cuda.synchronize()
proton.finalize()
st = _proton._pc_sampling_stats()
root = json.load(open(name + ".hatchet"))[0]
total, stack = 0, [root]
while stack:
    n = stack.pop()
    total += int(n.get("metrics", {}).get("num_samples", 0))
    stack.extend(n.get("children", []))
print(json.dumps({"loaded": sys.argv[1], "profile_samples": total,
                  **{k: st.get(k) for k in ("samples", "pc_records", "non_user", "binaries")}}))
'''

# Triton's @jit needs its kernel in a file: the child is written to one.
child = pathlib.Path(tempfile.mkdtemp()) / "pc_load_order_child.py"
child.write_text(CHILD)
for order in ("after", "before"):
    r = subprocess.run([sys.executable, str(child), order], capture_output=True, text=True,
                       timeout=180)
    print(r.stdout.strip().splitlines()[-1] if r.returncode == 0 else f"{order}: {r.stderr[-800:]}")
