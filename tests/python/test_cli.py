"""The `proton` command on a CPU machine: sessions, exit codes, targets (script, module, pytest).

Without a GPU a session still records CPU-side scopes and metrics and writes its .hatchet file,
so everything but kernel attribution can be checked here; tests/gpu/test_gpu_cli.py checks
kernels.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

# A script that marks the profile with a scope metric, so the test can tell whose file it is.
MARK = """
import proton
with proton.scope("marked", metrics={"mark": 1}):
    pass
"""


def run(args, cwd, env=None, timeout=120):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "proton", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def write(path, code):
    path.write_text(textwrap.dedent(code))
    return path


def frames(path):
    with open(path) as f:
        root = json.load(f)[0]
    names = []

    def walk(node):
        names.append(node["frame"]["name"])
        for c in node.get("children", []):
            walk(c)

    walk(root)
    return names


def test_script_runs_under_a_session_and_writes_the_profile(tmp_path):
    write(tmp_path / "s.py", MARK + "import sys\nprint('argv', sys.argv[1:])\n")
    r = run(["-n", "out", "s.py", "a", "--flag"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "argv ['a', '--flag']" in r.stdout
    assert "marked" in frames(tmp_path / "out.hatchet")


def test_start_and_finalize_inside_the_script_are_ignored(tmp_path):
    write(tmp_path / "s.py", """
        import proton
        sid = proton.start("inner", context="python")
        assert sid is None
        with proton.scope("marked", metrics={"mark": 1}):
            pass
        proton.finalize()
        with proton.scope("after_finalize", metrics={"mark": 1}):
            pass
    """)
    r = run(["-n", "outer", "s.py"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "inner.hatchet").exists()
    names = frames(tmp_path / "outer.hatchet")
    assert "marked" in names and "after_finalize" in names


def test_script_that_raises_exits_1_and_keeps_the_profile(tmp_path):
    write(tmp_path / "s.py", MARK + "raise ValueError('boom')\n")
    r = run(["-n", "out", "s.py"], cwd=tmp_path)
    assert r.returncode == 1
    assert "ValueError: boom" in r.stderr
    assert "marked" in frames(tmp_path / "out.hatchet")


@pytest.mark.parametrize("code, status, stderr", [
    ("sys.exit(3)", 3, ""),
    ("sys.exit(0)", 0, ""),
    ("sys.exit()", 0, ""),
    ("sys.exit('bad input')", 1, "bad input"),
])
def test_sys_exit_status_is_the_command_status(tmp_path, code, status, stderr):
    write(tmp_path / "s.py", MARK + f"import sys\n{code}\n")
    r = run(["-n", "out", "s.py"], cwd=tmp_path)
    assert r.returncode == status, r.stderr
    assert stderr in r.stderr
    assert "marked" in frames(tmp_path / "out.hatchet")


def test_script_sees_itself_as_main_with_its_folder_on_sys_path(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    write(sub / "helper.py", "VALUE = 42\n")
    write(sub / "s.py", """
        import helper, sys
        assert __name__ == "__main__"
        assert __file__.endswith("s.py")
        sys.exit(helper.VALUE)
    """)
    r = run(["-n", "out", "sub/s.py"], cwd=tmp_path)
    assert r.returncode == 42, r.stderr


@pytest.mark.parametrize("how", ["--module", "bare"])
def test_module_target(tmp_path, how):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    write(pkg / "__init__.py", "")
    write(pkg / "tool.py", MARK + textwrap.dedent("""
        import sys
        assert __name__ == "__main__"
        sys.exit(int(sys.argv[1]))
    """))
    target = ["--module", "mypkg.tool"] if how == "--module" else ["mypkg.tool"]
    r = run(["-n", "out", *target, "5"], cwd=tmp_path)
    assert r.returncode == 5, r.stderr
    assert "marked" in frames(tmp_path / "out.hatchet")


def test_pytest_target_profiles_the_tests_and_returns_pytest_status(tmp_path):
    write(tmp_path / "test_tiny.py", """
        import proton

        def test_ok():
            with proton.scope("in_test", metrics={"mark": 1}):
                pass
            proton.finalize()  # ignored: the command owns the session
    """)
    r = run(["-n", "out", "pytest", "-q", "-p", "no:cacheprovider", "test_tiny.py"],
            cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout
    assert "in_test" in frames(tmp_path / "out.hatchet")

    write(tmp_path / "test_fail.py", "def test_fail():\n    assert False\n")
    r = run(["-n", "out2", "pytest", "-q", "-p", "no:cacheprovider", "test_fail.py"],
            cwd=tmp_path)
    assert r.returncode == 1
    assert (tmp_path / "out2.hatchet").exists()


# Runs the command with the engine's start() observed: what each session was started with, and
# PROTON_NVTX as the backend reads it then (at backend start).
SPY = """
import json, os, sys
from proton import _proton, cli

seen = []
real_start = _proton.start


def spy(name, context, data, backend, mode, **kw):
    seen.append({"name": name, "context": context, "data": data, "backend": backend,
                 "mode": mode, "PROTON_NVTX": os.environ.get("PROTON_NVTX")})
    return real_start(name, context, data, backend, mode, **kw)


_proton.start = spy
status = cli.main(sys.argv[1:])
print("STARTS=" + json.dumps(seen))
sys.exit(status)
"""


def run_spied(args, cwd, env=None):
    write(cwd / "spy_driver.py", SPY)
    full_env = {k: v for k, v in os.environ.items() if k != "PROTON_NVTX"}
    full_env.update(env or {})
    r = subprocess.run([sys.executable, str(cwd / "spy_driver.py"), *args], cwd=cwd,
                       env=full_env, capture_output=True, text=True, timeout=120)
    line = next((x for x in r.stdout.splitlines() if x.startswith("STARTS=")), "STARTS=[]")
    return r, json.loads(line[len("STARTS="):])


@pytest.mark.parametrize("flags, context, nvtx", [
    ([], "shadow", None),
    (["-c", "python"], "python", None),
    (["--context", "python", "--no-nvtx"], "python", "0"),
    (["--no-nvtx"], "shadow", "0"),
])
def test_context_and_nvtx_options_reach_the_session(tmp_path, flags, context, nvtx):
    # The option is in effect when the engine starts the session (NVTX is read then), and the
    # target sees the same.
    write(tmp_path / "s.py",
          MARK + "import os\nprint('target nvtx', os.environ.get('PROTON_NVTX'))\n")
    r, starts = run_spied(["-n", "out", "-d", "tree", *flags, "s.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    got = [(s["context"], s["data"], s["PROTON_NVTX"]) for s in starts]
    assert got == [(context, "tree", nvtx)], r.stderr
    assert f"target nvtx {nvtx}" in r.stdout
    names = frames(tmp_path / "out.hatchet")
    if context == "python":
        # The scope sits at the Python path of its entry in the target, with no frame of its
        # own name (as triton.profiler places it).
        assert "marked" not in names and any(n.endswith("@<module>") for n in names), names
    else:
        assert "marked" in names


def test_triton_hook_option_registers_the_launch_hook(tmp_path):
    pytest.importorskip("triton")
    check = """
        import triton
        from proton.hooks import HookManager
        print("hooks", sorted(type(h).__name__ for h in HookManager.active_hooks))
        print("enter hook set", triton.knobs.runtime.launch_enter_hook is not None)
    """
    write(tmp_path / "s.py", check)
    r = run(["-n", "out", "-k", "triton", "s.py"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "hooks ['LaunchHook']" in r.stdout
    assert "enter hook set True" in r.stdout
    r = run(["-n", "out2", "s.py"], cwd=tmp_path)  # without -k: no hook
    assert r.returncode == 0, r.stderr
    assert "hooks []" in r.stdout


def test_module_gets_every_argument_after_its_name(tmp_path):
    # As `python -m NAME ARGS`: options after NAME, --help included, are the module's.
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    write(pkg / "__init__.py", "")
    write(pkg / "tool.py", MARK + "import sys\nprint('argv', sys.argv[1:])\n")
    for target in (["--module", "mypkg.tool"], ["--module=mypkg.tool"]):
        for f in tmp_path.glob("*.hatchet"):
            f.unlink()
        r = run(["-n", "out", *target, "--sort-keys", "--help", "-n", "mine", "x.py"],
                cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "argv ['--sort-keys', '--help', '-n', 'mine', 'x.py']" in r.stdout, r.stdout
        assert "usage: proton" not in r.stdout + r.stderr
        assert "marked" in frames(tmp_path / "out.hatchet")
        assert not (tmp_path / "mine.hatchet").exists()


@pytest.mark.parametrize("args", [["--module"], ["--module="]])
def test_module_option_needs_a_name(tmp_path, args):
    r = run(["-n", "out", *args], cwd=tmp_path)
    assert r.returncode == 2 and "--module needs a module name" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_pytest_target_without_pytest_is_a_usage_error_and_writes_nothing(tmp_path):
    # This Python, with pytest made unimportable.
    code = ("import sys; sys.modules['pytest'] = None\n"
            "from proton.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    r = subprocess.run([sys.executable, "-c", code, "-n", "out", "pytest", "-q"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "pytest is not installed" in r.stderr and "pip install pytest" in r.stderr
    assert "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_options_and_missing_target_are_usage_errors(tmp_path):
    r = run(["-c", "nonsense", "s.py"], cwd=tmp_path)
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = run(["missing_script.py"], cwd=tmp_path)
    assert r.returncode == 2 and "no such script" in r.stderr
    r = run([], cwd=tmp_path)
    assert r.returncode == 2 and "nothing to run" in r.stderr
    r = run(["-d", "nonsense", "-n", "x", "missing_but_checked_later.py"], cwd=tmp_path)
    assert r.returncode == 2


@pytest.mark.parametrize("flags, says", [
    (["-b", "bogus"], "unknown backend 'bogus'"),
    (["-n", ""], "names no file"),
    (["-d", "nonsense"], "unknown data 'nonsense'"),
])
def test_values_start_refuses_are_usage_errors_that_write_nothing(tmp_path, flags, says):
    write(tmp_path / "s.py", MARK)
    r = run([*flags, "s.py"], cwd=tmp_path)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.py"]


def test_help_documents_every_option(tmp_path):
    r = run(["-h"], cwd=tmp_path)
    assert r.returncode == 0
    for opt in ["--name", "--backend", "--context", "--data", "--hook", "--mode", "--module",
                "--no-nvtx", "pytest", "PROTON_NVTX", "sys.exit"]:
        assert opt in r.stdout, opt


def test_console_script_is_installed():
    exe = shutil.which("proton")
    if exe is None:
        pytest.skip("the proton console script is not on PATH (package not pip-installed)")
    r = subprocess.run([exe, "-h"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--context" in r.stdout
