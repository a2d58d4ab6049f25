"""Metric values at the edges, on a machine with no GPU (scope metrics only).

Non-finite values (NaN, +-inf) are recorded, warned about once, written so that every reader
opens the file (JSON: NaN as null, as triton.profiler writes it, +-inf as +-1e999; msgpack:
float64 as it is) and read back as NaN / +-inf. Values that cannot be recorded (ints beyond 64
bits, bools, complex numbers, tensors of several elements) are a one-line error naming the
metric, the scope and the accepted range, and leave no scope open.
"""

import json
import math
import os
import shutil
import subprocess
import warnings

import msgpack
import pytest

import proton
import proton.profiles as profiles
from tree_util import child

VIEWER = os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")
needs_viewer = pytest.mark.skipif(VIEWER is None,
                                  reason="C++ proton-viewer not built (set PROTON_VIEWER)")

NAN, INF = float("nan"), float("inf")


def record_non_finite(out, scope="nonfinite_step"):
    session = proton.start(out.name)
    with proton.scope("outer"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # tested on its own below
        with proton.scope(scope, {"loss": NAN, "up": INF, "down": -INF, "zero": -0.0,
                                  "vec": [1.5, NAN, -INF]}):
            pass
        with proton.scope("finite", {"loss": 2.5, "up": 1.0, "down": 1.0, "zero": 0.0}):
            pass
    proton.finalize(session, output_format="hatchet,hatchet_msgpack")
    return session


def test_non_finite_values_are_written_readably(out):
    record_non_finite(out)
    with open(out.path) as f:
        text = f.read()
    assert '"loss":null' in text and '"up":1e999' in text and '"down":-1e999' in text
    assert '"zero":-0.0' in text and '"vec":[1.5,null,-1e999]' in text
    metrics = child(child(json.loads(text)[0], "outer"), "nonfinite_step")["metrics"]
    assert metrics["loss"] is None  # what triton.profiler's viewer and hatchet read too
    assert metrics["up"] == INF and metrics["down"] == -INF
    assert math.copysign(1, metrics["zero"]) == -1
    with open(out.name + ".hatchet_msgpack", "rb") as f:
        packed = msgpack.unpackb(f.read(), raw=False)
    m = child(child(packed[0], "outer"), "nonfinite_step")["metrics"]
    assert math.isnan(m["loss"]) and m["up"] == INF and m["down"] == -INF
    assert m["vec"][0] == 1.5 and math.isnan(m["vec"][1]) and m["vec"][2] == -INF


def test_proton_profiles_reads_nan_and_infinities_back(out):
    record_non_finite(out)
    p = profiles.read(out.path)
    node = p.find(("outer", "nonfinite_step"))
    own = node.exclusive
    assert math.isnan(own["loss"]) and own["up"] == INF and own["down"] == -INF
    assert math.isnan(own["vec"])  # an array metric reads as its sum
    # A NaN propagates into every inclusive sum above it; a sibling keeps its number.
    assert math.isnan(p.find(("outer",)).metrics["loss"])
    assert p.find(("outer", "finite")).metrics["loss"] == 2.5
    # Absent stays None, a NaN value is NaN.
    assert p.find(("outer", "finite")).exclusive.get("vec") is None
    assert p.column("vec")[p.find(("outer", "finite")).index] is None


@needs_viewer
def test_the_viewer_prints_nan_and_infinities(out):
    record_non_finite(out)
    for metric, expected in (("loss", "nan"), ("up", "inf"), ("down", "-inf")):
        r = subprocess.run([VIEWER, "-m", metric, out.path], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        line = next(ln for ln in r.stdout.splitlines() if ln.rstrip().endswith("nonfinite_step"))
        assert line.split()[0] == expected, r.stdout


def test_non_finite_values_warn_once_per_metric_and_scope(out):
    proton.start(out.name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with proton.scope("warn_scope_a", {"warn_m": NAN}):
                pass
        with proton.scope("warn_scope_b", {"warn_m": INF}):
            pass
        with proton.scope("warn_scope_b", {"warn_m": 1.0}):
            pass
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 2, messages
    assert "metric 'warn_m' in scope 'warn_scope_a' is nan" in messages[0]
    assert "metric 'warn_m' in scope 'warn_scope_b' is inf" in messages[1]


def test_numpy_and_tensor_non_finite_values(out):
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    session = proton.start(out.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with proton.scope("arrays", {"np": np.float64("nan"), "t": torch.tensor(float("-inf")),
                                     "np32": np.float32("inf")}):
            pass
    proton.finalize(session, output_format="hatchet_msgpack")
    with open(out.name + ".hatchet_msgpack", "rb") as f:
        m = child(msgpack.unpackb(f.read(), raw=False)[0], "arrays")["metrics"]
    assert math.isnan(m["np"]) and m["t"] == -INF and m["np32"] == INF


def one_line_error(excinfo, *parts):
    msg = str(excinfo.value)
    assert "\n" not in msg, msg
    for part in parts:
        assert part in msg, msg


@pytest.mark.parametrize("value, error, says", [
    (2 ** 70, OverflowError, "outside the 64-bit signed range"),
    (2 ** 63, OverflowError, "outside the 64-bit signed range"),
    (-2 ** 63 - 1, OverflowError, "outside the 64-bit signed range"),
    (True, TypeError, "is a bool"),
    (1j, TypeError, "a complex is not a metric value"),
    ([1, 2 ** 64], OverflowError, "element 1 is an int outside"),
    ([1.0, False], TypeError, "element 1 is a bool"),
    ([1, "x"], TypeError, "element 1 is a str"),
    (None, TypeError, "a NoneType is not a metric value"),
])
def test_values_out_of_range_are_refused_naming_metric_scope_and_range(out, value, error, says):
    proton.start(out.name)
    with pytest.raises(error) as e:
        with proton.scope("range_scope", {"bad": value}):
            pass
    one_line_error(e, "metric 'bad' in scope 'range_scope'", says,
                   "accepted: an int in [-2**63, 2**63-1]")
    assert proton.context.depth() == 0  # the refused scope was closed


def test_int64_edges_are_recorded_exactly(out):
    session = proton.start(out.name)
    with proton.scope("edges", {"lo": -2 ** 63, "hi": 2 ** 63 - 1, "v": [-2 ** 63, 2 ** 63 - 1]}):
        pass
    proton.finalize(session)
    m = child(out.read()[0], "edges")["metrics"]
    assert m == {"lo": -2 ** 63, "hi": 2 ** 63 - 1, "v": [-2 ** 63, 2 ** 63 - 1]}


def test_every_entry_point_checks_values(out):
    torch = pytest.importorskip("torch")
    proton.start(out.name)
    with pytest.raises(OverflowError) as e:
        proton.enter_scope("entered", metrics={"big": 2 ** 70})
    one_line_error(e, "metric 'big' in scope 'entered'")
    assert proton.context.depth() == 0
    with pytest.raises(TypeError) as e:
        with proton.cpu_timed_scope("timed", {"flag": True}):
            pass
    one_line_error(e, "metric 'flag' in scope 'timed'", "bool")
    proton.enter_scope("open")
    with pytest.raises(TypeError) as e:
        proton.exit_scope(metrics={"c": 2 + 3j})
    one_line_error(e, "metric 'c' in scope 'open'", "complex")
    proton.exit_scope()
    with pytest.raises(TypeError) as e:
        with proton.scope("tensor_scope", {"t": torch.ones(3)}):
            pass
    one_line_error(e, "metric 't' in scope 'tensor_scope'", "exactly one value", "(3,)")
    with pytest.raises(TypeError) as e:
        with proton.scope("complex_tensor", {"t": torch.tensor(1 + 2j)}):
            pass
    one_line_error(e, "metric 't' in scope 'complex_tensor'", "complex")
    assert proton.context.depth() == 0


@pytest.mark.triton
def test_launch_metadata_values_are_checked(tmp_path):
    triton = pytest.importorskip("triton")
    LazyDict = pytest.importorskip("triton.compiler").LazyDict
    from proton import _proton, hooks

    def lazy(kernel, md):
        d = LazyDict({"name": kernel, "function": 0x1234, "stream": 0})
        d.add(md, ((1, 1, 1), None, {}))
        return d

    proton.start(str(tmp_path / "p"), hook="triton")
    try:
        with pytest.raises(OverflowError) as e:
            triton.knobs.runtime.launch_enter_hook(
                lazy("big_kernel", lambda *a: {"bytes": 2 ** 70}))
        one_line_error(e, "launch_metadata metric 'bytes' of kernel 'big_kernel'", "64-bit")
        triton.knobs.runtime.launch_exit_hook(lazy("big_kernel", lambda *a: {}))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                triton.knobs.runtime.launch_enter_hook(
                    lazy("nan_kernel", lambda *a: {"flops": NAN, "util": -INF}))
                op = _proton._pending_launch_op()
                triton.knobs.runtime.launch_exit_hook(lazy("nan_kernel", lambda *a: {}))
        _, metrics = _proton._launch_op(op)
        assert math.isnan(metrics["flops"]) and metrics["util"] == -INF
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == 2, messages
        assert "metric 'flops' of kernel 'nan_kernel' is nan" in messages[0]
    finally:
        hooks.LaunchHook().configure()
        proton.finalize()
