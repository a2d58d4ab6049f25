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


def kernel_count(node, direct=False):
    """Launches of the kernels under `node` (its children only when `direct`)."""
    total = 0
    for c in node.get("children", []):
        m = c.get("metrics", {})
        if "device_id" in m and "time (ns)" in m:
            total += int(m["count"])
        if not direct:
            total += kernel_count(c)
    return total


def test_nvtx_ranges_are_scopes(run_script, tmp_path):
    root, r = run_and_load(run_script, tmp_path, {})
    outer = child(root, "outer_range")
    assert outer is not None, json.dumps(root)[:2000]
    inner = child(outer, "inner_range")
    assert inner is not None
    # The kernels launched inside each range sit under it: 3 adds directly in outer_range, the
    # mul in inner_range.
    assert kernel_count(outer, direct=True) == 3, json.dumps(outer)[:2000]
    assert kernel_count(inner) == 1, json.dumps(inner)[:2000]
    assert kernel_count(outer) == 4
    user = child(root, "user_scope")
    assert user is not None, "the extra pop closed the user's scope"
    assert kernel_count(user) == 1, json.dumps(user)[:2000]
    # emit_nvtx names ranges after aten ops (e.g. "aten::mul, seq = ..."): the x * 3 kernel is
    # under its aten::mul range.
    muls = [c for c in root.get("children", []) if c["frame"]["name"].startswith("aten::mul")]
    assert len(muls) == 1, sorted(names(root))
    assert kernel_count(muls[0]) == 1, json.dumps(muls[0])[:2000]


def test_nvtx_can_be_turned_off(run_script, tmp_path):
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    on, _ = run_and_load(run_script, tmp_path / "on", {})
    root, _ = run_and_load(run_script, tmp_path / "off", {"PROTON_NVTX": "0"})
    assert "outer_range" not in names(root)
    assert not any(n.startswith("aten::") for n in names(root)), sorted(names(root))
    user = child(root, "user_scope")
    assert user is not None and kernel_count(user) == 1
    # Every other kernel of the run is directly under ROOT, and none is lost.
    frames = [c["frame"]["name"] for c in root.get("children", [])
              if "device_id" not in c.get("metrics", {})]
    assert frames == ["user_scope"], frames
    assert kernel_count(root) == kernel_count(on)
    assert kernel_count(root, direct=True) == kernel_count(root) - 1
