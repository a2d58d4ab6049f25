"""Hook objects, HookManager and start(hook=...), through Triton's own hook chains.

Runs against whichever Triton is installed (3.6 here; `PYTHONPATH=build/triton39` for 3.9,
where kernel_unload_hook exists and destroy_handle is reached).
"""

import pytest

import proton
from proton import _proton
from proton.hooks import Hook, HookManager, LaunchHook

triton = pytest.importorskip("triton")
LazyDict = pytest.importorskip("triton.compiler").LazyDict
rt = triton.knobs.runtime


class Recorder(Hook):
    def __init__(self, log, tag, priority=0):
        self.log, self.tag, self.priority = log, tag, priority

    def init_handle(self, module, function, name, metadata_group, hash):
        self.log.append((self.tag, "init", name))

    def destroy_handle(self, module, function, name, metadata_group, hash):
        self.log.append((self.tag, "destroy", name))

    def enter(self, metadata):
        self.log.append((self.tag, "enter", metadata.data["name"]))

    def exit(self, metadata):
        self.log.append((self.tag, "exit", metadata.data["name"]))

    def activate(self):
        self.log.append((self.tag, "activate"))

    def deactivate(self):
        self.log.append((self.tag, "deactivate"))


def launch(name="k"):
    d = LazyDict({"name": name, "function": 0, "stream": 0})
    rt.launch_enter_hook(d)
    rt.launch_exit_hook(d)


@pytest.fixture(autouse=True)
def clean():
    yield
    proton.finalize()
    assert HookManager.active_hooks == []


def test_hook_instance_is_called_while_its_session_is_active(tmp_path):
    log = []
    h = Recorder(log, "h")
    s = proton.start(str(tmp_path / "p"), hook=h)
    assert log == [("h", "activate")] and HookManager.active_hooks == [h]
    launch("k1")
    rt.kernel_load_end_hook(None, None, "k1", {}, "hash")
    assert log[1:] == [("h", "enter", "k1"), ("h", "exit", "k1"), ("h", "init", "k1")]
    proton.deactivate(s)
    assert log[-1] == ("h", "deactivate")
    n = len(log)
    launch("k2")
    assert len(log) == n  # inactive: not called
    proton.activate(s)
    assert log[-1] == ("h", "activate")
    launch("k3")
    assert log[-1] == ("h", "exit", "k3")
    proton.finalize(s)
    assert log[-1] == ("h", "deactivate")
    assert HookManager.enter not in rt.launch_enter_hook.calls
    n = len(log)
    launch("k4")
    assert len(log) == n


def test_priorities_order_enter_and_reverse_exit(tmp_path):
    log = []
    low, high = Recorder(log, "low", 1), Recorder(log, "high", 5)
    proton.start(str(tmp_path / "a"), hook=low)
    proton.start(str(tmp_path / "b"), hook=high)
    assert HookManager.active_hooks == [high, low]
    del log[:]
    launch()
    assert [e[0] + ":" + e[1] for e in log] == ["high:enter", "low:enter", "low:exit", "high:exit"]


def test_a_hook_shared_by_two_sessions_stays_on_until_both_stop(tmp_path):
    log = []
    h = Recorder(log, "h")
    a = proton.start(str(tmp_path / "a"), hook=h)
    b = proton.start(str(tmp_path / "b"), hook=h)
    assert log.count(("h", "activate")) == 1
    proton.deactivate(a)
    assert ("h", "deactivate") not in log
    proton.finalize(b)
    assert log[-1] == ("h", "deactivate")
    proton.activate(a)
    assert log[-1] == ("h", "activate")


def test_launch_hook_and_a_custom_hook_together(tmp_path):
    log = []
    h = Recorder(log, "h")
    proton.start(str(tmp_path / "a"), hook="triton")
    assert HookManager.active_hooks == [LaunchHook()]
    assert _proton._launch_enter in rt.launch_enter_hook.calls
    assert HookManager.enter not in rt.launch_enter_hook.calls  # LaunchHook alone: no Python
    proton.start(str(tmp_path / "b"), hook=h)
    assert HookManager.active_hooks == [LaunchHook(), h]
    assert HookManager.enter in rt.launch_enter_hook.calls
    launch("k")
    assert ("h", "enter", "k") in log
    proton.finalize()
    assert _proton._launch_enter not in rt.launch_enter_hook.calls
    assert HookManager.enter not in rt.launch_enter_hook.calls


def test_destroy_handle_runs_on_kernel_unload_where_triton_has_it(tmp_path):
    if not hasattr(rt, "kernel_unload_hook"):
        pytest.skip(f"Triton {triton.__version__} has no kernel_unload_hook (3.9+)")
    log = []
    a, b = Recorder(log, "a", 2), Recorder(log, "b", 1)
    proton.start(str(tmp_path / "p"), hook=a)
    proton.start(str(tmp_path / "q"), hook=b)
    del log[:]
    rt.kernel_unload_hook(None, None, "k", {}, "hash")
    assert log == [("b", "destroy", "k"), ("a", "destroy", "k")]  # reverse priority order
    proton.finalize()
    assert HookManager.destroy_handle not in rt.kernel_unload_hook.calls


def test_launch_hook_enter_from_python_sets_the_context_variables(tmp_path):
    from proton.hooks import launch as launch_mod

    proton.start(str(tmp_path / "p"), hook="triton")
    d = LazyDict({"name": "k", "function": 0, "stream": 0})
    d.add(lambda grid, md, args: {"name": "renamed", "bytes": 4}, ((1, 1, 1), None, {}))
    LaunchHook().enter(d)
    assert launch_mod.op_name.get() == "renamed"  # the evaluated name, as triton.profiler
    launch_id = launch_mod.id.get()
    assert isinstance(launch_id, int) and launch_id > 0
    LaunchHook().exit(d)
    assert _proton._pending_launch_op() == 0
    # As triton.profiler's context variables: the last launch's values stay after its exit.
    assert launch_mod.id.get() == launch_id and launch_mod.op_name.get() == "renamed"
