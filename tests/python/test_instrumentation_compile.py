"""Instrumented kernels compile on this machine (no GPU) for GPUTarget("cuda", 90, 32).

Runs against whichever Triton is importable: 3.6 installed, 3.9 with PYTHONPATH=build/triton39.
Checks what each Triton version's plumbing needs: the passes are registered where that version
looks for them, the compiled kernel carries profile_scratch_size and proton.record ops, a kernel
compiled with no session carries none, and nothing stays installed after the session.
"""

import os
import pathlib

import pytest

triton = pytest.importorskip("triton")

import proton  # noqa: E402
from proton.hooks import instrumentation as instr  # noqa: E402

from instr_stub_driver import stub_driver  # noqa: E402

pytestmark = pytest.mark.triton


def _kernels():
    import triton.language as tl
    import proton.language as pl

    @triton.jit
    def regions(x, N: tl.constexpr):
        pl.enter_scope("load")
        v = tl.load(x + tl.arange(0, N))
        pl.exit_scope("load")
        with pl.scope("store"):
            tl.store(x + tl.arange(0, N), v + 1)

    return regions


def _compile(fn, cache_dir, **opts):
    from triton.backends.compiler import GPUTarget
    from triton import knobs

    os.environ["TRITON_CACHE_DIR"] = str(cache_dir)
    knobs.cache.dir = str(cache_dir)
    src = triton.compiler.ASTSource(fn=fn, signature={"x": "*fp32"}, constexprs={"N": 128})
    options = {"num_warps": 4, "instrumentation_mode": knobs.compilation.instrumentation_mode}
    options.update(opts)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


@pytest.fixture
def lang():
    import proton.language as pl

    pl.enable_semantic("triton")
    yield pl
    pl.disable_semantic("triton")


def _triton_state():
    from triton import knobs
    from triton.runtime import _allocation
    from triton.backends import backends

    state = {"mode": knobs.compilation.instrumentation_mode,
             "allocator": _allocation._profile_allocator.get(),
             "compiler": getattr(backends["nvidia"].compiler, "instrumentation", None)}
    try:
        from triton._instrumentation import _callbacks
        state["registered"] = dict(_callbacks)
    except ImportError:
        pass
    return state


def test_instrumented_kernel_carries_records_and_scratch(tmp_path, lang):
    fn = _kernels()
    with stub_driver():
        before = _triton_state()
        session = proton.start(str(tmp_path / "p"), backend="instrumentation")
        try:
            k = _compile(fn, tmp_path / "cache_on")
        finally:
            proton.finalize(session)
        after = _triton_state()
        plain = _compile(fn, tmp_path / "cache_off")
    assert k.metadata.profile_scratch_size == 8320  # 4 warps, global buffer: header + 4 x 2 KB
    assert k.metadata.profile_scratch_align == 128
    assert 'proton.record start "load"' in k.asm["ttgir"]
    assert 'proton.record end "store"' in k.asm["ttgir"]
    assert "globaltimer" in k.asm["llir"]
    assert plain.metadata.profile_scratch_size == 0
    assert "proton.record" not in plain.asm["ttgir"]
    assert after == before  # passes, allocator, mode: all restored


def test_plumbing_detected_by_feature(tmp_path, lang):
    from triton._C.libtriton import proton as tp
    from triton.backends import backends

    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation")
        try:
            try:
                from triton._instrumentation import _callbacks
            except ImportError:
                _callbacks = None
            if _callbacks is not None:  # 3.9: registered instrumentation points
                assert ("ttgpuir-to-llvmir", "nvidia") in _callbacks
                assert ("llvmir-to-llvm", "nvidia") in _callbacks
                assert not hasattr(tp, "add_allocate_proton_global_scratch_buffer")
            else:  # 3.6 / 3.8: the backend's compiler attribute
                assert hasattr(backends["nvidia"].compiler.instrumentation, "patch")
                assert hasattr(tp, "add_allocate_proton_global_scratch_buffer")
            from triton.runtime import _allocation
            assert _allocation._profile_allocator.get() is proton._proton.instr_alloc
        finally:
            proton.finalize(session)


@pytest.mark.parametrize("num_warps", [4, 8])
def test_the_default_global_buffer_gives_each_warp_2_kb(tmp_path, lang, num_warps):
    # Triton's own global default is 16 KB a warp: 8.7 MB of scratch per launch of a 132-CTA
    # kernel, so the pool held seven launches. Ours follows the kernel's warps, in global memory
    # (no shared memory taken from the kernel).
    fn = _kernels()
    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation")
        try:
            k = _compile(fn, tmp_path / "cache", num_warps=num_warps)
        finally:
            proton.finalize(session)
    assert k.metadata.profile_scratch_size == 128 + 2048 * num_warps
    assert k.metadata.shared == 0


@pytest.mark.parametrize("mode_text, scratch", [
    ("default:buffer_size=4096", 4096 + 56),
    ("default:buffer_type=global", None),
    ("default:sampling_strategy=selective:sampling_options=0,2", None),
])
def test_modes_reach_the_passes(tmp_path, lang, mode_text, scratch):
    fn = _kernels()
    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation", mode=mode_text)
        try:
            k = _compile(fn, tmp_path / "cache")
        finally:
            proton.finalize(session)
    assert k.metadata.profile_scratch_size > 0
    if scratch is not None:
        assert k.metadata.profile_scratch_size in (scratch, 4224)
    if "global" in mode_text:
        assert k.metadata.shared == 0 or k.metadata.profile_scratch_size > 60000


def test_many_sessions_in_one_process_leave_nothing_behind(tmp_path, lang):
    fn = _kernels()
    with stub_driver():
        before = _triton_state()
        for i in range(3):
            s1 = proton.start(str(tmp_path / f"a{i}"), backend="instrumentation")
            s2 = proton.start(str(tmp_path / f"b{i}"), backend="instrumentation")
            proton.finalize(s1)
            from proton import _instr_state
            assert _instr_state.on  # s2 still instruments
            proton.finalize(s2)
            assert not _instr_state.on
            assert _triton_state() == before
        plain = _compile(fn, tmp_path / "cache_plain")
    assert plain.metadata.profile_scratch_size == 0


def test_sessions_with_different_modes_are_refused(tmp_path):
    with stub_driver():
        proton.start(str(tmp_path / "a"), backend="instrumentation")
        try:
            with pytest.raises(ValueError, match="differs"):
                proton.start(str(tmp_path / "b"), backend="instrumentation",
                             mode="default:buffer_size=1024")
        finally:
            proton.finalize()


def test_a_later_session_may_use_another_mode(tmp_path, lang):
    # Only sessions that run together share Triton's passes: once the first is finalized, the
    # next compiles with its own mode (here another buffer size, then the default again).
    fn = _kernels()
    sizes = []
    with stub_driver():
        for i, mode in enumerate([None, "default:buffer_size=4096", None]):
            s = proton.start(str(tmp_path / f"p{i}"), backend="instrumentation", mode=mode)
            try:
                sizes.append(_compile(fn, tmp_path / f"cache{i}").metadata.profile_scratch_size)
            finally:
                proton.finalize(s)
    assert sizes[1] in (4096 + 56, 4224) and sizes[0] == sizes[2] != sizes[1]


def test_enable_host_buffer_is_refused_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(instr.InstrumentationHook, "enable_host_buffer", True)
    with stub_driver():
        with pytest.raises(ValueError, match="enable_host_buffer is not supported"):
            proton.start(str(tmp_path / "p"), backend="instrumentation")
        assert instr.InstrumentationHook.host_buffer is None
        monkeypatch.setattr(instr.InstrumentationHook, "enable_host_buffer", False)
        s = proton.start(str(tmp_path / "q"), backend="instrumentation")  # nothing left behind
        proton.finalize(s)


def test_the_mode_knob_is_short_and_names_the_mode(tmp_path):
    # Triton formats its launch options, this knob included, into a string at every launch:
    # the mode's full text (~250 characters) cost each launch ~0.2-0.3 us there.
    from triton import knobs

    keys = []
    with stub_driver():
        for mode in (None, "default:buffer_size=1024"):
            s = proton.start(str(tmp_path / "a"), backend="instrumentation", mode=mode)
            try:
                keys.append(knobs.compilation.instrumentation_mode)
            finally:
                proton.finalize(s)
    assert all(k.startswith("proton-") and len(k) <= 24 for k in keys), keys
    assert keys[0] != keys[1]  # another mode compiles another kernel


def test_kernel_time_is_asked_for_only_with_the_knob(tmp_path, monkeypatch):
    # Instrumentation sessions keep region cycles only (triton.profiler's output, no CUPTI
    # kernel records on their launches) unless PROTON_INSTR_KERNEL_TIME=1; other sessions time
    # kernels as always, and both kinds run together.
    import importlib

    profile = importlib.import_module("proton.profile")  # the module, not proton.profile()
    asked = []
    real = profile._proton.start

    def start(*args, **kwargs):
        # What the session runs with: the engine adds PROTON_INSTR_KERNEL_TIME to the request.
        asked.append(profile._proton.session_options(*args, **kwargs)["kernel_records"])
        return real(*args, **kwargs)

    monkeypatch.setattr(profile._proton, "start", start)
    with stub_driver():
        monkeypatch.delenv("PROTON_INSTR_KERNEL_TIME", raising=False)
        try:
            proton.start(str(tmp_path / "a"), backend="instrumentation")
            proton.start(str(tmp_path / "b"))
            monkeypatch.setenv("PROTON_INSTR_KERNEL_TIME", "1")
            proton.start(str(tmp_path / "c"), backend="instrumentation")
        finally:
            proton.finalize()
        assert not instr._Registry.sessions
    assert asked == [False, True, True]


def test_bad_mode_fails_before_a_session_exists(tmp_path):
    with pytest.raises(ValueError, match="unknown granularity"):
        proton.start(str(tmp_path / "a"), backend="instrumentation", mode="default:granularity=x")
    with pytest.raises(ValueError, match="cannot be combined with selective"):
        proton.start(str(tmp_path / "a"), backend="instrumentation",
                     mode="default:granularity=warp_group:sampling_strategy=selective"
                          ":sampling_options=0,1")
    assert not instr._Registry.sessions


@pytest.mark.parametrize("granularity, leaders", [
    ("warp_group", "0,4,8,12,16,20,24,28"), ("warp_2", ",".join(str(w) for w in range(0, 32, 2))),
    ("warp_group_2", "0,8,16,24"), ("cta", "0")])
def test_coarse_granularity_compiles_as_group_leaders(tmp_path, lang, granularity, leaders):
    # Triton's passes take warp granularity only: a coarser one becomes warp granularity with
    # each group's first warp selected, which Triton's passes do compile.
    from proton import mode as _mode

    m = _mode.parse(f"default:granularity={granularity}").compiled()
    assert m.granularity == _mode.GRANULARITY.WARP and m.sampling_options == leaders
    fn = _kernels()
    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation",
                               mode=f"default:granularity={granularity}")
        try:
            k = _compile(fn, tmp_path / "cache", num_warps=8)
        finally:
            proton.finalize(session)
    assert k.metadata.profile_scratch_size > 0
    assert 'proton.record start "load"' in k.asm["ttgir"]


def test_warp_specialized_gluon_kernel_compiles_with_regions_in_each_partition(tmp_path):
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
    import instrumentation_kernels as K
    from triton.backends.compiler import GPUTarget
    from triton import knobs

    if getattr(K, "gluon", None) is None:
        pytest.skip("this Triton has no Gluon")
    from triton.experimental.gluon._runtime import GluonASTSource
    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation",
                               mode="default:granularity=warp_group")
        try:
            knobs.cache.dir = str(tmp_path / "cache")
            src = GluonASTSource(
                fn=K.warp_specialized, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                constexprs={"ITERS": 4, "BLOCK": 256})
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                               options={"num_warps": 4, "instrumentation_mode":
                                        knobs.compilation.instrumentation_mode})
        finally:
            proton.finalize(session)
    assert k.metadata.num_warps == 8  # the default partition's 4 and the worker's 4
    assert k.metadata.profile_scratch_size > 0
    assert 'proton.record start "consume"' in k.asm["ttgir"]
    assert 'proton.record start "produce"' in k.asm["ttgir"]


def test_events_need_a_newer_triton_or_work(tmp_path, lang):
    import triton.language as tl
    import proton.language as pl

    @triton.jit
    def evented(x, N: tl.constexpr):
        e = pl.allocate_event("copy")
        pl.start_event(e)
        tl.store(x + tl.arange(0, N), tl.load(x + tl.arange(0, N)) + 1)
        pl.end_event(e)

    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation")
        try:
            if pl._HAS_EVENTS:
                k = _compile(evented, tmp_path / "cache_ev")
                assert k.metadata.profile_scratch_size > 0
            else:
                with pytest.raises(Exception) as e:
                    _compile(evented, tmp_path / "cache_ev")
                assert triton.__version__ in str(e.value) and "3.8" in str(e.value)
        finally:
            proton.finalize(session)


def test_language_has_every_public_name_of_tritons():
    """proton.language is a drop-in for triton.profiler.language: each public name Triton's has
    (3.9: Event, allocate_event, start_event, end_event, record_event, ...) is there too; on a
    Triton without event ops the event names exist and raise an error naming the version."""
    import proton.language as pl

    try:
        import triton.profiler.language as tpl
    except ImportError:  # pragma: no cover - a Triton without its profiler
        pytest.skip("triton.profiler.language not importable")
    public = {n for n in dir(tpl) if not n.startswith("_")} - {"tl", "builtin", "flags",
                                                                "triton_proton", "TritonSemantic",
                                                                "GluonSemantic"}
    assert public - set(dir(pl)) == set()
    for name in ("Event", "allocate_event", "start_event", "end_event", "record_event"):
        assert hasattr(pl, name)
    if not pl._HAS_EVENTS:
        with pytest.raises(NotImplementedError, match=triton.__version__.replace(".", r"\.")):
            pl.Event(None)


def test_event_records_carry_the_async_flag_the_decoder_reads(tmp_path, lang):
    """Triton 3.8+: the compiled kernel writes each event record with bit 22 set (0x00400000
    start, 0x80400000 end for event id 0) next to plain region records, and Triton's scope
    analysis names the event's id: the layout and names the decoder and the tree rely on."""
    import triton.language as tl
    import proton.language as pl
    from proton.hooks._instr_passes import _scope_tree

    if not pl._HAS_EVENTS:
        pytest.skip(f"Triton {triton.__version__} has no proton event ops (3.8+)")

    @triton.jit
    def evented(x, N: tl.constexpr):
        e = pl.allocate_event("copy")
        pl.enter_scope("r")
        pl.start_event(e)
        tl.store(x + tl.arange(0, N), tl.load(x + tl.arange(0, N)) + 1)
        pl.end_event(e)
        pl.exit_scope("r")

    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation")
        try:
            k = _compile(evented, tmp_path / "cache_async")
        finally:
            proton.finalize(session)
    ttgir = next(pathlib.Path(tmp_path / "cache_async").rglob("evented.ttgir"))
    names = dict(_scope_tree(str(ttgir))[0])
    assert names == {0: "copy", 1: "r"}
    llir = k.asm["llir"]
    # Record words as i32 constants: event id 0 with the async flag, region id 1 without.
    for word in (0x00400000, 0x80400000, 0x00800000, 0x80800000):
        signed = word - (1 << 32) if word >= 1 << 31 else word
        assert f"i32 {signed}," in llir, (hex(word), llir)


@pytest.mark.parametrize("body, words", [
    ("unclosed", ["'load'", "never closed"]),
    ("mismatched", ["'b'", "without a matching enter_scope", "'a'"]),
])
def test_unpaired_regions_fail_at_compile_time_naming_kernel_and_region(tmp_path, lang, body,
                                                                       words):
    import triton.language as tl
    import proton.language as pl

    @triton.jit
    def unclosed(x, N: tl.constexpr):
        pl.enter_scope("load")
        tl.store(x + tl.arange(0, N), tl.load(x + tl.arange(0, N)) + 1)

    @triton.jit
    def mismatched(x, N: tl.constexpr):
        pl.enter_scope("a")
        pl.exit_scope("b")
        tl.store(x + tl.arange(0, N), 1.0)

    fn = {"unclosed": unclosed, "mismatched": mismatched}[body]
    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation")
        try:
            with pytest.raises(ValueError) as e:
                _compile(fn, tmp_path / "cache")
        finally:
            proton.finalize(session)
    assert f"kernel '{body}'" in str(e.value)
    for w in words:
        assert w in str(e.value)


def test_region_checker_on_text():
    text = ('tt.func public @k() {\n proton.record start "a"\n scf.for {\n'
            ' proton.record start "it"\n proton.record end "it"\n }\n proton.record end "a"\n')
    assert instr.unbalanced_regions(text) == []
    assert instr.unbalanced_regions('proton.record end "x"') == [
        ("x", "exit_scope without a matching enter_scope")]


def test_scope_names_and_parents_from_the_compiled_kernel(tmp_path, lang):
    import triton.language as tl
    import proton.language as pl

    @triton.jit
    def nested(x, N: tl.constexpr):
        with pl.scope("outer"):
            with pl.scope("inner"):
                v = tl.load(x + tl.arange(0, N))
            tl.store(x + tl.arange(0, N), v + 1)

    with stub_driver():
        session = proton.start(str(tmp_path / "p"), backend="instrumentation")
        try:
            k = _compile(nested, tmp_path / "cache")
        finally:
            proton.finalize(session)
    path = tmp_path / "nested.ttgir"
    path.write_text(k.asm["ttgir"])
    names, parents = instr._scope_tree(str(path))
    by_name = {n: i for i, n in names}
    assert set(by_name) == {"outer", "inner"}
    assert (by_name["inner"], by_name["outer"]) in parents
