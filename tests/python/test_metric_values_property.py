"""Property: whatever scopes and metric values are recorded, every file Proton writes opens in
every reader we have and reads back what was recorded; what cannot be recorded is refused at
record time with a one-line error.

Random sibling scopes (empty, very long, non-ASCII and control-character names; repeated names
merge) carry random values: NaN, +-inf, -0.0, huge and tiny floats, the int64 edges, vectors of
them, and values that cannot be recorded (ints beyond 64 bits, bools, complex numbers). Each
example writes hatchet, hatchet_msgpack, a Chrome trace (data="tree,trace"), two phases, and
reads them with Python's json and msgpack, proton.profiles, proton-viewer and, when installed,
llnl-hatchet. CPU only: sessions without a GPU record CPU scopes and their metrics.
"""

import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import warnings

import msgpack
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings, strategies as st  # noqa: E402

import proton  # noqa: E402
import proton.profiles as profiles  # noqa: E402

VIEWER = os.environ.get("PROTON_VIEWER") or shutil.which("proton-viewer")

I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1
EDGE_FLOATS = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 5e-324, -5e-324,
               sys.float_info.max, -sys.float_info.max, sys.float_info.min, 1e300, 1e-300]
floats = st.one_of(st.sampled_from(EDGE_FLOATS), st.floats())
ints = st.one_of(st.sampled_from([I64_MIN, I64_MAX, 0, -1, 2 ** 53 + 1]),
                 st.integers(min_value=I64_MIN, max_value=I64_MAX))
# Values every entry refuses: (value, exception type).
unrecordable = st.one_of(
    st.sampled_from([(2 ** 63, OverflowError), (2 ** 64 - 1, OverflowError),
                     (2 ** 70, OverflowError), (I64_MIN - 1, OverflowError),
                     (True, TypeError), (False, TypeError), (1j, TypeError)]),
    st.integers(min_value=2 ** 63, max_value=2 ** 200).map(lambda v: (v, OverflowError)),
    st.lists(ints, max_size=3).map(lambda v: (v + [2 ** 64], OverflowError)),
)
names = st.one_of(
    st.sampled_from(["", "x" * 3000, "naïve ✓ 名前", "\x00\x01\n\t\"\\", "\u202e rtl", "a/b",
                     "ROOT"]),
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=24),
)
# One metric per type, so a name never changes type across scopes.
# (An empty list is typed as a list of ints: "fv" lists are never empty.)
METRICS = {"f": floats, "i": ints, "fv": st.lists(floats, min_size=1, max_size=4),
           "iv": st.lists(ints, max_size=4)}
scope_values = st.fixed_dictionaries({}, optional=METRICS)
cases = st.lists(st.tuples(names, scope_values, st.none() | unrecordable), min_size=1, max_size=5)


def wrap64(v):
    return (v + 2 ** 63) % 2 ** 64 - 2 ** 63


def combine(current, incoming):
    """What the tree stores after summing `incoming` into `current` (metric.cpp's rule)."""
    if current is None:
        return incoming
    if isinstance(incoming, list):
        zero = 0.0 if any(isinstance(x, float) for x in current + incoming) else 0
        out = list(current) + [zero] * max(0, len(incoming) - len(current))
        for i, v in enumerate(incoming):
            out[i] = wrap64(out[i] + v) if isinstance(v, int) else out[i] + v
        return out
    return wrap64(current + incoming) if isinstance(incoming, int) else current + incoming


def same(read, recorded, nan_as_none=False):
    """`read` is `recorded`: NaN is NaN (or None where JSON wrote null), -0.0 keeps its sign."""
    if isinstance(recorded, list):
        return isinstance(read, list) and len(read) == len(recorded) and all(
            same(a, b, nan_as_none) for a, b in zip(read, recorded))
    if isinstance(recorded, float) and math.isnan(recorded):
        return read is None if nan_as_none else (isinstance(read, float) and math.isnan(read))
    if isinstance(recorded, float):
        return (isinstance(read, float) and read == recorded
                and math.copysign(1, read) == math.copysign(1, recorded))
    return type(read) is int and read == recorded


def as_double(recorded):
    """The number proton.profiles and the viewer hold: a double; an array shows its sum."""
    if isinstance(recorded, list):
        # In order, from 0, one rounding per element, as the reader adds. Not sum(): from
        # Python 3.12 it compensates the rounding, and large elements then differ.
        total = 0.0
        for v in recorded:
            total += float(v)
        return total
    return float(recorded)


def children(node):
    return {c["frame"]["name"]: c for c in node.get("children", [])}


def record(name, cases):
    """Records `cases` under scope "case" in two phases; returns ({scope: {metric: value}},
    the session). Unrecordable values must raise at once and leave no scope open."""
    session = proton.start(name, data="tree,trace")
    expected = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the once-per-scope NaN/inf warning
        for phase in (0, 1):
            with proton.scope("case", {"n": 1}):  # a profile without metrics is another matter
                for scope, values, bad in cases:
                    if bad is not None:
                        value, error = bad
                        with pytest.raises(error) as e:
                            with proton.scope(scope, {"bad": value}):
                                pass
                        assert "\n" not in str(e.value) and "metric 'bad'" in str(e.value)
                        assert proton.context.depth() == 1
                    with proton.scope(scope, values):
                        pass
                    if phase == 0:
                        node = expected.setdefault(scope, {})
                        for k, v in values.items():
                            node[k] = combine(node.get(k), v)
            if phase == 0:
                proton.data.advance_phase(session)
    proton.finalize(session, output_format="hatchet,hatchet_msgpack,chrome_trace")
    return expected


def check_tree(tree, expected, nan_as_none):
    case = children(tree[0])["case"]
    got = children(case)
    assert set(got) == set(expected)
    for scope, values in expected.items():
        metrics = got[scope]["metrics"]
        assert set(metrics) == set(values), (scope, metrics, values)
        for k, v in values.items():
            assert same(metrics[k], v, nan_as_none), (scope, k, metrics[k], v)


def check_profiles(path, expected):
    p = profiles.read(path)
    for scope, values in expected.items():
        node = p.find(("case", scope))
        assert node is not None, scope
        own = node.exclusive
        for k, v in values.items():
            want, read = as_double(v), own.get(k)
            if math.isnan(want):
                assert isinstance(read, float) and math.isnan(read), (scope, k, read)
            else:
                assert read == want, (scope, k, read, want)
    return p


@pytest.mark.timeout(600)
# No shrinking: an example costs a session, five files and a few viewer runs, and the failing
# example as generated already names the values.
@settings(max_examples=int(os.environ.get("PROTON_PROPERTY_EXAMPLES", "25")), deadline=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate], database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cases=cases)
def test_what_is_recorded_is_what_every_reader_reads(tmp_path, cases):
    for f in glob.glob(str(tmp_path / "p*")):
        os.remove(f)
    base = str(tmp_path / "p")
    expected = record(base, cases)
    part0 = base + ".part_0"
    files = sorted(glob.glob(base + ".*"))
    assert os.path.exists(part0 + ".hatchet") and os.path.exists(base + ".part_1.hatchet"), files

    with open(part0 + ".hatchet") as f:
        check_tree(json.load(f), expected, nan_as_none=True)
    with open(part0 + ".hatchet_msgpack", "rb") as f:
        check_tree(msgpack.unpackb(f.read(), raw=False, strict_map_key=False), expected,
                   nan_as_none=False)
    check_profiles(part0 + ".hatchet", expected)
    check_profiles(base + ".part_1.hatchet", expected)  # phase 1 recorded the same values

    with open(base + ".chrome_trace") as f:
        trace = json.load(f)
    # Scopes given metrics are Triton's metric events ("case: <n, 1>"): the call path names them.
    scopes = {e["args"]["call_stack"][-1] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert set(expected) | {"case"} <= scopes

    if VIEWER is not None:
        for path in (part0 + ".hatchet", base + ".part_1.hatchet"):
            for metric in ["f", "i", "fv", "iv"]:
                if not any(metric in v for v in expected.values()):
                    continue
                r = subprocess.run([VIEWER, "-m", metric, path], capture_output=True)
                assert r.returncode == 0, r.stderr.decode(errors="replace")
            r = subprocess.run([VIEWER, path], capture_output=True)
            assert r.returncode == 0, r.stderr.decode(errors="replace")
        r = subprocess.run([VIEWER, "--diff-profile", part0 + ".hatchet",
                            base + ".part_1.hatchet"], capture_output=True)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        # Per-rank files through the compact rank reader and the merge writer: two ranks of the
        # same tree sum to twice each value.
        ranks = [f"{base}.rank{i}.hatchet" for i in (0, 1)]
        for rank in ranks:
            shutil.copyfile(part0 + ".hatchet", rank)
        r = subprocess.run([VIEWER, "merge", *ranks, "-o", base + ".merged.hatchet"],
                           capture_output=True)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        with open(base + ".merged.hatchet") as f:
            json.load(f)
        merged = profiles.read(base + ".merged.hatchet")
        for scope, values in expected.items():
            own = merged.find(("case", scope)).exclusive
            for k, v in values.items():
                want, read = 2 * as_double(v), own.get(k)
                if math.isnan(want):
                    assert isinstance(read, float) and math.isnan(read), (scope, k, read)
                else:
                    assert read == want, (scope, k, read, want)

    try:
        import hatchet as ht
    except Exception:
        ht = None
    # llnl-hatchet cannot read a frame whose name is empty (its literal reader then looks for a
    # "name" key beside "frame": KeyError), in Triton's files as in ours; left to the lead.
    if ht is not None and "" not in expected:
        with open(part0 + ".hatchet") as f:
            literal = json.load(f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gf = ht.GraphFrame.from_literal(literal[0:1])
        assert len(gf.dataframe) >= len(expected) + 2  # ROOT, case, the scopes


def test_the_absent_marker_matches_the_reader():
    """profiles.py's copy of the reader's "absent" NaN payload (src/viewer/profile.h)."""
    p = profiles.parse('[{"frame":{"name":"ROOT"},"metrics":{},"children":['
                       '{"frame":{"name":"a"},"metrics":{"m":1}},'
                       '{"frame":{"name":"b"},"metrics":{"m":null}},'
                       '{"frame":{"name":"c"},"metrics":{}}]},{}]')
    raw = p._stored(p.metric_names.index("m"))
    assert struct.pack("<d", raw[3]) == profiles._ABSENT
    assert math.isnan(raw[2]) and struct.pack("<d", raw[2]) != profiles._ABSENT
    assert p.column("m")[1:] == [1, p.column("m")[2], None] and math.isnan(p.column("m")[2])
