"""Intra-kernel instrumentation: Proton against triton.profiler, side by side on one GPU.

    python bench/instrumentation_bench.py [--out DIR] [--quick]

Rows (the instrumentation target table):
  gemm_one_region     kernel-time ratio, one region around a GEMM's tile loop
  loop_one_region     kernel-time ratio, one region around a 16-iteration load loop (what a
                      CTA's buffer set-up and final copy cost apart from records)
  region_per_iter_rt  kernel-time ratio, a region per iteration, trip count at run time
  region_per_iter     the same with a constexpr trip count (the plain loop unrolls whole)
  wall_1000           wall time of 1,000 instrumented launches / uninstrumented: Proton as it
                      starts (region cycles only), Proton with PROTON_INSTR_KERNEL_TIME=1
                      (CUPTI's kernel records beside the regions) and kernel timing alone (a
                      CUPTI session): the best run of each over 9 rounds, and the median of
                      each round's ratio;
                      with _proton_bench on the path also the floor under Proton: a session
                      with kernel time whose allocator is an empty C++ function (kernel
                      timing, the instrumented binary, an allocator call), and its parts: CUPTI's launch
                      callbacks without kernel records, the instrumented binary with that
                      allocator and no profiler
  gpu_bound_wall      wall time of 1,000 launches of the Hopper GEMM with one region (the GPU
                      bounds the loop): Proton, with and without kernel time, over no profiler
  rss_growth_mb       host memory growth over a 1,000-launch Proton run
  cycles_vs_cupti     region cycles per warp / (CUPTI kernel time x SM clock), one region
                      end to end (1.0 = agree)
Kernel-time ratios time the compiled kernels themselves: plain and instrumented captured in
CUDA graphs and replayed in turns (kernels back to back, profile scratch from one preallocated
buffer); triton.profiler's column is the kernel compiled with its default options (shared
buffer, no optimizations), Proton's with ours (global buffer, clock32, sched_stores);
--quick leaves out the per-option rows. Wall time
runs each profiler's whole launch path; triton.profiler's is measured over fewer launches (it
synchronizes per launch) and scaled to 1,000.
"""

import argparse
import contextlib
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lib import proc  # noqa: E402
from lib import machine  # noqa: E402
from lib import results as result_files  # noqa: E402
from lib.rss import rss_mb  # noqa: E402


def graph_of(launch, reps):
    """`reps` launches captured in one CUDA graph: replays run the kernels back to back, so
    their time is kernel time, not the launch path's (a 12 us kernel is launch-bound when
    launched from Python, which hid the instrumentation's cost behind launch overhead)."""
    import torch

    launch()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        launch()  # warm on the capture stream
        stream.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(reps):
                launch()
    torch.cuda.synchronize()
    return graph


def time_graphs(graphs, reps, rounds=7):
    """Interleaved rounds (clock drift hits every graph alike); the best round per graph, in us
    per kernel."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = [float("inf")] * len(graphs)
    for _ in range(rounds):
        for i, g in enumerate(graphs):
            start.record()
            g.replay()
            end.record()
            torch.cuda.synchronize()
            best[i] = min(best[i], start.elapsed_time(end) / reps)
    return [b * 1e3 for b in best]


class FixedBuffer:
    """A profile allocator that returns one preallocated buffer: times the kernel alone."""

    def __init__(self):
        self.buf = None

    def __call__(self, size, alignment, stream):
        import torch

        if self.buf is None or self.buf.numel() < size:
            self.buf = torch.zeros(size, dtype=torch.uint8, device="cuda")
        return self.buf


def start_session(name, backend="instrumentation", kernel_time=False):
    """proton.start with PROTON_INSTR_KERNEL_TIME set for this start alone (the knob is read
    when a session starts): `kernel_time` adds CUPTI's kernel records to an instrumentation
    session (the default keeps region cycles only). The caller's own setting is put back."""
    import proton

    before = os.environ.get("PROTON_INSTR_KERNEL_TIME")
    os.environ["PROTON_INSTR_KERNEL_TIME"] = "1" if kernel_time else "0"
    try:
        return proton.start(str(name), backend=backend)
    finally:
        if before is None:
            del os.environ["PROTON_INSTR_KERNEL_TIME"]
        else:
            os.environ["PROTON_INSTR_KERNEL_TIME"] = before


@contextlib.contextmanager
def bare_instrumentation(allocator):
    """Triton compiles instrumented kernels and `allocator` hands out their profile scratch,
    with no profiler at all (no session, no CUPTI, no exit hook): what the instrumented binary
    and Triton's launch path for it cost by themselves."""
    from proton.hooks import instrumentation as instr_mod
    from triton.runtime import _allocation

    hook = instr_mod.InstrumentationHook(None)
    hook.activate()
    _allocation.set_profile_allocator(allocator)
    for attr, chain, fn in instr_mod._Registry.installed.chains:  # no exit hook: no profiler
        if attr == "launch_exit_hook" and chain is not None:
            chain.remove(fn)
    try:
        yield
    finally:
        hook.deactivate()


def compiled_kernel_ratios(quick, only_cases=None):
    """Kernel time of plain vs instrumented binaries, for both option sets."""
    import torch
    from triton.runtime import _allocation

    import instrumentation_kernels as K
    from proton.hooks.instrumentation import InstrumentationHook

    x, out, grid, kw = K.loop_args(torch)
    gemm_args, ggrid, gkw = K.matmul_args(torch)
    step_args, sgrid, skw = K.matmul_args(torch, k=1024)  # 16 steps of BLOCK_K=64
    tma_args, tgrid, tkw = K.matmul_tma_args(torch)
    tma_step_args, tsgrid, tskw = K.matmul_tma_args(torch, k=1024)
    cases = {
        "gemm_one_region": (lambda r: K.matmul[ggrid](*gemm_args, REGION=r, **gkw), 20),
        # A region around each of the tile loop's 16 steps (K = 16 x BLOCK_K).
        "gemm_region_per_step": (lambda r: K.matmul[sgrid](*step_args, REGION=r, PER_STEP=True,
                                                           **skw), 20),
        # The same two on a GEMM written for Hopper (TMA descriptors, wgmma; Triton's tutorial
        # configuration): the pointer GEMM above needs all 255 registers and spills once
        # instrumented, which is most of its one-region cost.
        "tma_gemm_one_region": (lambda r: K.matmul_tma[tgrid](*tma_args, REGION=r, PER_STEP=False,
                                                              **tkw), 20),
        "tma_gemm_region_per_step": (lambda r: K.matmul_tma[tsgrid](
            *tma_step_args, REGION=r, PER_STEP=True, **tskw), 20),
        # The same loop with one region around it: what a CTA's buffer set-up and final copy
        # cost on their own, apart from the records in the loop.
        "loop_one_region": (lambda r: (K.loop_one_region if r else K.loop_plain)[grid](
            x, out, num_warps=4, **kw), 200),
        "region_per_iter": (lambda r: (K.loop_region_per_iter if r else K.loop_plain)[grid](
            x, out, num_warps=4, **kw), 200),
        # The trip count at run time: neither loop is unrolled (see instrumentation_kernels).
        "region_per_iter_rt": (lambda r: (K.loop_region_per_iter_rt if r else K.loop_plain_rt)[
            grid](x, out, kw["ITERS"], BLOCK=kw["BLOCK"], num_warps=4), 200),
    }
    # Triton's defaults (shared buffer, no optimizations), ours (global buffer, clock32,
    # sched_stores), and ours with Triton's shared buffer (what the buffer type is worth).
    option_sets = [("triton_options", "default:buffer_type=shared:optimizations="),
                   ("proton_options", None), ("shared_buffer", "default:buffer_type=shared")]
    if only_cases:
        cases = {k: v for k, v in cases.items() if k in only_cases}
    if not quick:  # which option costs what (the default is chosen from these)
        option_sets += [("clock32", "default:optimizations=clock32"),
                        ("sched_stores", "default:optimizations=sched_stores"),
                        ("proton_buffer_2k", "default:buffer_size=2048")]
    results = {}
    for label, mode in option_sets:
        hook = InstrumentationHook(mode)
        hook.activate()
        alloc = FixedBuffer()
        _allocation.set_profile_allocator(alloc)
        try:
            for name, (f, reps) in cases.items():
                # The plain kernel has no records: compiled under the hook it is the plain
                # binary, timed in the same rounds as the instrumented one.
                graphs = [graph_of(lambda f=f: f(False), reps), graph_of(lambda f=f: f(True), reps)]
                plain_us, inst_us = time_graphs(graphs, reps)
                r = results.setdefault(name, {})
                r[label + "_plain_us"] = plain_us
                r[label + "_us"] = inst_us
                r[label + "_ratio"] = inst_us / plain_us
                del graphs
        finally:
            hook.deactivate()
    return results


def alloc_exit_cost(out_dir, pairs=20000):
    """The launching thread's share of our allocator and launch exit, with no kernel: `pairs`
    alloc + exit calls from Python (an unknown function: queued, copied, counted, not decoded),
    beside the same number of calls of a Python allocator returning one tensor. us per pair."""
    import torch

    import proton
    from proton import _proton

    stream = torch.cuda.current_stream().cuda_stream
    size = 132 * 8448  # a 132-CTA launch's slice in the wall loop
    fixed = FixedBuffer()
    fixed(size, 128, stream)
    t0 = time.thread_time()
    for _ in range(pairs):
        fixed(size, 128, stream)
    python_alloc = (time.thread_time() - t0) / pairs * 1e6
    session = proton.start(str(out_dir / "bench_alloc_exit"), backend="instrumentation")
    alloc, leave = _proton.instr_alloc, _proton.instr_launch_exit
    alloc(size, 128, stream)
    leave(0, stream)
    t0 = time.thread_time()
    for _ in range(pairs):
        alloc(size, 128, stream)
        leave(0, stream)
    ours = (time.thread_time() - t0) / pairs * 1e6
    proton.finalize(session)
    return {"python_fixed_buffer_us": python_alloc, "ours_alloc_and_exit_us": ours}


def pin_apart():
    """Threads started from now on (CUPTI's, the instrumentation consumer and decoder) inherit
    a mask without CPU 0 and its SMT siblings; proton_wall_and_rss(pin=True) then moves the
    launching thread onto CPU 0 alone."""
    siblings = {0}
    try:
        text = pathlib.Path("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list").read_text()
        for part in text.strip().split(","):
            lo, _, hi = part.partition("-")
            siblings.update(range(int(lo), int(hi or lo) + 1))
    except OSError:
        pass
    others = set(os.sched_getaffinity(0)) - siblings
    print(json.dumps({"cpu0_siblings": sorted(siblings), "others": len(others)}), file=sys.stderr)
    os.sched_setaffinity(0, others)


def proton_wall_and_rss(out_dir, launches, pin=False, rounds=9):
    import torch

    import proton
    import instrumentation_kernels as K
    from proton.hooks import instrumentation as instr

    x, out, grid, kw = K.loop_args(torch, ctas=132)

    cpu = {}  # variant -> the launching thread's CPU seconds in its best run

    def loop(rounds=3, label=None):
        """The best of `rounds` runs of `launches` launches (seconds): one run is ~12 ms."""
        best = float("inf")
        for _ in range(rounds):
            torch.cuda.synchronize()
            t0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(launches):
                K.loop_one_region[grid](x, out, num_warps=4, **kw)
            torch.cuda.synchronize()
            wall, used = time.perf_counter() - t0, time.thread_time() - c0
            if wall < best:
                best = wall
                if label is not None and wall <= cpu.get(label, (float("inf"), 0))[0]:
                    cpu[label] = (wall, used)
        return best

    K.loop_one_region[grid](x, out, num_warps=4, **kw)  # compile plain
    session = start_session(out_dir / "bench_proton", kernel_time=True)
    if pin:  # the profiler's threads exist now, with the mask that leaves CPU 0 out
        os.sched_setaffinity(0, {0})
    K.loop_one_region[grid](x, out, num_warps=4, **kw)  # compile instrumented
    torch.cuda.synchronize()
    rss0 = rss_mb()
    first = loop(rounds=1)  # the first 1,000: what a user's loop sees, memory included
    rss1 = rss_mb()
    proton.finalize(session)
    # Then rounds that take turns (one run of 12 ms is at the mercy of the host): no profiler;
    # kernel timing alone (CUPTI, the same uninstrumented kernel: what an instrumentation
    # session with PROTON_INSTR_KERNEL_TIME=1 pays as well); instrumentation, both ways.
    # The instrumented kernel with no profiler at all: Triton's passes and a Python allocator
    # handing out one preallocated buffer, no CUPTI, no copy-back. What the instrumented binary
    # and Triton's launch path for it cost by themselves.
    from triton.runtime import _allocation

    def bare_instrumented(allocator=None, label="bare_instrumented"):
        with bare_instrumentation(FixedBuffer() if allocator is None else allocator):
            K.loop_one_region[grid](x, out, num_warps=4, **kw)
            return loop(rounds=1, label=label)

    def session_with_allocator(label, allocator, r):
        """An instrumentation session whose kernels take their profile scratch from
        `allocator` instead of our pool: the session, kernel timing and the instrumented
        binary, without our allocator, launch queue, copy-back or decoding."""
        session = start_session(out_dir / f"bench_{label}{r}", kernel_time=True)
        ours = _allocation._profile_allocator.get()
        _allocation.set_profile_allocator(allocator)
        try:
            return loop(rounds=1, label=label)
        finally:
            _allocation.set_profile_allocator(ours)
            proton.finalize(session)

    def session_fixed_buffer(r):
        """One Python-allocated buffer (what our runtime costs is Proton minus this)."""
        return session_with_allocator("session_fixed_buffer", FixedBuffer(), r)

    try:
        import _proton_bench  # bench/native, when built: an allocator with nothing in it
    except ImportError:
        _proton_bench = None
    c_buffer = torch.zeros(16 << 20, dtype=torch.uint8, device="cuda")

    def session_c_buffer(r):
        """The buffer handed out by a C++ function called through nanobind, as our allocator
        is: an allocator call with nothing in it. Proton minus this is what our runtime adds to
        a launch."""
        _proton_bench.set_fixed_scratch(c_buffer.data_ptr())
        return session_with_allocator("session_c_buffer", _proton_bench.fixed_scratch, r)

    def bare_c_allocator():
        """The instrumented binary with an empty C++ allocator and no profiler: Triton's launch
        path for an instrumented kernel by itself (the Python allocator's call apart)."""
        _proton_bench.set_fixed_scratch(c_buffer.data_ptr())
        return bare_instrumented(_proton_bench.fixed_scratch, "bare_c_allocator")

    def callbacks_only():
        """The plain kernel under CUPTI's launch callbacks with no kernel records (the bench
        floor, bench/native/cupti_floor.h): what tagging launches costs apart from timing them."""
        _proton_bench._floor_start(callbacks="profiler", kernels=False)
        try:
            return loop(rounds=1, label="callbacks_only")
        finally:
            _proton_bench._floor_stop()

    def proton_cycles_only(r):
        """Proton as it starts by default: region cycles only, as triton.profiler records them,
        the launches without CUPTI's kernel records. Returns its time and what the runtime did
        meanwhile (wakes of the consumer, full-pool waits, slow allocations: why a round was
        slow)."""
        session = start_session(out_dir / f"bench_cycles_only{r}")
        before = instr.stats()
        try:
            t = loop(rounds=1, label="proton_cycles_only")
        finally:
            after = instr.stats()
            proton.finalize(session)
        return t, {k: after[k] - before[k] for k in ("wakes", "deferred_wakes", "batches",
                                                     "slow_allocs", "full_wait_ns", "wake_ns")}

    def plain_beside_busy_cpus(busy=2):
        """The plain loop while `busy` other processes spin on a CPU each: whether work on other
        (virtual) CPUs slows the launching thread, as our decoder thread's would."""
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(busy)]
        try:
            time.sleep(0.2)
            return loop(rounds=1, label="plain_beside_busy_cpus")
        finally:
            for p in spinners:
                p.kill()
                p.wait()

    plain = timing = inst = bare = fixed = cfixed = busy = barec = cbonly = float("inf")
    cycles_only = float("inf")
    cycles_rounds = []
    # Each round's time over its own plain run.
    paired = {"proton": [], "timing_only": [], "proton_cycles_only": []}
    for r in range(rounds):
        p = loop(rounds=1, label="plain")
        plain = min(plain, p)
        busy = min(busy, plain_beside_busy_cpus())
        bare = min(bare, bare_instrumented())
        session = proton.start(str(out_dir / f"bench_timing{r}"))
        t = loop(rounds=1, label="timing_only")
        timing = min(timing, t)
        proton.finalize(session)
        session = start_session(out_dir / f"bench_proton{r}", kernel_time=True)
        i = loop(rounds=1, label="proton")
        inst = min(inst, i)
        proton.finalize(session)
        c, counters = proton_cycles_only(r)
        cycles_only = min(cycles_only, c)
        cycles_rounds.append({"us_per_launch": c / launches * 1e6, "plain_us": p / launches * 1e6,
                              "proton_us": i / launches * 1e6, **counters})
        fixed = min(fixed, session_fixed_buffer(r))
        if _proton_bench is not None:
            cfixed = min(cfixed, session_c_buffer(r))
            barec = min(barec, bare_c_allocator())
            cbonly = min(cbonly, callbacks_only())
        paired["proton"].append(i / p)
        paired["timing_only"].append(t / p)
        paired["proton_cycles_only"].append(c / p)
    inst = min(inst, first)
    median = {k: sorted(v)[len(v) // 2] for k, v in paired.items()}
    return {"plain_s": plain, "timing_only_s": timing, "timing_only_ratio": timing / plain,
            "proton_s": inst, "proton_ratio": inst / plain, "proton_vs_timing": inst / timing,
            # Robust to the host's bursts: the median over rounds of each round's ratio to the
            # plain run just before it (the best-of ratios above compare runs far apart).
            "rounds": rounds, "proton_ratio_median": median["proton"],
            "timing_only_ratio_median": median["timing_only"],
            "proton_cycles_only_s": cycles_only, "proton_cycles_only_ratio": cycles_only / plain,
            "proton_cycles_only_ratio_median": median["proton_cycles_only"],
            "bare_instrumented_s": bare, "bare_instrumented_ratio": bare / plain,
            "proton_first_run_s": first, "session_fixed_buffer_s": fixed,
            "session_c_buffer_s": cfixed if cfixed != float("inf") else None,
            "bare_c_allocator_s": barec if barec != float("inf") else None,
            "callbacks_only_s": cbonly if cbonly != float("inf") else None,
            "plain_beside_busy_cpus_s": busy,
            "launch_thread_cpu_us": {k: v[1] / launches * 1e6 for k, v in cpu.items()},
            "rss_growth_mb": rss1 - rss0, "stats": instr.stats(),
            "cycles_only_rounds": cycles_rounds}


TRITON_WALL = r'''
import json, os, sys, time, torch
os.environ["PROTON_BENCH_PL"] = "triton"
sys.path.insert(0, sys.argv[1])
import triton.profiler as tp
import instrumentation_kernels as K
x, out, grid, kw = K.loop_args(torch, ctas=132)
launches = int(sys.argv[2])
s = tp.start(sys.argv[3], backend="instrumentation")
K.loop_one_region[grid](x, out, num_warps=4, **kw)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(launches):
    K.loop_one_region[grid](x, out, num_warps=4, **kw)
torch.cuda.synchronize()
print(json.dumps({"seconds": time.perf_counter() - t0, "launches": launches}))
tp.finalize()
'''


def triton_wall(out_dir, launches):
    r = proc.run([sys.executable, "-c", TRITON_WALL, HERE, launches, out_dir / "bench_triton"],
                 timeout=300)
    if r.rc != 0:
        return {"error": r.stderr[-1500:]}
    return r.result()


def dense_loop(out_dir, launches=200):
    """The Hopper GEMM with a region around each of its 16 tile-loop steps, `launches` in a row
    (512 CTAs x 8 warps x 16 = 65,536 regions per launch, ~1 MB of records): whether the host
    keeps up with the GPU (copy-back, decoding) or the launches wait for the pool. Wall time of
    the loop with a tree session against the same loop with no profiler, and the runtime's
    counts of that session."""
    import torch

    import proton
    import instrumentation_kernels as K
    from proton.hooks import instrumentation as instr

    args, grid, kw = K.matmul_tma_args(torch, k=1024)

    def launch():
        K.matmul_tma[grid](*args, REGION=True, PER_STEP=True, **kw)

    def loop():
        """(wall s, the launching thread's CPU s) of `launches` launches: CPU well below the
        wall time means the thread waited (for the GPU, or for the pool)."""
        torch.cuda.synchronize()
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(launches):
            launch()
        torch.cuda.synchronize()
        return time.perf_counter() - t0, time.thread_time() - c0

    launch()  # compile plain (no session: the regions compile to nothing)
    plain = min(loop() for _ in range(3))[0]
    before = instr.stats()
    session = proton.start(str(out_dir / "bench_dense"), backend="instrumentation")
    launch()  # compile instrumented
    runs = [loop() for _ in range(3)]
    proton.finalize(session)
    after = instr.stats()
    d = {k: after[k] - before.get(k, 0) for k in ("launches", "decoded", "samples", "batches",
                                                  "overflows", "full_wait_ns", "decode_ns",
                                                  "copy_wait_ns", "bytes_copied")
         if isinstance(after.get(k), (int, float))}
    best, cpu = min(runs)
    return {"launches_per_loop": launches, "plain_s": plain, "proton_s": best,
            "proton_launch_thread_cpu_us": cpu / launches * 1e6,
            "proton_ratio": best / plain, "plain_us_per_launch": plain / launches * 1e6,
            "proton_us_per_launch": best / launches * 1e6,
            "regions_per_launch": d.get("samples", 0) / max(d.get("decoded", 1), 1),
            "decode_ns_per_region": d.get("decode_ns", 0) / max(d.get("samples", 1), 1),
            "decoder_threads": after.get("decoder_threads"), "stats": d}


def gpu_bound_wall(out_dir, launches=1000, rounds=7):
    """The target 'speed of the uninstrumented loop plus kernel-time overhead': 1,000 launches
    of the Hopper GEMM (4096 x 4096 x 1024, one region around its tile loop), a loop the GPU
    bounds (each kernel outlasts its launch), with no profiler, kernel timing alone (a CUPTI
    session, the kernel without regions), Proton and Proton with PROTON_INSTR_KERNEL_TIME=1
    taking turns. Best wall time of `rounds` each."""
    import torch

    import proton
    import instrumentation_kernels as K

    args, grid, kw = K.matmul_tma_args(torch, k=1024)

    def loop():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(launches):
            K.matmul_tma[grid](*args, REGION=True, PER_STEP=False, **kw)
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    def session(label, backend="instrumentation", kernel_time=False):
        s = start_session(out_dir / f"bench_gpu_bound_{label}", backend, kernel_time)
        try:
            return loop()
        finally:
            proton.finalize(s)

    loop()  # compile plain (no session: the region compiles to nothing)
    session("warm")  # compile instrumented
    best = dict.fromkeys(("plain", "timing", "proton", "cycles_only"), float("inf"))
    for r in range(rounds):
        best["plain"] = min(best["plain"], loop())
        best["timing"] = min(best["timing"], session(f"t{r}", backend="cupti"))
        best["proton"] = min(best["proton"], session(f"p{r}", kernel_time=True))
        best["cycles_only"] = min(best["cycles_only"], session(f"c{r}"))
    us = {k: v / launches * 1e6 for k, v in best.items()}
    return {"us_per_launch": us, "proton_ratio": best["proton"] / best["plain"],
            "timing_ratio": best["timing"] / best["plain"],
            "cycles_only_ratio": best["cycles_only"] / best["plain"]}


def cycles_vs_cupti(out_dir):
    import torch

    import proton
    import instrumentation_kernels as K

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.empty(sms, device="cuda")
    name = str(out_dir / "bench_cycles")
    session = start_session(name, kernel_time=True)  # region cycles beside CUPTI's kernel time
    for _ in range(5):
        K.busy_region[(sms,)](out, SPIN=200000, num_warps=4)
    torch.cuda.synchronize()
    proton.finalize(session)
    root, devices = json.load(open(name + ".hatchet"))
    from proton.hooks import instrumentation as instr

    # A missing kernel or region is a result to report (with the runtime's counters and errors),
    # not a crash that loses the rest of the benchmark.
    kernel = next((c for c in root["children"] if c["frame"]["name"].startswith("busy_region")),
                  None)
    if kernel is None:
        return {"error": "no busy_region kernel in the profile", "instr_stats": instr.stats()}
    region = next((c for c in kernel.get("children", []) if c["frame"]["name"] == "all"), None)
    if region is None:
        return {"error": "no region 'all' under the busy_region kernel",
                "kernel_children": [c["frame"]["name"] for c in kernel.get("children", [])],
                "instr_stats": instr.stats()}
    clock_khz = next(iter(devices["CUDA"].values()))["clock_rate"]
    launches = kernel["metrics"]["count"]
    cycles_per_warp = region["metrics"]["normalized_cycles"] / launches
    kernel_cycles = kernel["metrics"]["time (ns)"] / launches * clock_khz / 1e6
    return {"region_cycles_per_warp": cycles_per_warp, "cupti_ns": kernel["metrics"]["time (ns)"]
            / launches, "clock_khz": clock_khz, "ratio": cycles_per_warp / kernel_cycles}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/results/instrumentation")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pin", action="store_true",
                    help="with --wall-only: the launching thread alone on CPU 0 (and its SMT "
                         "sibling idle), every thread the profiler starts on the other CPUs")
    ap.add_argument("--wall-only", action="store_true",
                    help="only the 1,000-launch wall time (one JSON line, with the runtime's "
                         "PROTON_INSTR_* knobs): to sweep the pool and batch bounds")
    ap.add_argument("--gpu-bound-only", action="store_true",
                    help="only the GPU-bound wall time (1,000 launches of the Hopper GEMM)")
    ap.add_argument("--kernel-only", default=None,
                    help="only the kernel-time ratios of these comma-separated cases (one JSON)")
    args = ap.parse_args()
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    launches = 1000
    if args.kernel_only:
        kt = compiled_kernel_ratios(True, set(args.kernel_only.split(",")))
        print(json.dumps({"gpu": machine.gpu_name(), "kernel_time": kt}))
        return
    if args.gpu_bound_only:
        print(json.dumps(gpu_bound_wall(out_dir)))
        return
    if args.wall_only:
        if args.pin:
            pin_apart()
        w = proton_wall_and_rss(out_dir, launches, pin=args.pin)
        w["pinned"] = args.pin
        w["alloc_exit"] = alloc_exit_cost(out_dir)
        w["knobs"] = {k: v for k, v in os.environ.items() if k.startswith("PROTON_INSTR_")}
        w["per_launch_us"] = {k[:-2]: w[k] * 1e3 for k in
                              ("plain_s", "plain_beside_busy_cpus_s", "timing_only_s",
                               "bare_instrumented_s", "session_fixed_buffer_s",
                               "session_c_buffer_s", "bare_c_allocator_s", "callbacks_only_s",
                               "proton_cycles_only_s", "proton_s") if w[k] is not None}
        print(json.dumps(w))
        return
    report = {"gpu": machine.gpu_name()}
    report["kernel_time"] = compiled_kernel_ratios(args.quick)
    report["wall"] = proton_wall_and_rss(out_dir, launches)
    tw = triton_wall(out_dir, 20 if args.quick else 50)
    if "seconds" in tw:
        tw["scaled_to_1000_s"] = tw["seconds"] / tw["launches"] * launches
        tw["ratio"] = tw["scaled_to_1000_s"] / report["wall"]["plain_s"]
    report["wall"]["triton_profiler"] = tw
    report["gpu_bound_wall"] = gpu_bound_wall(out_dir)
    report["cycles_vs_cupti"] = cycles_vs_cupti(out_dir)
    report["dense_loop"] = dense_loop(out_dir, 50 if args.quick else 200)
    (out_dir / "instrumentation_bench.json").write_text(json.dumps(report, indent=1))
    kt, w = report["kernel_time"], report["wall"]
    print(f"GPU: {report['gpu']}")
    print("\n".join(result_files.table(("case", "triton.profiler 3.6", "Proton", "target"), [])))
    rows = [
        ("gemm_one_region", "kernel-time ratio, one region around a GEMM tile loop "
         "(pointer loads, 255 registers)", "<= 1.02x"),
        ("tma_gemm_one_region", "the same, a Hopper GEMM (TMA descriptors, wgmma)", "<= 1.02x"),
        ("tma_gemm_region_per_step", "kernel-time ratio, a region per loop iteration (16): "
         "Hopper GEMM's tile loop", "<= 1.20x"),
        ("gemm_region_per_step", "the same, pointer-load GEMM", "<= 1.20x"),
        ("region_per_iter_rt", "the same, a 16-load loop (trip count at run time; each "
         "region waits for its load)", "<= 1.20x"),
        ("region_per_iter", "(the load loop, 16 a constexpr: the plain loop unrolls whole, "
         "the instrumented does not)", "-"),
    ]
    for case, label, target in rows:
        if case not in kt:
            continue
        r = kt[case]
        print(f"| {label} | {r['triton_options_ratio']:.3f}x | {r['proton_options_ratio']:.3f}x "
              f"(shared buffer {r['shared_buffer_ratio']:.3f}x) | {target} |")
    print(f"| wall time, 1,000 instrumented launches vs uninstrumented (Proton as it starts: "
          f"region cycles only, triton.profiler's output) | {tw.get('ratio', float('nan')):.1f}x | "
          f"{w['proton_cycles_only_ratio']:.3f}x best of {w['rounds']} rounds; "
          f"{w['proton_cycles_only_ratio_median']:.3f}x median of each round's ratio | <= 1.10x |")
    print(f"| wall time with CUPTI's kernel time beside the regions (PROTON_INSTR_KERNEL_TIME=1) "
          f"| - | {w['proton_ratio']:.3f}x best; {w['proton_ratio_median']:.3f}x median | - |")
    print(f"| (kernel timing alone, same loop; ours / it) | - | {w['timing_only_ratio']:.3f}x, "
          f"median {w['timing_only_ratio_median']:.3f}x ({w['proton_vs_timing']:.3f}) | - |")
    print(f"| (instrumented kernel, no profiler: Triton's passes, a Python allocator) | - | "
          f"{w['bare_instrumented_ratio']:.3f}x | - |")
    print(f"| (per launch, us: plain / timing / bare instrumented / Proton) | - | "
          f"{w['plain_s'] * 1e3:.1f} / {w['timing_only_s'] * 1e3:.1f} / "
          f"{w['bare_instrumented_s'] * 1e3:.1f} / {w['proton_s'] * 1e3:.1f} | - |")
    if w["session_c_buffer_s"] is not None:
        print(f"| (kernel timing + instrumented binary + an empty C++ allocator: the floor; "
              f"Proton over it, us per launch) | - | {w['session_c_buffer_s'] * 1e3:.1f} us; "
              f"{(w['proton_s'] - w['session_c_buffer_s']) * 1e3:+.2f} us | - |")
        print(f"| (per launch, us: CUPTI's launch callbacks alone / instrumented binary with an "
              f"empty C++ allocator, no profiler) | - | {w['callbacks_only_s'] * 1e3:.1f} / "
              f"{w['bare_c_allocator_s'] * 1e3:.1f} | - |")
    g = report["gpu_bound_wall"]
    print(f"| (wall time, 1,000 launches of the Hopper GEMM with one region: a GPU-bound loop; "
          f"us per launch {g['us_per_launch']['plain']:.1f} plain) | - | "
          f"{g['cycles_only_ratio']:.3f}x; with kernel time {g['proton_ratio']:.3f}x; kernel timing alone "
          f"{g['timing_ratio']:.3f}x | - |")
    print(f"| host memory growth, 1,000 launches | - | {w['rss_growth_mb']:.1f} MB | <= 64 MB |")
    c = report["cycles_vs_cupti"]
    ratio = f"{c['ratio']:.3f}" if "ratio" in c else f"missing: {c.get('error')}"
    print(f"| region cycles / (CUPTI ns x SM clock), one region end to end | - | "
          f"{ratio} | within 10% |")
    if "error" in c:
        print(json.dumps(c))
    dl = report["dense_loop"]
    print(f"| (a region per step of the Hopper GEMM, {dl['launches_per_loop']} launches in a row, "
          f"{dl['regions_per_launch']:.0f} regions each: wall time vs no profiler) | - | "
          f"{dl['proton_ratio']:.3f}x ({dl['plain_us_per_launch']:.0f} -> "
          f"{dl['proton_us_per_launch']:.0f} us per launch; full-pool waits "
          f"{dl['stats'].get('full_wait_ns', 0) / 1e6:.0f} ms, overflows "
          f"{dl['stats'].get('overflows', 0)}, {dl.get('decoder_threads')} decoder threads) | - |")
    print(json.dumps(w["stats"]))
    for name, r in kt.items():
        print(name, {k: round(v, 4) for k, v in r.items() if k.endswith("_ratio")})


if __name__ == "__main__":
    main()
