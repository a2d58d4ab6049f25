"""context="python" on a CPU: the frame walker against inspect.stack().

_proton._python_context_path() returns the path a kernel launched at that point would be
attributed to (outermost first); the _nogil variant walks with the GIL released, as the launch
callback does for PyTorch and Triton launches (both release the GIL around the driver call).
"""

import inspect
import json
import re
import sys
import threading

import pytest

import proton
from proton import _proton

pytestmark = pytest.mark.skipif(not _proton._python_frames_supported(),
                                reason=f"no frame walker for Python {sys.version_info[:2]}")

FRAME = re.compile(r".+:\d+@.+")


def expected(stack):
    return [f"{f.filename}:{f.lineno}@{f.function}" for f in reversed(stack)]


def paths_here():
    """Both walks and inspect's view, taken on one line so the innermost line agrees."""
    a, b, s = _proton._python_context_path(), _proton._python_context_path_nogil(), inspect.stack(0)
    return a, b, expected(s)


def recurse(n, fn):
    if n:
        return recurse(n - 1, fn)
    return fn()


@pytest.mark.parametrize("depth", [0, 5, 40])
def test_path_matches_inspect_with_and_without_the_gil(depth):
    with_gil, without_gil, want = recurse(depth, paths_here)
    assert with_gil == want
    assert without_gil == want
    assert all(FRAME.fullmatch(f) for f in want)


def test_repeated_and_changing_call_sites_resolve_exactly():
    # The walker reuses the common prefix of consecutive walks: alternate two sites and depths.
    for _ in range(3):
        a1, b1, w1 = recurse(3, paths_here)
        a2, b2, w2 = paths_here()
        a3, b3, w3 = recurse(1, paths_here)
        assert (a1, b1, a2, b2, a3, b3) == (w1, w1, w2, w2, w3, w3)


def test_threads_walk_their_own_frames():
    results = {}

    def worker(i):
        results[i] = recurse(i, paths_here)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        a, b, want = results[i]
        assert a == want and b == want
        assert any("threading.py" in f for f in want)


def test_generators_and_coroutines():
    def gen():
        yield paths_here()

    assert len(set(map(tuple, next(gen())))) == 1

    async def coro():
        return paths_here()

    c = coro()
    try:
        c.send(None)
    except StopIteration as stop:
        a, b, want = stop.value
    assert a == want and b == want


def test_non_ascii_names():
    ns = {"paths_here": paths_here}
    exec(compile("def función_ñ():\n    return paths_here()\n", "módulo_π.py", "exec"), ns)
    a, b, want = ns["función_ñ"]()
    assert a == want and b == want
    assert a[-2] == "módulo_π.py:2@función_ñ"


def test_regenerated_code_objects_do_not_reuse_stale_names():
    # New code objects at possibly reused addresses, called from the same site each time.
    for i in range(50):
        ns = {"paths_here": paths_here}
        src = "\n" * i + "def g():\n    return paths_here()\n"
        exec(compile(src, "generated.py", "exec"), ns)
        a, b, want = ns["g"]()
        assert a == want and b == want, i
        assert a[-2] == f"generated.py:{i + 2}@g"


def test_deep_stacks_keep_their_innermost_frames():
    a, b, want = recurse(700, paths_here)
    assert a == b
    assert a[0] == "<older frames>"
    assert len(a) == 513
    assert a[1:] == want[-512:]


def test_state_is_the_last_frame():
    with proton.state("decode"):
        a, b, want = paths_here()
    assert a == want + ["decode"] and b == a


def test_python_session_writes_hatchet_on_cpu(tmp_path):
    name = str(tmp_path / "py")
    session = proton.start(name, context="python")
    with proton.scope("s", metrics={"x": 1}):
        pass
    proton.finalize(session)
    with open(name + ".hatchet") as f:
        data = json.load(f)
    assert data[0]["frame"]["name"] == "ROOT"


def test_steady_call_site_resolves_no_frame():
    # What keeps the per-launch walk cheap (docs/python-context.md; its cost is measured in
    # bench/, not asserted here): walks from an unchanged stack reuse every frame of the last.
    def steady():
        before = 0
        for calls in (1, 1000):  # one call line: the first pass resolves, the second must not
            if calls > 1:
                before = _proton._python_context_resolved_frames()
            _proton._python_context_cost_ns(calls)
        return _proton._python_context_resolved_frames() - before

    assert recurse(18, steady) == 0
    # Another call from this test resolves the frames from this function down (this frame,
    # 19 recurse frames, the lambda), not the pytest frames above it.
    first = _proton._python_context_resolved_frames()
    recurse(18, lambda: _proton._python_context_cost_ns(1))
    changed = _proton._python_context_resolved_frames() - first
    assert len(inspect.stack()) > 10  # pytest's frames sit above: reusing them is the point
    assert 0 < changed <= 21, changed


def metric_paths(root, metric):
    """(path of frame names from ROOT's child down, node) for each node that has `metric`."""
    out = []

    def walk(node, path):
        for c in node.get("children", []):
            p = path + [c["frame"]["name"]]
            if metric in c.get("metrics", {}):
                out.append((p, c))
            walk(c, p)

    walk(root, [])
    return out


PROTON_DIR = proton.__file__.rsplit("/", 1)[0] + "/"


def test_scopes_sit_at_the_python_path_of_their_entry(tmp_path):
    # triton.profiler (TreeData::enterScope with the Python context source) places a scope at
    # the Python frames of its entry, the state last, without the scope's own name; its metrics
    # go there, whenever they are added (cpu_time at exit). Kernels under it keep their own path.
    name = str(tmp_path / "py")
    session = proton.start(name, context="python")

    def body():
        here = expected(inspect.stack(0))[:-1]  # this function's caller frames
        with proton.cpu_timed_scope("timed"):
            entered = proton.enter_scope("manual", metrics={"m": 1})
            proton.exit_scope("manual", metrics={"m": 2})
        with proton.state("st"):
            with proton.scope("in_state", metrics={"x": 1}):
                pass
        return here, entered

    here, _ = body()
    proton.finalize(session)
    with open(name + ".hatchet") as f:
        root = json.load(f)[0]
    names = [c["frame"]["name"] for c in root["children"]]
    assert not {"timed", "manual", "in_state", "st"} & set(names), names
    line = body.__code__.co_firstlineno

    def check(metric, body_line, want_state=None):
        (path, node), = metric_paths(root, metric)
        n = len(here)
        assert path[:n] == here, path
        assert path[n] == f"{__file__}:{line + body_line}@body", path
        rest = path[n + 1:]
        if want_state is not None:
            assert rest[-1] == want_state, path
            rest = rest[:-1]
        # Below the user's line: only proton's own scope functions (triton.profiler's are there
        # in its profiles), the innermost the one that entered the scope.
        assert rest and all(f.startswith(PROTON_DIR) for f in rest), path
        assert FRAME.fullmatch(rest[-1])
        return node

    assert check("cpu_time (ns)", 2)["metrics"]["cpu_calls"] == 1
    assert check("m", 3)["metrics"]["m"] == 3  # entry and exit metrics on one node
    assert check("x", 6, want_state="st")["metrics"]["x"] == 1


def test_scope_entered_before_a_python_session_started(tmp_path):
    # No Python site was recorded at entry: its metrics go to the path they are added from.
    name = str(tmp_path / "py")
    proton.enter_scope("early")
    session = proton.start(name, context="python")
    proton.exit_scope("early", metrics={"late": 5})
    proton.finalize(session)
    with open(name + ".hatchet") as f:
        root = json.load(f)[0]
    (path, node), = metric_paths(root, "late")
    assert node["metrics"]["late"] == 5
    assert "early" not in path
    assert any(f.endswith("@test_scope_entered_before_a_python_session_started") for f in path)


def test_device_tensor_scope_metrics_reach_the_python_site(tmp_path, monkeypatch):
    # Tensor metrics read back later (proton.metric, CPU tensors standing in for device ones)
    # land where the scope's plain metrics do in a python session: its entry path.
    torch = pytest.importorskip("torch")
    from proton import metric
    monkeypatch.setattr(metric, "_HOST_DEVICES", ())
    for table in ("_slabs", "_slots", "_next", "_folded", "_launch_slots"):
        monkeypatch.setattr(metric, table, {})
    name = str(tmp_path / "py")
    session = proton.start(name, context="python")

    def step():
        with proton.scope("step", {"loss": torch.tensor(0.25), "n": 1}):
            pass

    for _ in range(4):
        step()
    proton.finalize(session)
    with open(name + ".hatchet") as f:
        root = json.load(f)[0]
    assert "step" not in [c["frame"]["name"] for c in root["children"]]
    (path, node), = metric_paths(root, "loss")
    assert node["metrics"] == {"loss": 1.0, "n": 4}, node
    assert any(f.endswith("@step") for f in path), path


def test_depth_of_a_python_session_counts_python_frames(tmp_path):
    # triton.profiler's PythonContextSource::getDepth: the Python frames of the calling thread
    # (context.depth's own frame included, as its binding sees it), the state not counted.
    session = proton.start(str(tmp_path / "py"), context="python")
    shadow = proton.start(str(tmp_path / "sh"))
    try:
        with proton.state("st"):
            here = len(inspect.stack(0))
            assert proton.context.depth(session) == here + 1
            assert recurse(5, lambda: proton.context.depth(session)) == here + 8  # 6 + lambda + depth
            assert proton.context.depth(shadow) == 1  # the shadow context: the state only
    finally:
        proton.finalize()
