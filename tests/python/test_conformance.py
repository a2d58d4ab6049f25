"""Drop-in conformance with triton.profiler (points 1-9 below, and its API's signatures), on a CPU.

Each test names the point it proves; each fails if that behaviour breaks. GPU halves (device
tensor metrics, CUDA-graph capture, Hook objects on real launches) are in
tests/gpu/test_gpu_metrics.py; the trace's kernel call_stack (point 9) is checked on synthetic
kernels in tests/cpp/trace_test.cpp.
"""

import json
import os
import shutil
import subprocess

import pytest

import proton
from proton import _proton
from tree_util import child

VIEWER = os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")


def _our_viewer():
    if not VIEWER or not os.path.exists(VIEWER):
        return None
    r = subprocess.run([VIEWER, "--version"], capture_output=True, text=True, timeout=60)
    return VIEWER if r.returncode == 0 and r.stdout.startswith("proton-viewer ") else None


def _viewer_rows(path, metric):
    r = subprocess.run([_our_viewer(), "-m", metric, str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    rows = {}
    for line in r.stdout.splitlines()[1:]:
        if not line.strip() or line.startswith("Sorted"):
            break
        name = line.split("  ")[-1].strip(" │├└─")
        rows[name] = line.split()[0] if line.split()[0] not in "│├└─" else ""
    return r.stdout, rows


needs_viewer = pytest.mark.skipif(_our_viewer() is None,
                                  reason="C++ proton-viewer not built (set PROTON_VIEWER)")


# --- point 1: metric name suffixes -------------------------------------------------------------

def test_p1_suffixes_are_removed_from_written_names_and_rules_kept(out):
    proton.start(out.name)
    for _ in range(3):
        with proton.scope("outer", {"peak (exc)": 5, "n": 1}):
            with proton.scope("inner", {"peak (exc)": 2, "ver (pty)": 1, "cfg(pty)": "a"}):
                pass
    with proton.scope("outer"):
        with proton.scope("inner", {"ver (pty)": 7, "cfg(pty)": "block_128"}):
            pass
    proton.finalize()
    root, _ = out.read()
    outer = child(root, "outer")
    assert outer["metrics"] == {"peak": 15, "n": 3}
    assert child(outer, "inner")["metrics"] == {"peak": 6, "ver": 7, "cfg": "block_128"}
    assert root["metric_rules"] == {"peak": "exc", "ver": "pty", "cfg": "pty"}


def test_p1_string_values_for_properties_and_exclusive_metrics(out):
    proton.start(out.name)
    with proton.scope("gemm", {"dtype (pty)": "bf16", "layout (exc)": "NT"}):
        pass
    with proton.scope("gemm", {"dtype (pty)": "fp8"}):
        pass
    proton.finalize()
    assert child(out.read()[0], "gemm")["metrics"] == {"dtype": "fp8", "layout": "NT"}


@needs_viewer
def test_p1_our_viewer_keeps_exclusive_metrics_per_node(out):
    proton.start(out.name)
    with proton.scope("outer", {"peak (exc)": 5, "n": 5}):
        with proton.scope("inner", {"peak (exc)": 3, "n": 3}):
            pass
    proton.finalize()
    _, peak = _viewer_rows(out.path, "peak")
    assert float(peak["outer"]) == 5 and float(peak["inner"]) == 3  # not rolled up
    _, n = _viewer_rows(out.path, "n")
    assert float(n["outer"]) == 8  # plain metrics still are


def test_p1_triton_viewer_reads_our_file(out):
    viewer = pytest.importorskip("triton.profiler.viewer")
    proton.start(out.name)
    with proton.scope("outer", {"peak (exc)": 5, "dtype (pty)": "bf16"}):
        with proton.scope("inner", {"peak (exc)": 3}):
            pass
    proton.finalize()
    gf, inclusive, exclusive, _ = viewer.read(out.path)  # same call in Triton 3.6 and 3.9
    # As in Triton's own files, an exclusive metric is not a root column: Hatchet (and so
    # Triton's viewer) leaves it per node instead of summing it over the subtree. The name it
    # finds is the one Triton writes.
    assert "peak" not in inclusive and "peak" in exclusive
    df = gf.dataframe.set_index("name")
    assert df.loc["outer", "peak"] == 5 and df.loc["inner", "peak"] == 3
    assert "peak (inc)" not in df.columns
    derived = viewer.derive_metrics(gf, ["peak"], inclusive, exclusive, {})
    assert derived == ["peak"]


def test_p1_exclusive_metrics_are_not_written_on_the_root(out):
    # Triton writes an exclusive metric only on the nodes that recorded it: no 0 on the root.
    proton.start(out.name)
    with proton.scope("outer", {"peak (exc)": 5, "n": 5}):
        with proton.cpu_timed_scope("timed"):
            pass
    proton.finalize()
    root, _ = out.read()
    assert root["metrics"] == {"n": 0}
    assert root["metric_rules"] == {"peak": "exc", "cpu_time (ns)": "exc", "cpu_calls": "exc"}
    assert child(root, "outer")["metrics"]["peak"] == 5


# --- point 2: empty scopes stay in the tree ------------------------------------------------------

def test_p2_empty_scopes_are_nodes(out):
    proton.start(out.name)
    with proton.scope("load"):
        with proton.scope("decode"):
            pass
    proton.enter_scope("save")
    proton.exit_scope()
    proton.finalize()
    root, _ = out.read()
    load = child(root, "load")
    assert load["metrics"] == {} and child(load, "decode")["metrics"] == {}
    assert child(root, "save")["metrics"] == {}


def test_p2_scope_entered_while_no_session_is_active_is_not_recorded(out):
    s = proton.start(out.name)
    proton.deactivate(s)
    with proton.scope("off"):
        pass
    proton.activate(s)
    proton.finalize()
    assert [c["frame"]["name"] for c in out.read()[0]["children"]] == []


@needs_viewer
def test_p2_viewer_shows_empty_scopes(out):
    proton.start(out.name)
    with proton.scope("load"):
        pass
    with proton.scope("compute", {"n": 4}):
        pass
    proton.finalize()
    stdout, rows = _viewer_rows(out.path, "n")
    assert "load" in stdout and "compute" in rows


# --- point 3: session ids -----------------------------------------------------------------------

def test_p3_ids_count_up_and_are_never_reused(tmp_path):
    a = proton.start(str(tmp_path / "a"))
    proton.finalize(a)
    b = proton.start(str(tmp_path / "b"))
    c = proton.start(str(tmp_path / "c"))
    assert (b, c) == (a + 1, a + 2)
    proton.finalize(b)
    d = proton.start(str(tmp_path / "d"))
    assert d == c + 1
    proton.finalize()


@pytest.mark.parametrize("call", [
    lambda s: proton.activate(s),
    lambda s: proton.deactivate(s),
    lambda s: proton.deactivate(s, flushing=True),
    lambda s: proton.finalize(s),
    lambda s: proton.data.get(s),
    lambda s: proton.data.get_msgpack(s),
    lambda s: proton.data.advance_phase(s),
    lambda s: proton.data.is_phase_complete(s),
    lambda s: proton.data.clear(s),
])
def test_p3_finalized_or_unknown_ids_raise_runtime_error(tmp_path, call):
    s = proton.start(str(tmp_path / "p"))
    proton.finalize(s)
    with pytest.raises(RuntimeError, match=f"^Session has not been initialized: {s}$"):
        call(s)
    with pytest.raises(RuntimeError, match="Session has not been initialized: 123456"):
        call(123456)


def test_p3_a_finalized_id_never_reaches_a_new_session(tmp_path):
    old = proton.start(str(tmp_path / "old"))
    proton.finalize(old)
    new = proton.start(str(tmp_path / "new"))
    with pytest.raises(RuntimeError):
        proton.deactivate(old)
    assert _proton.is_active(new)
    proton.finalize(new)


# --- point 4: errors ----------------------------------------------------------------------------

def test_p4_metric_type_change_raises_runtime_error_with_tritons_phrase(out):
    proton.start(out.name)
    with proton.scope("m", {"latency": 1}):
        pass
    with pytest.raises(RuntimeError, match="Metric value type mismatch.*'latency'.*int.*float"):
        with proton.scope("m", {"latency": 1.5}):
            pass
    assert proton.context.depth() == 0  # the rejected scope did not stay open


def test_p4_bad_metric_values_name_the_metric(out):
    proton.start(out.name)
    with pytest.raises(TypeError, match="metric 'obj'"):
        with proton.scope("m", {"obj": object()}):
            pass
    with pytest.raises(TypeError, match="metric 'lst'"):
        with proton.scope("m", {"lst": [1, "x"]}):
            pass


def test_p4_exit_scope_name_mismatch_names_both_and_corrupts_nothing(out):
    proton.start(out.name)
    proton.enter_scope("a")
    proton.enter_scope("b")
    with pytest.raises(ValueError, match="exit_scope\\('a'\\).*'b'"):
        proton.exit_scope("a")
    assert proton.context.depth() == 2
    proton.exit_scope("b")
    proton.exit_scope("a")
    assert proton.context.depth() == 0
    proton.finalize()
    assert child(child(out.read()[0], "a"), "b")["metrics"] == {}


def test_p4_exit_scope_checks_the_innermost_scope_of_any_kind(out):
    proton.start(out.name)
    proton.enter_scope("a")
    with proton.scope("inner"):
        with pytest.raises(ValueError, match="'inner'"):
            proton.exit_scope("a")
        with pytest.raises(ValueError, match="'inner'"):
            proton.exit_scope()
        assert proton.context.depth() == 2
    proton.exit_scope("a")
    assert proton.context.depth() == 0


# --- point 5: states ------------------------------------------------------------------------------

def test_p5_scope_inside_a_state_nests_scope_path_then_state(out):
    proton.start(out.name)
    with proton.scope("layer"):
        with proton.state("prefill"):
            with proton.scope("attn", {"n": 1}):
                pass
            proton.enter_scope("mlp", metrics={"n": 2})
            proton.exit_scope()
    proton.finalize()
    layer = child(out.read()[0], "layer")
    assert child(child(layer, "attn"), "prefill")["metrics"] == {"n": 1}
    assert child(child(layer, "mlp"), "prefill")["metrics"] == {"n": 2}
    assert child(layer, "attn")["metrics"] == {}


# --- point 6: names and knobs -------------------------------------------------------------------

def test_p6_default_profile_name(tmp_path, monkeypatch):
    assert proton.DEFAULT_PROFILE_NAME == "proton"
    monkeypatch.chdir(tmp_path)

    @proton.profile
    def f():
        return 1

    assert f() == 1
    proton.finalize()
    assert (tmp_path / "proton.hatchet").exists()


def test_p6_disable_knob_and_env(tmp_path, monkeypatch):
    triton = pytest.importorskip("triton")
    monkeypatch.setattr(triton.knobs.proton, "disable", True)
    assert proton.start(str(tmp_path / "off")) is None
    assert not _proton.has_sessions()
    monkeypatch.undo()
    monkeypatch.setenv("TRITON_PROTON_DISABLE", "1")
    assert proton.start(str(tmp_path / "off")) is None
    proton.finalize()
    assert not (tmp_path / "off.hatchet").exists()


def test_p6_disable_env_without_triton_knobs(tmp_path, monkeypatch):
    from proton import _knobs
    monkeypatch.setattr(_knobs, "_knobs", lambda: None)
    monkeypatch.setenv("TRITON_PROTON_DISABLE", "true")
    assert proton.start(str(tmp_path / "off")) is None


def _effective(**start_args):
    """The options a session started now would run with (the engine's own resolution)."""
    from proton import _knobs
    return _proton.session_options(**{**_knobs.start_args(), **start_args})


def test_p6_enable_nvtx_knob_turns_proton_nvtx_off(tmp_path, monkeypatch):
    triton = pytest.importorskip("triton")
    monkeypatch.delenv("PROTON_NVTX", raising=False)
    monkeypatch.setattr(triton.knobs.proton, "enable_nvtx", False)
    assert _effective()["nvtx"] is False
    proton.start(str(tmp_path / "p"))
    assert "PROTON_NVTX" not in os.environ  # handed over as an argument, not the environment
    proton.finalize()
    monkeypatch.setattr(triton.knobs.proton, "enable_nvtx", True)
    assert _effective()["nvtx"] is True


def test_p6_our_own_variables_win(tmp_path, monkeypatch):
    triton = pytest.importorskip("triton")
    monkeypatch.setenv("PROTON_NVTX", "1")
    monkeypatch.setattr(triton.knobs.proton, "enable_nvtx", False)
    assert _effective()["nvtx"] is True
    proton.start(str(tmp_path / "p"))
    assert os.environ["PROTON_NVTX"] == "1"
    proton.finalize()
    monkeypatch.setenv("PROTON_CUPTI_PATH", str(tmp_path / "ours"))
    assert _effective(cupti_lib_dir=str(tmp_path / "knob"))["cupti_path"] == str(tmp_path / "ours")


def test_p6_cupti_lib_dir_knob_when_set(tmp_path, monkeypatch):
    triton = pytest.importorskip("triton")
    from proton import _knobs
    monkeypatch.delenv("PROTON_CUPTI_PATH", raising=False)
    monkeypatch.delenv("TRITON_CUPTI_LIB_PATH", raising=False)
    assert _knobs.cupti_lib_dir() is None  # default: we search as usual
    assert _effective()["cupti_path"] == ""
    k = triton.knobs.proton
    try:
        k.cupti_lib_dir = str(tmp_path)  # Triton also exports TRITON_CUPTI_LIB_PATH
        assert _knobs.cupti_lib_dir() == str(tmp_path)
        assert _knobs.start_args()["cupti_lib_dir"] == str(tmp_path)
        assert _effective()["cupti_path"] == str(tmp_path)
        assert "PROTON_CUPTI_PATH" not in os.environ  # an argument, not the environment
    finally:
        del k.cupti_lib_dir
        os.environ.pop("TRITON_CUPTI_LIB_PATH", None)
    assert _effective()["cupti_path"] == ""
    monkeypatch.setenv("TRITON_CUPTI_LIB_PATH", str(tmp_path / "env"))
    assert _knobs.cupti_lib_dir() == str(tmp_path / "env")


def test_p6_buffer_size_knobs_and_env(monkeypatch):
    from proton import _knobs
    monkeypatch.setenv("TRITON_PROFILE_METRIC_BUFFER_SIZE", "1048576")
    monkeypatch.setenv("TRITON_PROFILE_BUFFER_SIZE", "2097152")
    assert _knobs.profile_metric_buffer_size() == 1048576
    assert _knobs.profile_buffer_size() == 2097152
    monkeypatch.setenv("TRITON_PROFILE_METRIC_BUFFER_SIZE", "lots")
    knobs = _knobs._knobs()
    if knobs is None or not hasattr(type(knobs), "profile_metric_buffer_size"):  # Triton < 3.8
        with pytest.raises(ValueError, match="TRITON_PROFILE_METRIC_BUFFER_SIZE"):
            _knobs.profile_metric_buffer_size()


def test_p6_profile_buffer_size_sizes_the_activity_buffers(monkeypatch):
    # Triton sizes CUPTI's activity buffers with it; ours do the same when it is set, and keep our
    # 1 MB default (not Triton's 64 MB) when it is not. PROTON_BUFFER_SIZE wins over it.
    from proton import _knobs
    monkeypatch.delenv("PROTON_BUFFER_SIZE", raising=False)
    monkeypatch.delenv("TRITON_PROFILE_BUFFER_SIZE", raising=False)
    assert _knobs.start_args()["profile_buffer_size"] == 0
    assert _effective()["buffer_bytes"] == 1 << 20
    monkeypatch.setenv("TRITON_PROFILE_BUFFER_SIZE", str(8 << 20))
    assert _knobs.start_args()["profile_buffer_size"] == 8 << 20
    assert _effective()["buffer_bytes"] == 8 << 20
    monkeypatch.setenv("PROTON_BUFFER_SIZE", "4096")
    assert _effective()["buffer_bytes"] == 4096
    monkeypatch.delenv("PROTON_BUFFER_SIZE")
    monkeypatch.setenv("TRITON_PROFILE_BUFFER_SIZE", "100")
    with pytest.raises(ValueError, match=r"TRITON_PROFILE_BUFFER_SIZE\) is 100: not a buffer size"):
        _effective()


@pytest.mark.triton
def test_p6_profile_buffer_size_knob_set_in_python(monkeypatch):
    triton = pytest.importorskip("triton")
    k = getattr(triton.knobs, "proton", None)
    if k is None or "profile_buffer_size" not in type(k).__dict__:
        pytest.skip("this Triton has no profile_buffer_size knob (3.8 added it)")
    from proton import _knobs
    monkeypatch.delenv("PROTON_BUFFER_SIZE", raising=False)
    monkeypatch.delenv("TRITON_PROFILE_BUFFER_SIZE", raising=False)
    try:
        k.profile_buffer_size = 2 << 20
        assert _effective()["buffer_bytes"] == 2 << 20
    finally:
        del k.profile_buffer_size
        os.environ.pop("TRITON_PROFILE_BUFFER_SIZE", None)
    assert _knobs.start_args()["profile_buffer_size"] == 0


def test_p6_every_triton_proton_knob_is_handled():
    triton = pytest.importorskip("triton")
    from proton import _knobs
    handled = {"disable", "enable_nvtx", "cupti_lib_dir", "cupti_lib_blackwell_dir",
               "profile_buffer_size", "profile_metric_buffer_size", "enable_hw_trace",
               # AMD-only (roctracer/rocprofiler paths): accepted, no NVIDIA meaning
               "hsa_runtime_path", "hsa_runtime_library", "rocprofiler_sdk_include_path",
               "rocprofiler_sdk_lib_path", "rocprofiler_sdk_library", "roctracer_lib_path",
               "roctracer_library", "roctx_lib_path", "roctx_library"}
    knobs = set(triton.knobs.proton.knob_descriptors)
    assert "disable" in knobs
    assert knobs <= handled, knobs - handled
    assert "profile_metric_buffer_size" in _knobs.__doc__


# --- point 7: hooks package ---------------------------------------------------------------------

def test_p7_module_layout():
    from proton.hooks.hook import Hook, HookManager  # noqa: F401
    from proton.hooks.instrumentation import InstrumentationHook  # noqa: F401
    from proton.hooks.launch import COMPUTE_METADATA_SCOPE_NAME, LaunchHook, id, op_name
    assert COMPUTE_METADATA_SCOPE_NAME == "__proton_launch_metadata"
    assert id.get(None) is None or isinstance(id.get(), int)  # the last launch on this thread's
    assert op_name.get(None) is None or isinstance(op_name.get(), str)
    assert issubclass(LaunchHook, Hook) and LaunchHook.priority == 100
    assert LaunchHook() is LaunchHook()
    assert proton.hooks.COMPUTE_METADATA_SCOPE_NAME == COMPUTE_METADATA_SCOPE_NAME
    assert callable(LaunchHook().configure)


# --- point 8: metric values ----------------------------------------------------------------------

def test_p8_cpu_tensors_and_numpy_scalars_are_numbers(out):
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    proton.start(out.name)
    with proton.scope("s", {"loss": torch.tensor(1.5), "tokens": torch.tensor(7),
                            "hits": np.int64(2), "one": torch.tensor([4])}):
        pass
    proton.finalize()
    m = child(out.read()[0], "s")["metrics"]
    assert m == {"loss": 1.5, "tokens": 7, "hits": 2, "one": 4}
    assert isinstance(m["tokens"], int) and isinstance(m["loss"], float)


def test_p8_non_scalar_tensors_are_an_error_naming_the_metric(out):
    torch = pytest.importorskip("torch")
    proton.start(out.name)
    with pytest.raises(TypeError, match="metric .hist. in scope .s.*one value.*\\(2, 2\\)"):
        with proton.scope("s", {"hist": torch.ones(2, 2)}):
            pass
    assert proton.context.depth() == 0


def test_p8_an_object_whose_item_is_not_a_number_is_an_error(out):
    class Odd:
        def item(self):
            return "seven"

    proton.start(out.name)
    with pytest.raises(TypeError, match="metric 'odd'.*not a number"):
        with proton.scope("s", {"odd": Odd()}):
            pass


def test_23_vector_metrics_sum_elementwise(out):
    proton.start(out.name)
    with proton.scope("s", {"per_sm": [1, 2, 3], "ratio": [0.5, 1.0]}):
        pass
    with proton.scope("s", {"per_sm": [1, 1, 1, 4], "ratio": [0.5, 0.0]}):
        pass
    proton.finalize()
    m = child(out.read()[0], "s")["metrics"]
    assert m == {"per_sm": [2, 3, 4, 4], "ratio": [1.0, 1.0]}


def test_23_tensor_metric_values_in_get_and_finalize_match(out):
    torch = pytest.importorskip("torch")
    s = proton.start(out.name)
    for i in range(3):
        with proton.scope("step", {"loss": torch.tensor(float(i))}):
            pass
    live = proton.data.get(s)
    proton.finalize()
    assert child(live[0], "step")["metrics"] == {"loss": 3.0}
    assert child(out.read()[0], "step")["metrics"] == {"loss": 3.0}


# --- API signatures: hook=, metadata_state, deactivate/finalize ---------------------------------

@pytest.mark.parametrize("bad", ["launch", "Triton", 3, object()])
def test_23_hook_must_be_none_triton_or_a_hook(tmp_path, bad):
    with pytest.raises(ValueError, match="Unsupported hook"):
        proton.start(str(tmp_path / "p"), hook=bad)
    assert not _proton.has_sessions()


def test_23_metadata_state_names_and_restores():
    from proton.state import (COMPUTE_METADATA_SCOPE_NAME, get_metadata_state_name,
                              metadata_state)
    assert proton.state.metadata_state is metadata_state
    assert get_metadata_state_name() == COMPUTE_METADATA_SCOPE_NAME
    assert get_metadata_state_name("k") == COMPUTE_METADATA_SCOPE_NAME + ":k"
    with proton.state("user"):
        with metadata_state("k"):
            assert _proton.state() == "__proton_launch_metadata:k"
        assert _proton.state() == "user"


def test_23_deactivate_flushing_and_finalize_msgpack(out):
    msgpack = pytest.importorskip("msgpack")
    s = proton.start(out.name)
    with proton.scope("a", {"n": 1}):
        pass
    proton.deactivate(s, flushing=True)
    proton.activate(s)
    proton.finalize(s, output_format="hatchet_msgpack")
    with open(out.name + ".hatchet_msgpack", "rb") as f:
        root, _ = msgpack.unpackb(f.read(), raw=False, strict_map_key=False)
    assert child(root, "a")["metrics"] == {"n": 1}


# --- point 8: the device accumulator logic, run on CPU tensors ------------------------------------

@pytest.fixture
def cpu_as_device(monkeypatch):
    """Makes proton.metric treat CPU tensors as device tensors (accumulated, read back later)."""
    torch = pytest.importorskip("torch")
    from proton import metric
    monkeypatch.setattr(metric, "_HOST_DEVICES", ())
    for table in ("_slabs", "_slots", "_next", "_folded"):
        monkeypatch.setattr(metric, table, {})
    adds = []
    real_add = torch.Tensor.add_

    def spy(self, other, *a, **k):
        adds.append(_proton.state())
        return real_add(self, other, *a, **k)

    monkeypatch.setattr(torch.Tensor, "add_", spy)
    return torch, adds


def test_p8_accumulated_values_reach_every_session_once(out, tmp_path, cpu_as_device):
    torch, adds = cpu_as_device
    a = proton.start(out.name)
    b = proton.start(str(tmp_path / "b"))
    with proton.state("user_state"):
        for _ in range(4):
            with proton.scope("step", {"loss": torch.tensor(0.5), "n": torch.tensor(2)}):
                pass
        assert _proton.state() == "user_state"  # restored after each add
    # Each add ran under the hidden metadata frame, never on the user's state.
    assert adds == [proton.hooks.COMPUTE_METADATA_SCOPE_NAME] * 8
    live = proton.data.get(a)
    step = child(child(live[0], "step"), "user_state")
    assert step["metrics"] == {"loss": 2.0, "n": 8}
    assert isinstance(step["metrics"]["n"], int)
    proton.finalize(a)  # a second read-back adds nothing twice
    proton.deactivate(b)
    with proton.scope("step", {"loss": torch.tensor(1.0)}):  # no active session: not recorded
        pass
    proton.finalize()
    for path in (out.path, str(tmp_path / "b.hatchet")):
        with open(path) as f:
            root = json.load(f)[0]
        assert child(child(root, "step"), "user_state")["metrics"] == {"loss": 2.0, "n": 8}


def test_p8_accumulated_property_keeps_last_value_and_types_are_checked_at_once(
        out, cpu_as_device):
    torch, _ = cpu_as_device
    proton.start(out.name)
    for v in (3.0, 9.0, 5.0):
        with proton.scope("p", {"lr (pty)": torch.tensor(v)}):
            pass
    with proton.scope("q", {"t": torch.tensor(1.0)}):
        pass
    with pytest.raises(RuntimeError, match="Metric value type mismatch.*'t'"):
        with proton.scope("q", {"t": torch.tensor(1)}):
            pass
    proton.finalize()
    root = out.read()[0]
    assert child(root, "p")["metrics"] == {"lr": 5.0}
    assert child(root, "q")["metrics"] == {"t": 1.0}


def test_p8_accumulator_buffer_limit_names_the_knob(out, cpu_as_device, monkeypatch):
    torch, _ = cpu_as_device
    from proton import metric
    monkeypatch.setattr(metric, "_capacity_values", lambda: 2)
    proton.start(out.name)
    with proton.scope("s", {"a": torch.tensor(1.0), "b": torch.tensor(1.0)}):
        pass
    with pytest.raises(RuntimeError, match="metric 'c'.*TRITON_PROFILE_METRIC_BUFFER_SIZE"):
        with proton.scope("s", {"c": torch.tensor(1.0)}):
            pass


def test_23_launch_metadata_every_number_and_cpu_tensor_becomes_a_metric(tmp_path):
    triton = pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    LazyDict = pytest.importorskip("triton.compiler").LazyDict
    proton.start(str(tmp_path / "p"), hook="triton")
    d = LazyDict({"name": "k", "function": 0, "stream": 0})
    d.add(lambda grid, md, args: {"name": "k_renamed", "flops8": 2, "bytes": 3.0,
                                  "tiles": torch.tensor(5), "ratio": torch.tensor(0.5),
                                  "note": "not a number"}, ((1, 1, 1), None, {}))
    triton.knobs.runtime.launch_enter_hook(d)
    name, metrics = _proton._launch_op(_proton._pending_launch_op())
    triton.knobs.runtime.launch_exit_hook(d)
    assert name == "k_renamed"
    assert metrics == {"flops8": 2.0, "bytes": 3, "tiles": 5, "ratio": 0.5}
    assert isinstance(metrics["flops8"], float) and isinstance(metrics["bytes"], int)


def test_p8_a_failing_read_back_warns_and_the_profile_is_still_written(out, monkeypatch):
    from proton import metric

    def broken():
        raise RuntimeError("device lost")

    monkeypatch.setattr(metric, "fold", broken)
    proton.start(out.name)
    with proton.scope("s", {"n": 1}):
        pass
    with pytest.warns(UserWarning, match="device lost"):
        proton.finalize()
    assert child(out.read()[0], "s")["metrics"] == {"n": 1}


def test_p8_start_before_cuda_init_queues_nothing_into_torch(out, monkeypatch):
    # A call queued for torch's CUDA init ran inside our own first allocation (which holds the
    # accumulator lock) and hung on the H100: nothing is queued; the first metric allocates.
    torch = pytest.importorskip("torch")
    from proton import metric
    queued = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "_lazy_call", queued.append, raising=False)
    monkeypatch.setattr(metric, "_preallocate_now", lambda *a: pytest.fail("allocated early"))
    proton.start(out.name)
    assert queued == []
