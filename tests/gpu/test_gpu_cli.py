"""The proton command on a GPU: kernels of a script, a module and a pytest run; exit codes."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

SCRIPT = """
import sys, torch, proton
x = torch.ones(1024, device="cuda")
proton.start("ignored_by_the_command")
with proton.scope("script_scope"):
    for _ in range(7):
        x.add_(1)
torch.cuda.synchronize()
proton.finalize()
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def run(args, cwd):
    return subprocess.run([sys.executable, "-m", "proton", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def kernel_count(path, scope):
    with open(path) as f:
        root = json.load(f)[0]
    node = next(c for c in root["children"] if c["frame"]["name"] == scope)

    def count(n):
        own = n["metrics"].get("count", 0) if "device_id" in n.get("metrics", {}) else 0
        return own + sum(count(c) for c in n.get("children", []))

    return count(node)


@pytest.mark.parametrize("status", [0, 3])
def test_script(tmp_path, status):
    (tmp_path / "s.py").write_text(SCRIPT)
    r = run(["-n", "prof", "s.py", str(status)], tmp_path)
    assert r.returncode == status, r.stderr
    assert kernel_count(tmp_path / "prof.hatchet", "script_scope") == 7
    assert not (tmp_path / "ignored_by_the_command.hatchet").exists()


def test_module(tmp_path):
    (tmp_path / "gpumod.py").write_text(SCRIPT)
    r = run(["-n", "prof", "--module", "gpumod", "5"], tmp_path)
    assert r.returncode == 5, r.stderr
    assert kernel_count(tmp_path / "prof.hatchet", "script_scope") == 7


def test_script_that_raises_keeps_its_kernels(tmp_path):
    (tmp_path / "s.py").write_text(SCRIPT.replace("sys.exit(", "raise RuntimeError(") )
    r = run(["-n", "prof", "s.py"], tmp_path)
    assert r.returncode == 1
    assert kernel_count(tmp_path / "prof.hatchet", "script_scope") == 7


def test_pytest(tmp_path):
    (tmp_path / "test_k.py").write_text(textwrap.dedent("""
        import torch, proton
        def test_k():
            x = torch.ones(64, device="cuda")
            with proton.scope("in_test"):
                x.mul_(2)
            torch.cuda.synchronize()
    """))
    r = run(["-n", "prof", "pytest", "-q", "-p", "no:cacheprovider", "test_k.py"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert kernel_count(tmp_path / "prof.hatchet", "in_test") == 1


def kernels_under(node, path=()):
    """(frames above, kernel node) for every kernel below `node`."""
    out = []
    for c in node.get("children", []):
        if "device_id" in c.get("metrics", {}):
            out.append((list(path), c))
        out.extend(kernels_under(c, (*path, c["frame"]["name"])))
    return out


def load_root(path):
    with open(path) as f:
        return json.load(f)[0]


def test_python_context_option(tmp_path):
    (tmp_path / "s.py").write_text(SCRIPT)
    r = run(["-n", "prof", "-c", "python", "s.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    # The seven adds sit under the script's own frame, the line that launched them; user scopes
    # are not frames in a python-context session.
    line = SCRIPT.splitlines().index("        x.add_(1)") + 1
    found = kernels_under(load_root(tmp_path / "prof.hatchet"))
    adds = [(p, k) for p, k in found if p and p[-1].endswith(f"s.py:{line}@<module>")]
    assert len(adds) == 1 and adds[0][1]["metrics"]["count"] == 7, found
    assert all(re.fullmatch(r".+:\d+@.+", f) for f in adds[0][0]), adds[0][0]
    assert not any("script_scope" in p for p, _ in found), found


NVTX_SCRIPT = """
import torch
x = torch.ones(1024, device="cuda")
torch.cuda.nvtx.range_push("nvtx_range")
for _ in range(4):
    x.add_(1)
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
"""


def test_no_nvtx_option(tmp_path):
    (tmp_path / "s.py").write_text(NVTX_SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PROTON_NVTX", "NVTX_INJECTION64_PATH", "TRITON_ENABLE_NVTX")}
    for flags, name in (([], "on"), (["--no-nvtx"], "off")):
        r = subprocess.run([sys.executable, "-m", "proton", "-n", name, *flags, "s.py"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    on = kernels_under(load_root(tmp_path / "on.hatchet"))
    off = kernels_under(load_root(tmp_path / "off.hatchet"))
    # On: the four adds under the range (torch.ones before it, directly under ROOT).
    assert [k["metrics"]["count"] for p, k in on if p == ["nvtx_range"]] == [4], on
    assert all(p in ([], ["nvtx_range"]) for p, _ in on), on
    # Off: no range frame, every kernel directly under ROOT, none lost.
    assert all(p == [] for p, _ in off), off
    total = sum(k["metrics"]["count"] for _, k in on)
    assert sum(k["metrics"]["count"] for _, k in off) == total, (on, off)


HOOK_SCRIPT = """
import torch, triton, triton.language as tl

@triton.jit(launch_metadata=lambda grid, metadata, args: {"name": "renamed_by_metadata",
                                                          "flops": 1000})
def plain_name(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)

x = torch.zeros(128, device="cuda")
for _ in range(3):
    plain_name[(1,)](x, BLOCK=128)
torch.cuda.synchronize()
"""


def test_triton_hook_option(tmp_path):
    pytest.importorskip("triton")
    (tmp_path / "s.py").write_text(HOOK_SCRIPT)
    for flags, name in ((["-k", "triton"], "hooked"), ([], "plain")):
        r = run(["-n", name, *flags, "s.py"], tmp_path)
        assert r.returncode == 0, r.stderr
    hooked = {k["frame"]["name"]: k["metrics"] for _, k in
              kernels_under(load_root(tmp_path / "hooked.hatchet"))}
    plain = {k["frame"]["name"]: k["metrics"] for _, k in
             kernels_under(load_root(tmp_path / "plain.hatchet"))}
    # With the hook, launch_metadata renamed the kernel and added its flops (per launch).
    assert "renamed_by_metadata" in hooked and "plain_name" not in hooked, hooked
    assert hooked["renamed_by_metadata"]["count"] == 3
    assert hooked["renamed_by_metadata"]["flops"] == 3000
    assert "plain_name" in plain and "renamed_by_metadata" not in plain, plain
    assert plain["plain_name"]["count"] == 3 and "flops" not in plain["plain_name"]
