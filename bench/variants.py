"""The profilers under comparison, each behind the same four calls.

`load()` imports what the variant needs (timed apart from start, and raises `Unavailable`
when the variant cannot run here), `start(out_dir)` begins profiling, `scope(name)` marks a
region the way a user of that profiler would, and `stop()` ends profiling with its output
written under out_dir (the child measures its size). `kernels_seen(out_dir)` reads the output
back where that is cheap: a profiler that silently recorded nothing must not look free.
"""

import contextlib
import json
import os


class Unavailable(Exception):
    """This variant cannot run on this machine or build; the run records why and goes on."""


class Variant:
    name = ""

    def load(self):
        pass

    def start(self, out_dir):
        pass

    def scope(self, name):
        return contextlib.nullcontext()

    def stop(self):
        pass

    def kernels_seen(self, out_dir):
        return None

    def notes(self):
        """Anything the variant measured of itself over the run (a dict), or None."""
        return None


class NoProfiler(Variant):
    name = "none"


class CuptiFloor(Variant):
    """CUPTI kernel-activity tracing alone, no callbacks or attribution: the cost floor."""

    name = "floor"

    def load(self):
        # The floor is an instrument, not product: it lives in the bench module.
        self.lib = bench_module()

    def start(self, out_dir):
        self.lib._floor_start()

    def stop(self):
        self.lib._floor_stop()

    def kernels_seen(self, out_dir):
        # Kernel records the floor walked since its start (counted until the next start): a
        # floor that traced nothing would look free.
        counts = getattr(self.lib, "_floor_counts", None)
        return counts()["kernels"] if counts else None


class CuptiFloorCallbacks(CuptiFloor):
    """The floor plus a CUPTI subscriber on exactly the launch callbacks proton enables, each
    returning at once: what CUPTI's callback dispatch costs any profiler that tags launches with
    a context. proton above this row is our own work; this row above `floor` is CUPTI's."""

    name = "floor_cb"
    options = {"callbacks": "profiler"}

    def load(self):
        super().load()

    def start(self, out_dir):
        self.lib._floor_start(**self.options)


def _subclass(base, name, doc, **attrs):
    """A variant that differs from `base` only in its name and class attributes."""
    return type(name, (base,), {"name": name, "__doc__": doc, **attrs})


# The floor's other ways of learning which launch made a kernel (bench/native/cupti_floor.h).
FLOOR_VARIANTS = [
    _subclass(CuptiFloorCallbacks, "floor_cb_all", "The floor plus every launch callback proton "
              "knows, runtime and driver (proton's choice before CUDA 13), doing nothing.",
              options={"callbacks": "all"}),
    _subclass(CuptiFloorCallbacks, "floor_cb_rt", "The floor plus proton's runtime-API launch "
              "callbacks only, doing nothing.", options={"callbacks": "runtime"}),
    _subclass(CuptiFloorCallbacks, "floor_cb_drv", "The floor plus proton's driver-API launch "
              "callbacks only, doing nothing.", options={"callbacks": "driver"}),
    _subclass(CuptiFloorCallbacks, "floor_flush", "The floor plus proton's plain flush every "
              "20 ms from a thread of its own: handing partly filled buffers over, no "
              "attribution.", options={"flush_ms": 20}),
    _subclass(CuptiFloorCallbacks, "floor_api", "The floor plus, instead of callbacks, CUPTI "
              "activity records of the launch APIs and external-correlation records.",
              options={"api_records": "all", "external": True}),
]


class Proton(Variant):
    """This project: shadow context, tree data."""

    name = "proton"
    module = "proton"
    context = "shadow"
    hook = None
    env = {}  # environment the profiler reads at start (diagnostic knobs)

    def load(self):
        self.lib = _import(self.module)

    def start(self, out_dir):
        options = {"hook": self.hook} if self.hook else {}
        # PROTON_DIAG_CALLBACK names the bench module's callback probe (bench/native), handed to
        # proton through its subscriber hook; every other variant gets proton's own callback.
        set_callback_probe(self.env.get("PROTON_DIAG_CALLBACK", ""))
        with _environment(self.env):
            self.lib.start(os.path.join(out_dir, "profile"), context=self.context, data="tree",
                           **options)

    def scope(self, name):
        return self.lib.scope(name)

    def stop(self):
        self.lib.finalize()

    def kernels_seen(self, out_dir):
        with open(os.path.join(out_dir, "profile.hatchet")) as f:
            return _hatchet_kernel_count(json.load(f)[0])


class ProtonTrace(Proton):
    """This project recording a timeline (data="trace"): launches carry a CPU timestamp and
    every kernel becomes a trace event streamed to disk. Target: within 0.1 µs/launch of
    the tree variant."""

    name = "proton_trace"

    def start(self, out_dir):
        self.lib.start(os.path.join(out_dir, "profile"), context="shadow", data="trace")

    def kernels_seen(self, out_dir):
        with open(os.path.join(out_dir, "profile.chrome_trace")) as f:
            events = json.load(f)["traceEvents"]
        return sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "kernel")


class ProtonGraph(Proton):
    """This project in graph-level mode (mode="graph"): one record per CUDA graph launch
    instead of one per kernel node. Target on `cuda_graph`: at most 1.05x `none`. Its
    kernels_seen counts graph launches, not the kernels inside them."""

    name = "proton_graph"

    def start(self, out_dir):
        self.lib.start(os.path.join(out_dir, "profile"), context="shadow", data="tree",
                       mode="graph")


# Proton with one diagnostic knob set at start (docs/cupti.md): what each choice costs.
PROTON_KNOB_VARIANTS = [
    _subclass(Proton, "proton_allcb", "Runtime launch callbacks on as well as the driver's.",
              env={"PROTON_LAUNCH_CALLBACKS": "all"}),
    _subclass(Proton, "proton_bufthread", "Completed buffers attributed on a thread of its own.",
              env={"PROTON_BUFFER_THREAD": "1"}),
    _subclass(Proton, "proton_noflush", "No periodic flush check at all.",
              env={"PROTON_FLUSH_INTERVAL_MS": "0"}),
    _subclass(Proton, "proton_flush20", "A flush every 20 ms whatever the tags held (the "
              "default before the flush policy).", env={"PROTON_FLUSH_TAGS": "0"}),
    _subclass(Proton, "proton_host", "Host calls (synchronizes, blocking copies) timed, as "
              "proton --advise does: this row minus proton is what their callbacks cost the loop.",
              env={"PROTON_HOST_CALLS": "1"}),
    _subclass(Proton, "proton_emptycb", "The launch callbacks enabled but returning at once: "
              "proton minus this row is our callback body, this row minus floor_cb the rest.",
              env={"PROTON_DIAG_CALLBACK": "empty"}),
]


class ProtonTimed(Proton):
    """This project with its callback body timed by the TSC inside real launches
    (PROTON_DIAG_CALLBACK=timed): `notes()` gives the mean ns per API enter and exit."""

    name = "proton_timed"
    env = {"PROTON_DIAG_CALLBACK": "timed"}

    def load(self):
        super().load()
        self.timing = bench_module().callback_timing
        self.samples = []

    def stop(self):
        super().stop()
        t = self.timing()
        if t["enter_calls"]:
            self.samples.append(t)

    def notes(self):
        if not self.samples:
            return None
        mid = len(self.samples) // 2
        return {k: sorted(s[k] for s in self.samples)[mid]
                for k in ("enter_ns", "exit_ns", "probe_ns", "enter_calls", "exit_calls")}


class ProtonPaused(Proton):
    """This project started and at once deactivated: CUPTI traces every kernel and proton
    processes the records, but the launch callbacks are off. Splits proton's cost above the
    floor into what runs beside the launches (this row minus floor) and what runs in them
    (proton minus this row). Attributes nothing, so it sees no kernels."""

    name = "proton_paused"

    def start(self, out_dir):
        super().start(out_dir)
        self.lib.deactivate()

    def kernels_seen(self, out_dir):
        return None


class TritonProfiler(Proton):
    """Proton as shipped inside Triton (`triton.profiler`)."""

    name = "triton"
    module = "triton.profiler"


# Python call paths (context="python") and Triton launch metadata (hook="triton"), for this
# project and for triton.profiler.
CONTEXT_VARIANTS = [
    _subclass(Proton, "proton_python", "This project with Python call paths.", context="python"),
    _subclass(Proton, "proton_hook", "This project with Triton launch metadata.", hook="triton"),
    _subclass(TritonProfiler, "triton_python", "triton.profiler with Python call paths.",
              context="python"),
    _subclass(TritonProfiler, "triton_hook", "triton.profiler with Triton launch metadata.",
              hook="triton"),
]


class TorchProfiler(Variant):
    """torch.profiler with CUDA activity only; its output is a Chrome trace."""

    name = "torch"

    def load(self):
        from torch import profiler

        self.lib = profiler

    def start(self, out_dir):
        self.out_dir = out_dir
        self.prof = self.lib.profile(activities=[self.lib.ProfilerActivity.CUDA])
        self.prof.start()

    def scope(self, name):
        return self.lib.record_function(name)

    def stop(self):
        self.prof.stop()
        self.prof.export_chrome_trace(os.path.join(self.out_dir, "trace.json"))


@contextlib.contextmanager
def _environment(values):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _hatchet_kernel_count(node):
    metrics = node.get("metrics", {})
    own = int(metrics.get("count", 0)) if "device_id" in metrics else 0
    return own + sum(_hatchet_kernel_count(c) for c in node.get("children", []))


def bench_module():
    """The bench-only native module (bench/native: CUPTI floors, callback probe), built by
    scripts/gpu-test into build/bench; never part of the installed package."""
    import importlib
    import pathlib
    import sys

    built = pathlib.Path(__file__).resolve().parent.parent / "build" / "bench" / "bench" / "native"
    if built.is_dir() and str(built) not in sys.path:
        sys.path.append(str(built))
    try:
        return importlib.import_module("_proton_bench")
    except ImportError as e:
        raise Unavailable(f"the bench module _proton_bench is not built (cmake "
                          f"-DPROTON_BUILD_BENCH=ON, see bench/native/CMakeLists.txt): {e}") from e


def set_callback_probe(mode):
    """Makes the next proton.start subscribe the bench module's callback probe ("timed",
    "empty") around proton's own callback, or proton's own callback ("")."""
    from proton import _proton

    if not hasattr(_proton, "_set_subscriber_callback"):
        if mode:
            raise Unavailable("this build of proton has no subscriber-callback hook (a "
                              "diagnostics build has: -Ccmake.define.PROTON_BUILD_DIAGNOSTICS=ON)")
        return
    if not mode:
        _proton._set_subscriber_callback(0)
        return
    probe = bench_module().callback_probe(mode, _proton._subscriber_callback_address())
    _proton._set_subscriber_callback(probe)


def _import(module):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise Unavailable(f"cannot import {module}: {e}") from e


ALL = {
    v.name: v
    for v in (NoProfiler, CuptiFloor, CuptiFloorCallbacks, *FLOOR_VARIANTS, Proton,
              *PROTON_KNOB_VARIANTS, ProtonTimed, ProtonPaused, ProtonTrace, TritonProfiler, TorchProfiler,
              *CONTEXT_VARIANTS)
}
ALL[ProtonGraph.name] = ProtonGraph  # after the others: an extra mode of proton


# Graphs instantiated before start in mode="graph" (docs/graphs.md): the run must cost what the
# default mode costs. These rows tell apart what CUPTI and what we add if it does not.
class ProtonGraphEager(ProtonGraph):
    """mode="graph" with GRAPH_TRACE enabled at start, as before the lazy trace
    (PROTON_GRAPH_TRACE_EAGER=1): a graph from before start makes the first replay disable it
    again. Compare with `proton_graph` (never enabled there) and `proton`."""

    name = "proton_graph_eager"

    def start(self, out_dir):
        with _environment({"PROTON_GRAPH_TRACE_EAGER": "1"}):
            super().start(out_dir)


class CuptiFloorGraphToggled(CuptiFloor):
    """The floor with GRAPH_TRACE enabled at start and disabled again before the first launch
    (through the libcupti this process loaded): what the eager fallback leaves CUPTI with, with
    nothing of ours. Above `floor`: the cost is CUPTI's own, left by enabling the trace once."""

    name = "floor_graph_off"

    def start(self, out_dir):
        import ctypes

        self.lib._floor_start(graph_level=True)
        # The floor reuses a libcupti that torch mapped already (library_search.h), so one is
        # mapped; calling into a second, idle copy could attach it to the driver as well.
        libs = _loaded_libraries("libcupti")
        if len(libs) != 1:
            raise Unavailable(f"needs exactly one libcupti mapped, found {libs}")
        kind_graph_trace = 51  # CUPTI_ACTIVITY_KIND_GRAPH_TRACE
        rc = ctypes.CDLL(libs[0]).cuptiActivityDisable(ctypes.c_int(kind_graph_trace))
        if rc != 0:
            raise RuntimeError(f"cuptiActivityDisable(GRAPH_TRACE) in {libs[0]} returned {rc}")


def _loaded_libraries(stem):
    """Paths of the shared libraries whose name starts with `stem` mapped in this process."""
    found = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith(stem + ".") and path not in found:
                found.append(path)
    return found


ALL[ProtonGraphEager.name] = ProtonGraphEager
ALL[CuptiFloorGraphToggled.name] = CuptiFloorGraphToggled
