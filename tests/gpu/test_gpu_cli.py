"""The proton command on a GPU: kernels of a script, a module and a pytest run; exit codes."""

import json
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


def test_python_context_and_hook_options(tmp_path):
    (tmp_path / "s.py").write_text(SCRIPT)
    r = run(["-n", "prof", "-c", "python", "-k", "triton", "s.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "prof.hatchet") as f:
        text = f.read()
    assert "s.py:" in text  # Python frames of the script
