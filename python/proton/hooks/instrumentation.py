"""Intra-kernel instrumentation (``proton.start(backend="instrumentation", mode=...)``).

Triton's compiler side is reused: its proton dialect passes lower ``pl.enter_scope`` /
``pl.exit_scope`` into clock reads kept in a per-warp buffer. The runtime side is ours, in C++
(``src/backends/instrumentation``): the launcher's profile-scratch allocator is a C++ function
that hands each launch a slice of one device pool (no host round trip), the launch is queued
for copy-back by the CUPTI launch callback at the launch's exit (Triton's launch-exit hook only
where kernel timing is not running), and a consumer thread copies back what the warps wrote,
decodes it and adds region nodes under the kernel's node. The sessions open, drain and close
that runtime themselves (``proton.start``/``finalize`` in the engine); this module holds only
what Triton calls: the compiler passes, the allocator and the kernel-load and launch-exit hooks.

Plumbing differs between Triton versions; each difference is detected by feature:
- passes: ``triton._instrumentation.register_instrumentation`` (3.9) or
  ``backends["nvidia"].compiler.instrumentation`` (3.6 / 3.8);
- ``add_allocate_proton_global_scratch_buffer`` runs where the binding exists (3.6);
- the allocator keeps ``(size, alignment, stream)``, alignment 128.

Everything installed here is undone when the last instrumentation session ends, so sessions
can start and finish many times in one process.
"""

import hashlib
import json
import sys
from typing import Callable, Dict, List, Optional

from .. import _instr_state
from .. import mode as _mode
from ._instr_passes import (PROFILE_BUFFER_ALIGNMENT, _backend_name, _check_regions_stage,
                            _max_shared_mem, _passes, _PassSet, _scope_tree,
                            unbalanced_regions)
from .hook import Hook

__all__ = ["InstrumentationHook", "PROFILE_BUFFER_ALIGNMENT", "add_cuda_regions", "calibrate",
           "loss_report", "stats", "unbalanced_regions"]

def _proton():
    from .. import _proton as p

    return p


def _triton():
    try:
        import triton
    except ImportError as e:  # pragma: no cover - exercised where Triton is absent
        raise RuntimeError(f"backend='instrumentation' needs Triton (import failed: {e})") from e
    return triton


class _Installed:
    """What one activation put into Triton, so deactivation restores exactly that."""

    def __init__(self):
        self.backend = None
        self.registered_points = []  # 3.9
        self.previous_instrumentation = None  # 3.6/3.8
        self.previous_allocator = None
        self.previous_mode = ""
        self.chains = []  # (chain, fn) added to knobs.runtime
        self.previous_stages_hook = None


def mode_key(mode_obj) -> str:
    """What ``knobs.compilation.instrumentation_mode`` holds while a mode is installed: short,
    and distinct per mode (it is only part of Triton's compile-cache key; our passes take the
    mode object). Triton formats its launch options into a string at every launch: the mode's
    full text (~250 characters) cost each launch ~0.2-0.3 us there."""
    digest = hashlib.blake2s(str(mode_obj).encode(), digest_size=6).hexdigest()
    return f"proton-{digest}"


def _chain_add(rt, attr: str, fn, installed: _Installed):
    chain = getattr(rt, attr, None)
    if chain is not None and hasattr(chain, "add"):
        chain.add(fn)
        installed.chains.append((attr, chain, fn))
    elif chain is None:
        setattr(rt, attr, fn)
        installed.chains.append((attr, None, fn))
    else:
        raise RuntimeError(f"another tool installed triton.knobs.runtime.{attr}; cannot chain")


def _chain_remove(rt, installed: _Installed):
    for attr, chain, fn in reversed(installed.chains):
        if chain is not None:
            try:
                chain.remove(fn)
            except ValueError:
                pass
        elif getattr(rt, attr, None) is fn:
            setattr(rt, attr, None)
    installed.chains.clear()


def _kernel_loaded(module, function, name, metadata_group, hash=None, *args):
    """knobs.runtime.kernel_load_end_hook: tells the C++ runtime how to decode this kernel."""
    if not function or not _instr_state.on:
        return
    json_path = next((p for k, p in metadata_group.items() if k.endswith("json")), None)
    ttgir_path = next((p for k, p in metadata_group.items() if k.endswith("ttgir")), None)
    if json_path is None:
        return
    with open(json_path) as f:
        meta = json.load(f)
    scratch = int(meta.get("profile_scratch_size", 0) or 0)
    if scratch == 0:
        return  # compiled without instrumentation (or no records in it)
    names, parents = _scope_tree(ttgir_path)
    options = _Registry.mode
    num_warps = int(meta.get("num_warps", 4))
    compiled = options.compiled() if options else None
    selected = _mode.sampled_warps(compiled.sampling_options) if compiled else []
    # Triton's pass splits the data into one segment per selected warp, also for group leaders
    # past the kernel's last warp (compiled in, never run): those segments stay empty.
    units = [w for w in selected if w < num_warps]
    group = options.group_warps() if options else 1
    _proton().instr_register_kernel(int(function), str(name), num_warps, scratch, units, names,
                                    parents, group, len(selected))


def _make_launch_exit():
    """knobs.runtime.launch_exit_hook: one dict read and one C++ call per launch (the C++ side
    returns at once for launches that got no profile scratch)."""
    exit_c = _proton().instr_launch_exit

    def _launch_exit(metadata):
        data = metadata.data  # LazyDict (3.6 - 3.9): name, function, stream
        exit_c(data["function"] or 0, data["stream"] or 0)

    return _launch_exit


class _Registry:
    """Process-wide: which sessions instrument, and what is installed into Triton for them."""

    sessions: Dict[int, "InstrumentationHook"] = {}
    installed: Optional[_Installed] = None
    mode: Optional[_mode.InstrumentationMode] = None


class InstrumentationHook(Hook):
    """Installs Triton's instrumentation passes and our profile-scratch allocator.

    One mode per process at a time: sessions running together must use the same mode (the
    kernel is compiled once for all of them).
    """

    priority: int = 0
    profile_buffer_alignment: int = PROFILE_BUFFER_ALIGNMENT
    # Triton's hand-off of each launch's raw profile buffer to external tools. Not supported:
    # the buffer stays in the session's device pool and is decoded off the launching thread, so
    # there is no per-launch host copy; setting it makes start() fail with that reason.
    enable_host_buffer: bool = False
    host_buffer = None

    def __init__(self, mode_obj=None):
        parsed = _mode.parse(mode_obj)
        if not isinstance(parsed, _mode.InstrumentationMode):
            raise ValueError(f"backend='instrumentation' takes an instrumentation mode, not {parsed}")
        if (parsed.granularity != _mode.GRANULARITY.WARP
                and parsed.sampling_strategy == _mode.SAMPLING_STRATEGY.SELECTIVE):
            raise ValueError(f"granularity {parsed.granularity.value!r} records each group's "
                             f"first warp: it cannot be combined with selective sampling "
                             f"(sampling_options={parsed.sampling_options!r}); use one or the other")
        if parsed.buffer_strategy != _mode.BUFFER_STRATEGY.CIRCULAR:
            raise ValueError(f"buffer_strategy {parsed.buffer_strategy.value!r}: Triton's passes "
                             f"implement only 'circular'")
        self.mode = parsed

    # Sessions -------------------------------------------------------------------------------
    def attach(self, session: int) -> None:
        if InstrumentationHook.enable_host_buffer:
            raise ValueError("InstrumentationHook.enable_host_buffer is not supported: Proton "
                             "decodes each launch's profile buffer from its device pool off the "
                             "launching thread and keeps no per-launch host copy (the regions "
                             "are in the session's tree and trace)")
        if _Registry.sessions and _Registry.mode != self.mode:
            raise ValueError(f"instrumentation mode {self.mode} differs from the running "
                             f"session's {_Registry.mode}; finalize it first")
        if not _Registry.sessions:
            _Registry.mode = self.mode
            self.activate()
        _Registry.sessions[session] = self

    def detach(self, session: Optional[int]) -> None:
        if session is None:
            _Registry.sessions.clear()
        else:
            _Registry.sessions.pop(session, None)
        if not _Registry.sessions:
            self.deactivate()
            _Registry.mode = None

    # Hook interface -------------------------------------------------------------------------
    def activate(self) -> None:
        if _Registry.installed is not None:
            return
        triton = _triton()
        from triton import knobs
        from triton.runtime import _allocation

        backend = _backend_name(triton)
        inst = _Installed()
        inst.backend = backend
        # Coarser granularities compile as warp granularity with each group's first warp
        # selected (Triton's passes implement warp granularity only): mode.compiled().
        to_llvmir, to_llvm = _passes(triton, self.mode.compiled(), backend,
                                     _max_shared_mem(triton))
        try:
            from triton._instrumentation import register_instrumentation
        except ImportError:
            register_instrumentation = None
        if register_instrumentation is not None:  # 3.9
            from triton._C.libtriton import proton as tp

            for point, cb in (("load-dialects", tp.load_dialects), ("ttgpuir-to-llvmir", to_llvmir),
                              ("llvmir-to-llvm", to_llvm)):
                register_instrumentation(point=point, backend=backend, callback=cb)
                inst.registered_points.append(point)
        else:  # 3.6 / 3.8
            from triton.backends import backends

            compiler = backends[backend].compiler
            inst.previous_instrumentation = getattr(compiler, "instrumentation", None)
            compiler.instrumentation = _PassSet({"ttgpuir_to_llvmir": to_llvmir,
                                                 "llvmir_to_llvm": to_llvm})
        inst.previous_allocator = _allocation._profile_allocator.get()
        _allocation.set_profile_allocator(_proton().instr_alloc)
        inst.previous_mode = knobs.compilation.instrumentation_mode
        knobs.compilation.instrumentation_mode = mode_key(self.mode)
        _chain_add(knobs.runtime, "kernel_load_end_hook", _kernel_loaded, inst)
        # With kernel timing running, the CUPTI launch callback queues each launch: no Python
        # runs per launch but the allocator (docs/instrumentation.md, "Cost").
        if not _proton().instr_exit_via_callback(True):
            _chain_add(knobs.runtime, "launch_exit_hook", _make_launch_exit(), inst)
        if hasattr(knobs.runtime, "add_stages_inspection_hook"):
            inst.previous_stages_hook = knobs.runtime.add_stages_inspection_hook
            knobs.runtime.add_stages_inspection_hook = _check_regions_stage(
                inst.previous_stages_hook)
        _Registry.installed = inst
        _instr_state.on = True

    def deactivate(self) -> None:
        inst = _Registry.installed
        if inst is None:
            return
        _instr_state.on = False
        _proton().instr_exit_via_callback(False)
        from triton import knobs
        from triton.runtime import _allocation

        _chain_remove(knobs.runtime, inst)
        if hasattr(knobs.runtime, "add_stages_inspection_hook"):
            knobs.runtime.add_stages_inspection_hook = inst.previous_stages_hook
        knobs.compilation.instrumentation_mode = inst.previous_mode
        _allocation.set_profile_allocator(inst.previous_allocator)
        if inst.registered_points:
            from triton._instrumentation import unregister_instrumentation

            for point in inst.registered_points:
                unregister_instrumentation(point=point, backend=inst.backend)
        else:
            from triton.backends import backends

            backends[inst.backend].compiler.instrumentation = inst.previous_instrumentation
        _Registry.installed = None

    def init_handle(self, module, function, name, metadata_group, hash=None) -> None:
        _kernel_loaded(module, function, name, metadata_group, hash)

    def exit(self, metadata) -> None:
        data = getattr(metadata, "data", metadata)
        _proton().instr_launch_exit(int(data.get("function") or 0), int(data.get("stream") or 0))


def attach(session: int) -> None:
    """Called by proton.start for every new session: an instrumentation session (the engine has
    checked its mode and opened its pool) gets Triton's compiler hooks, installed once for all
    instrumentation sessions."""
    mode_text = _proton().instrumentation_mode(session)
    if mode_text is None:
        return
    InstrumentationHook(mode_text or None).attach(session)
    _stats_at_start[session] = dict(_proton().instr_stats())


# The runtime's counters when each open session started: finalize says what was lost since.
_stats_at_start: Dict[int, dict] = {}


def loss_report(before: dict, after: dict, mode_obj=None) -> List[str]:
    """What the runtime lost between two stats() snapshots, one line each with what to change;
    empty when nothing was lost. Counters are process-wide: sessions running together share
    them. Launches that waited long for a full pool lost nothing but are said too: a GPU-bound
    loop of large grids ran 2-3% slower with a pool of ~30 of its launches."""
    d = {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in _COUNTERS}
    d["size"] = getattr(mode_obj, "buffer_size", 0) or "its default"
    d["largest"] = max(1, -(-int(after.get("largest_overflow_bytes", 0)) // (1 << 20)))
    lines = [text.format(**d) for key, text in _LOSSES if d[key]]
    waited_ms = (int(after.get("full_wait_ns", 0)) - int(before.get("full_wait_ns", 0))) / 1e6
    if waited_ms >= _WAIT_HINT_MS:
        lines.append(f"launches waited {waited_ms:.0f} ms in all for the device pool to drain "
                     "(the GPU was a whole pool behind the program); nothing was lost, but a "
                     "larger PROTON_INSTR_POOL_MB (default 256) lets them queue as they would "
                     "without the profiler")
    return lines


_WAIT_HINT_MS = 100  # full-pool waits worth a line at finalize


_COUNTERS = ("overflows", "wrapped_units", "overwritten_events", "unmatched_events",
             "corrupt_ctas", "copy_errors", "abandoned_slices", "unknown_kernels",
             "other_context_launches", "graph_dropped")
# (counter, what it means and what to change), in the order they are said.
_LOSSES = (
    ("overflows", "{overflows} launches found the device pool full and kept no regions (the "
                  "largest asked for {largest} MB; raise PROTON_INSTR_POOL_MB, default 256)"),
    ("wrapped_units", "{wrapped_units} warp buffers wrapped: their oldest {overwritten_events} "
                      "events were overwritten, so those warps' first regions are missing (raise "
                      "the mode's buffer_size, now {size} bytes per CTA)"),
    ("unmatched_events", "{unmatched_events} region events had no partner in what was recorded "
                         "(an end whose start was overwritten, a region left open, or an "
                         "async event started or ended but not both)"),
    ("corrupt_ctas", "{corrupt_ctas} CTA buffers could not be read and were skipped "
                     "(stats()['errors'] says why)"),
    ("copy_errors", "{copy_errors} launches' records could not be copied back (stats()['errors'] "
                    "names the driver call)"),
    ("abandoned_slices", "{abandoned_slices} launches held their buffer for over 2 s before "
                         "launching and were given up"),
    ("unknown_kernels", "{unknown_kernels} launches were of kernels whose record layout was never "
                        "registered (not loaded through Triton while a session ran): not decoded"),
    ("other_context_launches", "{other_context_launches} launches ran on another GPU than the one "
                               "the session's pool is on and kept no regions (one device per "
                               "process: profile each device from its own process)"),
    ("graph_dropped", "{graph_dropped} launches captured into CUDA graphs found the device memory "
                      "set aside for captured launches used up (the size of a pool: raise "
                      "PROTON_INSTR_POOL_MB, default 256) and keep no regions at their replays"),
)


def detach(session: Optional[int]) -> Callable[[], None]:
    """Called by proton.finalize before the engine drains the session's regions into its tree
    and frees its pool: takes Triton's compiler hooks out with the last instrumentation session.
    Returns what says, once the engine has drained, what the session lost."""
    if session is None:
        ids = list(_Registry.sessions)
    elif session in _Registry.sessions:
        ids = [session]
    else:
        return lambda: None
    mode_obj = _Registry.mode
    for sid in ids:
        _Registry.sessions[sid].detach(sid)
    starts = {sid: _stats_at_start.pop(sid, None) for sid in ids}

    def report() -> None:
        after = _proton().instr_stats()
        for sid, before in starts.items():
            if before is None:
                continue
            # Never a silent loss: what the session did not get is said where it is finalized.
            for line in loss_report(before, after, mode_obj):
                print(f"proton: instrumentation session {sid}: {line}", file=sys.stderr)

    return report


def is_instrumented(session: int) -> bool:
    return session in _Registry.sessions


def stats() -> dict:
    """Counters of the C++ runtime: launches, bytes, overflows, decode errors, and the per-record
    cost in cycles where ``calibrate()`` measured it."""
    out = dict(_proton().instr_stats())
    if _calibration:
        out["record_cycles"] = dict(_calibration)
    return out


def add_cuda_regions(kernel_name: str, raw: bytes, *, num_warps: int, scratch_bytes: int,
                     scope_names: Dict[int, str], scope_parents: Optional[Dict[int, int]] = None,
                     warps=None, clock_khz: int = 0) -> dict:
    """Adds the regions of a kernel that recorded them itself (``include/proton/instrument.cuh``,
    or a profile-scratch buffer dumped from a Triton kernel) under ``kernel_name`` at the
    current scope of every active session. ``raw``: the kernel's whole scratch, copied to the
    host. ``clock_khz``: the SM clock, to place regions on a trace (0: tree only).
    Returns the decoder's counts and errors (bad bytes never raise)."""
    return dict(_proton().instr_add_host(
        str(kernel_name), bytes(raw), int(num_warps), int(scratch_bytes),
        [int(w) for w in (warps or [])], [(int(i), str(n)) for i, n in scope_names.items()],
        [(int(i), int(p)) for i, p in (scope_parents or {}).items()], int(clock_khz)))


_calibration: Dict[str, float] = {}


def calibrate(mode_obj=None) -> Dict[str, float]:
    """Measures once per process what one record costs on this GPU, in cycles.

    Runs a kernel of 32 empty regions per warp (an end right after its start): each such
    region's cycles are the cost of one record (clock read plus buffer store) under ``mode``.
    A region that encloses N nested records over-counts by about N x ``record_cycles``.
    Needs torch and a GPU; the result is kept and reported by ``stats()``.
    """
    key = str(_mode.parse(mode_obj))
    if key in _calibration:
        return {"record_cycles": _calibration[key], "mode": key}
    import torch
    from triton.runtime import _allocation

    from .. import language as pl
    from ._calibration_kernel import proton_calibration

    bufs = []

    def alloc(size, alignment, stream):
        bufs.append(torch.zeros(size, dtype=torch.uint8, device="cuda"))
        return bufs[-1]

    was_on = _Registry.installed is not None
    hook = InstrumentationHook(mode_obj)
    if not was_on:
        hook.activate()
    previous = _allocation._profile_allocator.get()
    semantic_added = False
    try:
        from triton.language.semantic import TritonSemantic  # the kernel is @triton.jit

        semantic_added = TritonSemantic not in pl._SEMANTICS
        pl._SEMANTICS.add(TritonSemantic)
        _allocation.set_profile_allocator(alloc)
        out = torch.empty(8, device="cuda", dtype=torch.int32)
        k = proton_calibration[(8,)](out, num_warps=4)
        _proton()._profiler_host_calls(True)  # Proton's own wait and copy, not the program's
        try:
            torch.cuda.synchronize()
            raw = bufs[-1].cpu().numpy().tobytes()
        finally:
            _proton()._profiler_host_calls(False)
        d = _proton().instr_decode(raw, 4, int(k.metadata.profile_scratch_size), [])
        cycles = sorted(s[5] - s[4] for s in d["samples"])
        value = float(cycles[len(cycles) // 2]) if cycles else float("nan")
    finally:
        _allocation.set_profile_allocator(previous)
        if semantic_added:
            pl._SEMANTICS.discard(TritonSemantic)
        if not was_on:
            hook.deactivate()
    _calibration[key] = value
    return {"record_cycles": value, "mode": key}
