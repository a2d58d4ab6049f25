"""NVTX push/pop ranges become scopes (on by default; PROTON_NVTX=0 turns them off).

Each test runs in a fresh interpreter: NVTX binds its tool at a module's first NVTX call, so
the session must start before the first range (see src/backends/cupti/nvtx_callbacks.h).
"""

import json
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

CODE = """
import json, sys, torch, proton
x = torch.ones(1024, device="cuda")
x.add_(1); torch.cuda.synchronize()
proton.start(sys.argv[1])
torch.cuda.nvtx.range_push("outer_range")
for _ in range(3):
    x.add_(1)
torch.cuda.nvtx.range_push("inner_range")
x.mul_(2)
torch.cuda.nvtx.range_pop()
torch.cuda.nvtx.range_pop()
with proton.scope("user_scope"):
    torch.cuda.nvtx.range_pop()   # an extra pop must not close the user's scope
    x.add_(1)
with torch.autograd.profiler.emit_nvtx():
    (x * 3).sum()
torch.cuda.synchronize()
proton.finalize()
"""


def names(node, out=None):
    out = set() if out is None else out
    out.add(node["frame"]["name"])
    for c in node.get("children", []):
        names(c, out)
    return out


def run_and_load(run_script, tmp_path, env_extra):
    env = dict(os.environ)
    env.pop("NVTX_INJECTION64_PATH", None)
    env.update(env_extra)
    out = tmp_path / "nvtx"
    r = run_script(CODE, out, env=env)
    assert r.returncode == 0, r.stderr
    with open(str(out) + ".hatchet") as f:
        return json.load(f)[0], r


def child(node, name):
    return next((c for c in node.get("children", []) if c["frame"]["name"] == name), None)


def test_nvtx_ranges_are_scopes(run_script, tmp_path):
    root, r = run_and_load(run_script, tmp_path, {})
    outer = child(root, "outer_range")
    assert outer is not None, json.dumps(root)[:2000]
    inner = child(outer, "inner_range")
    assert inner is not None
    user = child(root, "user_scope")
    assert user is not None, "the extra pop closed the user's scope"
    # emit_nvtx names ranges after aten ops (e.g. "aten::mul, seq = ...").
    assert any(n.startswith("aten::") for n in names(root)), sorted(names(root))


def test_nvtx_can_be_turned_off(run_script, tmp_path):
    root, _ = run_and_load(run_script, tmp_path, {"PROTON_NVTX": "0"})
    assert "outer_range" not in names(root)
    assert child(root, "user_scope") is not None
