"""PC sampling: its cost beside the floor and triton.profiler, split into what is paid once per
start and what is paid while sampling runs, and what the profile holds.

Sections (--sections, comma-separated, in this order when chosen):
  diagnose  where the one-time cost lands, first in a fresh process: enable, the first launch
            (CPU) and its synchronize, CUDA-event time of that kernel, a second kernel, kernels
            of other modules; with and without a pause after enabling.
  live      does CUPTI take a sampling-period change on an enabled context after its hardware
            buffer filled? (the floor at 2^5 into 1 MB, every GetData answer logged)
  sweep     the floor's steady-state cost over CUPTI settings: period, hardware buffer,
            scratch buffer, sleep span, drain interval, kernel tracing beside it.
  table     the target table. For each workload, in one process, variants take turns over
            rounds (order rotated): none; timing (proton, kernel timing only); pcs (proton,
            mode="pcsampling"); floor (the minimal client, bench/native/pc_floor.cpp, with our
            settings); floor_act (the floor plus CUPTI kernel tracing: ours minus our logic).
            One round of a variant: start (timed), a first run (timed: what a measurement
            starting right after start sees), `reps` steady runs, stop/finalize (timed).
            The steady ratio is the median steady run over the median run with no profiler;
            the one-time costs are start, the first run's excess over the steady run, and stop.
  memory    host memory growth, fresh child process per variant, after warm-up.
  triton    triton.profiler mode="pcsampling" in a child process with a timeout.
  probe     correctness: the slow line, two call paths, cuBLAS, start/finalize cycles.

  python bench/pc_sampling.py --out DIR                     # table, memory, triton
  python bench/pc_sampling.py --sections diagnose,live,sweep --out DIR
  python bench/pc_sampling.py --quick --out DIR             # shorter loops, fewer rounds

Needs the bench module for the floors: cmake -S . -B build/bench -G Ninja -DPROTON_BUILD_BENCH=ON
-DPROTON_BUILD_VIEWER=OFF && ninja -C build/bench _proton_bench, then
PYTHONPATH=build/bench/bench/native (scripts/gpu-test does this).
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent / "build" / "bench" / "bench" / "native"))

from lib import proc  # noqa: E402
from lib import machine  # noqa: E402
from lib import results as result_files  # noqa: E402
from lib.rss import rss_mb  # noqa: E402

MB = 1 << 20
perf = time.perf_counter


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def timed(fn):
    t0 = perf()
    fn()
    return perf() - t0


# ---------------------------------------------------------------------------------------------
# Workloads: each runs its loop and synchronizes once at the end.

class Kernels:
    """The tensors and single launches the workloads and the diagnosis use."""

    def __init__(self):
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def tiny_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs,
                     tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

        self.torch = torch
        self.tiny_add = tiny_add
        self.a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        self.b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        self.x = torch.randn(1024, device="cuda")
        self.y = torch.randn(1024, device="cuda")
        self.o = torch.empty_like(self.x)
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
        self.mlp = torch.nn.Sequential(*layers).cuda()
        self.opt = torch.optim.SGD(self.mlp.parameters(), lr=1e-3)
        self.inp = torch.randn(512, 2048, device="cuda")

    def gemm_once(self):
        self.a @ self.b

    def torch_add_once(self):
        self.x + self.y

    def triton_add_once(self):
        self.tiny_add[(1,)](self.x, self.y, self.o, 1024, BLOCK=1024)

    def mlp_step(self):
        self.opt.zero_grad(set_to_none=True)
        self.mlp(self.inp).square().mean().backward()
        self.opt.step()


def workloads(k, sizes):
    sync = k.torch.cuda.synchronize

    def loop(op, n):
        def run():
            for _ in range(n):
                op()
            sync()
        return run

    out = {"gemm": loop(k.gemm_once, sizes["gemm"]),
           "tiny_triton": loop(k.triton_add_once, sizes["tiny"]),
           "tiny_torch": loop(k.torch_add_once, sizes["tiny"]),
           "mlp": loop(k.mlp_step, sizes["mlp"])}
    return {w: f for w, f in out.items() if w in sizes["only"]}


# ---------------------------------------------------------------------------------------------
# Variants, in process.

class Variant:
    name = "?"

    def start(self):
        pass

    def stop(self):
        return {}


class NoProfiler(Variant):
    name = "none"


class ProtonVariant(Variant):
    def __init__(self, name, mode, tmp):
        self.name, self.mode, self.tmp, self.round = name, mode, tmp, 0

    def start(self):
        import proton
        self.round += 1
        self.path = os.path.join(self.tmp, f"{self.name}_{self.round}")
        proton.start(self.path, mode=self.mode)

    def stop(self):
        import proton
        proton.finalize()
        info = {}
        if self.mode:
            from proton import _proton
            info["stats"] = _proton._pc_sampling_stats()
            info["profile_samples"] = profile_samples(self.path + ".hatchet")
        return info


class FloorVariant(Variant):
    """The minimal PC-sampling client; with_activity adds CUPTI kernel tracing (the activity
    floor) beside it, started first, as ours is (the other order makes CUPTI refuse tracing)."""

    def __init__(self, name="floor", with_activity=False, **config):
        import _proton_bench
        self.bench, self.name, self.with_activity, self.config = _proton_bench, name, with_activity, config

    def start(self):
        if self.with_activity:
            self.bench._floor_start()
        self.bench.pc_floor_start(**self.config)

    def stop(self):
        st = self.bench.pc_floor_stop()
        if self.with_activity:
            self.bench._floor_stop()
        st.pop("events", None)
        return {"stats": st}


def profile_samples(path):
    """Sum of num_samples over the profile (samples written, wherever they landed)."""
    try:
        with open(path) as f:
            root = json.load(f)[0]
    except (OSError, ValueError):
        return None
    total, stack = 0, [root]
    while stack:
        n = stack.pop()
        total += int(n.get("metrics", {}).get("num_samples", 0))
        stack.extend(n.get("children", []))
    return total


def floor_config_like_ours():
    """The floor runs with the settings our default mode chooses (read from a short session)."""
    import proton
    from proton import _proton
    tmp = tempfile.mkdtemp(prefix="proton_pcs_cfg_")
    proton.start(os.path.join(tmp, "cfg"), mode="pcsampling")
    proton.finalize()
    st = _proton._pc_sampling_stats()
    return dict(period_log2=st.get("start_period_log2") or 16,
                buffer_bytes=st.get("buffer_bytes") or 4 * MB,
                sleep_ms=st.get("sleep_span_ms") or 20,
                scratch_bytes=st.get("scratch_bytes") or 8 * MB)


def have_floor():
    try:
        import _proton_bench  # noqa: F401
        return True
    except ImportError:
        return False


# ---------------------------------------------------------------------------------------------
# Sections.

def diagnose(k, slow):
    """Where the one-time cost of enabling PC sampling lands."""
    torch = k.torch
    ops = {"gemm": k.gemm_once, "torch_add": k.torch_add_once, "triton_add": k.triton_add_once,
           "slow": lambda: slow(8)}

    def once(op):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        t0 = perf()
        op()
        t1 = perf()
        e1.record()
        torch.cuda.synchronize()
        t2 = perf()
        return {"launch_ms": (t1 - t0) * 1e3, "sync_ms": (t2 - t1) * 1e3,
                "gpu_ms": e0.elapsed_time(e1)}

    base = {}
    for name, op in ops.items():
        runs = [once(op) for _ in range(5)]
        base[name] = {key: med([r[key] for r in runs]) for key in runs[0]}
    tmp = tempfile.mkdtemp(prefix="proton_pcs_diag_")
    out = {"baseline": base, "scenarios": []}
    floor = have_floor()

    def scenario(label, start, stop, order, pause=0.0):
        t0 = perf()
        start()
        enable_ms = (perf() - t0) * 1e3
        if pause:
            time.sleep(pause)
        steps = []
        for name in order:
            r = once(ops[name])
            r["op"] = name
            r["excess_ms"] = r["launch_ms"] + r["sync_ms"] - base[name]["launch_ms"] - base[name]["sync_ms"]
            steps.append(r)
        t0 = perf()
        stop()
        rec = {"scenario": label, "enable_ms": enable_ms, "pause_s": pause, "stop_ms": (perf() - t0) * 1e3,
               "steps": steps}
        out["scenarios"].append(rec)
        print(f"  {label:22s} enable {enable_ms:7.1f} ms  stop {rec['stop_ms']:6.1f} ms  " +
              "  ".join(f"{s['op']}: +{s['excess_ms']:.1f} (launch {s['launch_ms']:.1f}, sync {s['sync_ms']:.1f}, "
                        f"gpu {s['gpu_ms']:.1f})" for s in steps), flush=True)
        return rec

    import proton
    from proton import _proton
    order = ["gemm", "gemm", "torch_add", "triton_add", "slow", "gemm"]
    n = [0]

    def pstart(mode):
        def f():
            n[0] += 1
            proton.start(os.path.join(tmp, f"d{n[0]}"), mode=mode)
        return f

    def pstop():
        proton.finalize()
        st = _proton._pc_sampling_stats()
        out.setdefault("pcs_stats", []).append(st)

    if floor:
        import _proton_bench as B

        def fstart():
            B.pc_floor_start()

        def fstop():
            st = B.pc_floor_stop()
            st.pop("events", None)
            out.setdefault("floor_stats", []).append(st)

        scenario("floor (first ever)", fstart, fstop, order)
        scenario("floor (again)", fstart, fstop, order)
        scenario("floor, 300 ms pause", fstart, fstop, order, pause=0.3)
        scenario("floor, tiny first", fstart, fstop, ["torch_add", "torch_add", "gemm", "triton_add", "slow"])

        # Does anything but a kernel launch take the setup? (If so, start() could pay it.)
        def then(first):
            def f():
                fstart()
                first()
            return f

        scenario("floor, sync first", then(torch.cuda.synchronize), fstop, order)
        try:
            import cupy

            def memset():
                cupy.cuda.runtime.memsetAsync(k.o.data_ptr(), 0, 4, 0)
                torch.cuda.synchronize()

            scenario("floor, memset first", then(memset), fstop, order)
        except ImportError:
            out["memset"] = "no cupy"
    scenario("pcs", pstart("pcsampling"), pstop, order)
    scenario("pcs, 300 ms pause", pstart("pcsampling"), pstop, order, pause=0.3)
    scenario("timing", pstart(None), proton.finalize, order)
    return out


def live_period(slow):
    """CUPTI's answers while a too-small buffer fills, before and after a live period change."""
    import _proton_bench as B
    import torch
    out = {}

    def busy(seconds):
        t0 = perf()
        while perf() - t0 < seconds:
            for _ in range(10):
                slow(16)
            torch.cuda.synchronize()

    def summarize(events, t_from, t_to):
        sel = [e for e in events if t_from <= e[0] < t_to]
        codes = {}
        for e in sel:
            codes[str(e[1])] = codes.get(str(e[1]), 0) + 1
        return {"answers": len(sel), "result_codes": codes, "full_flags": sum(1 for e in sel if e[2]),
                "samples": sum(e[3] for e in sel), "pcs": sum(e[4] for e in sel)}

    for label, period, change_to in (("p5_1MB_then_18", 5, 18), ("p18_1MB", 18, None)):
        t_start = perf()
        B.pc_floor_start(period_log2=period, buffer_bytes=1 * MB, log=True)
        busy(0.15)
        time.sleep(0.06)
        t_set = (perf() - t_start) * 1e3
        rc = B.pc_floor_set_period(change_to) if change_to else None
        busy(0.15)
        time.sleep(0.06)
        st = B.pc_floor_stop()
        events = st.pop("events")
        rec = {"set_period_result": rc, "set_at_ms": t_set, "stats": st,
               "before": summarize(events, 0, t_set), "after": summarize(events, t_set, 1e12)}
        out[label] = rec
        print(f"  live {label}: set_period -> {rc}; before {rec['before']}; after {rec['after']}; "
              f"at disable {st.get('samples_at_disable')}", flush=True)
    return out


SWEEP = [
    ("base", {}),
    ("period 2^12, 64 MB", dict(period_log2=12, buffer_bytes=64 * MB)),
    ("period 2^14, 16 MB", dict(period_log2=14, buffer_bytes=16 * MB)),
    ("period 2^18", dict(period_log2=18)),
    ("period 2^20", dict(period_log2=20)),
    ("period 2^24", dict(period_log2=24)),
    ("buffer 32 MB", dict(buffer_bytes=32 * MB)),
    ("scratch 1 MB", dict(scratch_bytes=1 * MB)),
    ("scratch 64 MB", dict(scratch_bytes=64 * MB)),
    ("sleep 100 ms, 16 MB", dict(sleep_ms=100, buffer_bytes=16 * MB)),
    ("sleep 5 ms", dict(sleep_ms=5)),
    ("drain 100 ms", dict(drain_ms=100)),
    ("drain 5 ms", dict(drain_ms=5)),
    ("base + kernel tracing", dict(with_activity=True)),
]


def sweep(k, sizes, reps=3):
    """The floor's steady-state cost per CUPTI setting (one factor at a time around ours)."""
    loads = workloads(k, dict(sizes, only=["gemm", "tiny_torch"]))
    none = {w: [] for w in loads}

    def measure_none():
        for w, fn in loads.items():
            none[w] += [timed(fn) for _ in range(reps)]

    measure_none()
    rows = []
    for i, (label, cfg) in enumerate(SWEEP):
        cfg = dict(cfg)
        act = cfg.pop("with_activity", False)
        v = FloorVariant("floor", with_activity=act, **cfg)
        try:
            t0 = perf()
            v.start()
            start_ms = (perf() - t0) * 1e3
            first = {w: timed(fn) for w, fn in loads.items()}
            steady = {w: [timed(fn) for _ in range(reps)] for w, fn in loads.items()}
            t0 = perf()
            st = v.stop()["stats"]
            stop_ms = (perf() - t0) * 1e3
        except Exception as e:  # noqa: BLE001 (a setting CUPTI refuses is a result too)
            rows.append({"config": label, "error": str(e)})
            print(f"  sweep {label}: {e}", flush=True)
            continue
        rows.append({"config": label, "start_ms": start_ms, "stop_ms": stop_ms, "first_s": first,
                     "steady_s": {w: med(t) for w, t in steady.items()}, "stats": st})
        if i % 4 == 3:
            measure_none()
    measure_none()
    base = {w: med(t) for w, t in none.items()}
    for r in rows:
        if "steady_s" in r:
            r["steady_ratio"] = {w: r["steady_s"][w] / base[w] for w in base}
            r["first_ratio"] = {w: r["first_s"][w] / base[w] for w in base}
            print(f"  sweep {r['config']:22s} " + "  ".join(
                f"{w} {r['steady_ratio'][w]:.3f}x (first {r['first_ratio'][w]:.2f}x)" for w in base) +
                f"  start {r['start_ms']:.0f} ms stop {r['stop_ms']:.0f} ms samples {r['stats'].get('samples')} "
                f"full {r['stats'].get('buffer_full')}", flush=True)
    return {"none_s": base, "rows": rows}


def in_process_table(k, sizes, rounds, reps):
    loads = workloads(k, sizes)
    tmp = tempfile.mkdtemp(prefix="proton_pcs_bench_")
    variants = [NoProfiler(), ProtonVariant("timing", None, tmp), ProtonVariant("pcs", "pcsampling", tmp)]
    note = None
    if have_floor():
        cfg = floor_config_like_ours()
        variants += [FloorVariant("floor", **cfg), FloorVariant("floor_act", with_activity=True, **cfg)]
    else:
        note = "no floor: the bench module (_proton_bench) is not built"
    results = {}
    for wname, fn in loads.items():
        runs = {v.name: [] for v in variants}
        for r in range(rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                t0 = perf()
                v.start()
                start_s = perf() - t0
                first = timed(fn)
                steady = [timed(fn) for _ in range(reps)]
                t0 = perf()
                info = v.stop()
                runs[v.name].append({"start_s": start_s, "first_s": first, "steady_s": steady,
                                     "stop_s": perf() - t0, "info": info})
        base = med([t for x in runs["none"] for t in [x["first_s"]] + x["steady_s"]])
        row = {"none_s": base}
        for name, xs in runs.items():
            steady = med([t for x in xs for t in x["steady_s"]])
            row[name] = {
                "steady_s": steady, "steady_ratio": steady / base,
                "first_s": med([x["first_s"] for x in xs]), "first_ratio": med([x["first_s"] for x in xs]) / base,
                "one_time_s": med([x["first_s"] - med(x["steady_s"]) for x in xs]),
                "start_s": med([x["start_s"] for x in xs]), "stop_s": med([x["stop_s"] for x in xs]),
                "info": xs[-1]["info"],
                # What each round's sampler saw: a round with samples but no PC records is
                # CUPTI answering "non-user kernel" for everything.
                "rounds_seen": [{k: x["info"].get("stats", {}).get(k) for k in
                                 ("samples", "pc_records", "non_user", "binaries", "buffer_full",
                                  "oom_returns", "period_log2")} |
                                {"profile_samples": x["info"].get("profile_samples")}
                                for x in xs if x["info"]],
                "steady_ratio_per_round": [med(x["steady_s"]) / base for x in xs],
            }
            if name == "pcs":
                row[name]["buffer_full"] = sum(x["info"].get("stats", {}).get("buffer_full", 0) for x in xs)
                row[name]["dropped"] = sum(x["info"].get("stats", {}).get("dropped", 0) for x in xs)
        results[wname] = row
        print(f"{wname:12s} none {base * 1e3:.1f} ms  " + "  ".join(
            f"{n} {row[n]['steady_ratio']:.3f}x (first {row[n]['first_ratio']:.2f}x, "
            f"start {row[n]['start_s'] * 1e3:.0f} ms, "
            f"stop {row[n]['stop_s'] * 1e3:.0f} ms)" for n in runs if n != "none"), flush=True)
    if note:
        results["floor_note"] = note
    return results


# ---------------------------------------------------------------------------------------------
# Child processes: memory growth per variant, and triton.profiler (which may not finish).

def child_main(args):
    sizes = json.loads(args.sizes)
    k = Kernels()
    fn = workloads(k, sizes)[args.workload]
    fn()  # warm: torch, cuBLAS, Triton allocations happen before the measurement
    before = rss_mb()
    t0 = perf()
    tmp = tempfile.mkdtemp(prefix="proton_pcs_child_")
    if args.variant == "triton":
        import triton.profiler as tp
        tp.start(os.path.join(tmp, "t"), mode="pcsampling")
    elif args.variant == "floor":
        import _proton_bench
        _proton_bench.pc_floor_start()
    elif args.variant in ("timing", "pcs"):
        import proton
        proton.start(os.path.join(tmp, "p"), mode="pcsampling" if args.variant == "pcs" else None)
    t_start = perf() - t0
    run = timed(fn)
    # Steady runs in the same session: the cost with the process's first PC-sampling session,
    # the one whose samples CUDA 13's CUPTI still gives PC records for (docs/pc-sampling.md,
    # "Several sessions"; the in-process table's later sessions get non-user totals).
    steady = med([timed(fn) for _ in range(3)])
    peak = rss_mb()
    t0 = perf()
    if args.variant == "triton":
        tp.finalize()
    elif args.variant == "floor":
        _proton_bench.pc_floor_stop()
    elif args.variant in ("timing", "pcs"):
        proton.finalize()
    fin = perf() - t0
    result = {"rss_growth_mb": peak - before, "run_s": run, "steady_s": steady,
              "start_s": t_start, "finalize_s": fin}
    if args.variant == "pcs":
        from proton import _proton
        st = _proton._pc_sampling_stats()
        result.update({k: st.get(k) for k in ("samples", "pc_records", "non_user", "buffer_full",
                                             "dropped")})
        result["profile_samples"] = profile_samples(os.path.join(tmp, "p.hatchet"))
    print("RESULT " + json.dumps(result), flush=True)


def run_child(variant, workload, sizes, timeout):
    cmd = [sys.executable, str(HERE), "--child", "--variant", variant, "--workload", workload,
           "--sizes", json.dumps(sizes)]
    t0 = perf()
    p = proc.run(cmd, timeout)
    if p.timed_out:
        return {"error": f"did not finish in {timeout} s", "wall_s": perf() - t0}
    result = p.result("RESULT ")
    if result is not None:
        return result
    return {"error": f"exit {p.rc}: {(p.stderr or p.stdout)[-600:]}"}


# ---------------------------------------------------------------------------------------------
# The probe: correctness on a real GPU.

def probe(k, slow, out_dir):
    import pc_kernels
    import proton
    from proton import _proton
    torch = k.torch
    report = {}
    path = str(out_dir / "probe")
    t0 = perf()
    proton.start(path, mode="pcsampling")
    report["start_s"] = perf() - t0
    with proton.scope("long"):
        for _ in range(20):
            slow(64)
    with proton.scope("short"):
        for _ in range(20):
            slow(16)
    with proton.scope("gemm"):
        for _ in range(50):
            k.gemm_once()
    torch.cuda.synchronize()
    t0 = perf()
    proton.finalize()
    report["finalize_s"] = perf() - t0
    report["stats"] = _proton._pc_sampling_stats()
    with open(path + ".hatchet") as f:
        root = json.load(f)[0]

    def find(node, trail=()):
        trail = trail + (node["frame"]["name"],)
        m = node.get("metrics", {})
        if "time (ns)" in m and "device_id" in m:
            yield trail, node
        for c in node.get("children", []):
            yield from find(c, trail)

    kernels = []
    for trail, kn in find(root):
        lines = []
        for c in kn.get("children", []):
            m = c.get("metrics", {})
            if "num_samples" not in m:
                continue
            st = sorted(((v, s) for s, v in m.items() if s.startswith("stalled_")), reverse=True)
            lines.append({"location": c["frame"]["name"][:160], "samples": m["num_samples"],
                          "stall_sum": sum(v for v, _ in st), "top_stalls": [f"{s}={v}" for v, s in st[:4]]})
        lines.sort(key=lambda x: -x["samples"])
        kernels.append({"path": "/".join(trail[1:])[:200], "time_ns": kn["metrics"]["time (ns)"],
                        "lines": lines[:8], "samples": sum(x["samples"] for x in lines)})
    checks = {}
    for scope in ("long", "short"):
        ks = [x for x in kernels if x["path"].startswith(scope + "/") and "slow_line_kernel" in x["path"]]
        top = ks[0]["lines"][0] if ks and ks[0]["lines"] else None
        checks[f"{scope}_samples"] = ks[0]["samples"] if ks else 0
        checks[f"{scope}_top_is_slow_line"] = bool(top) and pc_kernels.slow_line_location() in top["location"]
        checks[f"{scope}_top_stalls"] = top["top_stalls"] if top else None
    checks["stall_sums_match"] = all(x["stall_sum"] == x["samples"] for kn in kernels for x in kn["lines"])
    checks["root_pc_metrics"] = {m: v for m, v in root.get("metrics", {}).items() if m.startswith("pc_")}
    report["kernels"] = kernels
    report["checks"] = checks
    print("probe", json.dumps(checks), flush=True)
    return report


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=".")
    ap.add_argument("--sections", default="table,memory,triton")
    ap.add_argument("--quick", action="store_true", help="shorter loops (MLP 50 steps), 3 rounds")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--reps", type=int, default=3, help="steady runs per round")
    ap.add_argument("--only", default="gemm,tiny_triton,tiny_torch,mlp")
    ap.add_argument("--triton-only", default=None, help="workloads for triton.profiler (default: --only)")
    ap.add_argument("--triton-timeout", type=int, default=120)
    ap.add_argument("--memory-workloads", default="gemm,tiny_triton,tiny_torch,mlp")
    ap.add_argument("--memory-variants", default="none,timing,pcs,floor")
    ap.add_argument("--mlp-steps", type=int, default=None, help="MLP steps per run (200; --quick: 50)")
    ap.add_argument("--tag", default="", help="file name part: <date>-<gpu>-pc-sampling[-TAG]")
    ap.add_argument("--markdown-from", help="rewrite the .md of an earlier JSON report, and exit")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--variant", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_main(args)
    if args.markdown_from:
        src = pathlib.Path(args.markdown_from)
        return write_markdown(json.loads(src.read_text()), src.with_suffix(".md"))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sections = args.sections.split(",")
    sizes = {"gemm": 100, "tiny": 5000, "mlp": args.mlp_steps or (50 if args.quick else 200),
             "only": args.only.split(",")}
    rounds = args.rounds or (3 if args.quick else 5)
    report = {"argv": sys.argv, "sizes": sizes, "rounds": rounds, "reps": args.reps,
              "commit": os.environ.get("PROTON_COMMIT", "?")}
    import torch
    import pc_kernels
    torch.cuda.init()
    report["gpu"] = machine.gpu_name()
    t_all = perf()
    k = Kernels()
    for fn in workloads(k, dict(sizes, only=list(sizes["only"]) + ["gemm", "tiny_torch"])).values():
        fn()  # compile, load modules, warm cuBLAS
    slow = pc_kernels.load(tempfile.mkdtemp(prefix="proton_pcs_kern_"))
    json_path = out / f"pc_sampling{('-' + args.tag) if args.tag else ''}.json"

    def save():
        report["wall_s"] = perf() - t_all
        json_path.write_text(json.dumps(report, indent=1, default=str))

    steps = [
        ("diagnose", lambda: diagnose(k, slow)),
        ("live", lambda: live_period(slow) if have_floor() else {"error": "no bench module"}),
        ("sweep", lambda: sweep(k, sizes) if have_floor() else {"error": "no bench module"}),
        ("table", lambda: in_process_table(k, sizes, rounds, args.reps)),
        ("probe", lambda: probe(k, slow, out)),
    ]
    for name, fn in steps:
        if name not in sections:
            continue
        print(f"== {name}", flush=True)
        try:
            report[name] = fn()
        except Exception as e:  # noqa: BLE001 (keep what the other sections measured)
            import traceback
            traceback.print_exc()
            report[name] = {"error": f"{type(e).__name__}: {e}"}
        save()
    if "memory" in sections:
        print("== memory", flush=True)
        report["memory"] = {}
        for w in args.memory_workloads.split(","):
            if w in sizes["only"]:
                report["memory"][w] = {v: run_child(v, w, sizes, 300) for v in args.memory_variants.split(",")}
                print(f"  {w}: " + ", ".join(f"{v} {r.get('rss_growth_mb', r.get('error'))}"
                                             for v, r in report["memory"][w].items()), flush=True)
        save()
    if "triton" in sections:
        print("== triton", flush=True)
        only = (args.triton_only or args.only).split(",")
        report["triton"] = {w: run_child("triton", w, sizes, args.triton_timeout) for w in only}
        # Its ratio is over the table's in-process run with no profiler (same loop, same GPU;
        # at 40-300x the process it ran in does not matter), else over a child of its own.
        table = report.get("table", {})
        report["none_child"] = {w: ({"run_s": table[w]["none_s"], "from": "table"} if w in table
                                    else run_child("none", w, sizes, args.triton_timeout)) for w in only}
        for w in only:
            t, n = report["triton"][w], report["none_child"][w]
            print(f"  triton.profiler {w}: " + (f"{t['run_s'] / n['run_s']:.1f}x" if "run_s" in t and "run_s" in n
                                                else str(t.get("error"))), flush=True)
        save()
    write_markdown(report, json_path.with_suffix(".md"))
    print("wrote", json_path)


TABLE_COLUMNS = ("workload", "no profiler", "timing only", "our PC sampling", "floor",
                 "floor + kernel tracing", "triton.profiler", "ours, first run", "floor, first run",
                 "samples", "buffer full", "dropped")


def write_markdown(report, path):
    t = report.get("table", {})
    lines = [f"# PC sampling cost ({report.get('gpu', '?')}, commit {report.get('commit')})", "",
             f"`{' '.join(report['argv'])}`; {report['rounds']} rounds x {report['reps']} steady runs, "
             f"variants interleaved in one process. Steady ratio: median steady run / median run with no "
             f"profiler. First run: the run right after start (what a measurement including "
             f"CUPTI's lazy setup sees).", "",
             *result_files.table(TABLE_COLUMNS, [])]
    for w, row in t.items():
        if not isinstance(row, dict) or "none" not in row:
            continue
        tri = report.get("triton", {}).get(w, {})
        base = report.get("none_child", {}).get(w, {}).get("run_s")
        tri_s = tri.get("error") or (f"{tri['run_s'] / base:.1f}x" if base and "run_s" in tri else "not run")

        def r(v, key="steady_ratio"):
            return f"{row[v][key]:.3f}x" if v in row else "-"

        pcs = row.get("pcs", {})
        st = pcs.get("info", {}).get("stats", {})
        lines.append(f"| {w} | {row['none_s'] * 1e3:.1f} ms | {r('timing')} | {r('pcs')} | {r('floor')} | "
                     f"{r('floor_act')} | {tri_s} | {r('pcs', 'first_ratio')} | {r('floor', 'first_ratio')} | "
                     f"{pcs.get('info', {}).get('profile_samples')} (CUPTI: {st.get('samples')}) | "
                     f"{pcs.get('buffer_full')} | {pcs.get('dropped')} |")
    # A table whose samples all came back as CUPTI's "non-user kernel" count measured the cost of
    # sampling but holds no source lines: say so beside the numbers. CUDA 13's CUPTI does this to
    # every session after one whose context was disabled and then ran kernels (the table's
    # rotation does exactly that; bench/probes/pc_load_order_probe.py floor_nt, docs/pc-sampling.md).
    blind = [w for w, row in t.items() if isinstance(row, dict) and any(
        (x.get("samples") or 0) > 0 and not x.get("pc_records")
        for x in row.get("pcs", {}).get("rounds_seen", []))]
    if blind:
        lines += ["", f"**No PC records** in some rounds of: {', '.join(blind)} — CUPTI returned every "
                  "sample as a non-user-kernel count (the cost above is real; the profiles of those "
                  "rounds hold no source lines): CUPTI's answer to every session after a first one "
                  "once kernels ran in between, as the rotation does (docs/pc-sampling.md, "
                  "\"Several sessions\"). The fresh-process table below has the records. "
                  "See `rounds_seen` in the JSON."]
    lines += ["", "One-time costs (medians over rounds):", "",
              *result_files.table(("workload", "variant", "start", "first run's excess",
                                   "stop / finalize"), [])]
    for w, row in t.items():
        if not isinstance(row, dict) or "none" not in row:
            continue
        for v in ("timing", "pcs", "floor", "floor_act"):
            if v in row:
                lines.append(f"| {w} | {v} | {row[v]['start_s'] * 1e3:.0f} ms | {row[v]['one_time_s'] * 1e3:.0f} ms | "
                             f"{row[v]['stop_s'] * 1e3:.0f} ms |")
    diag = report.get("diagnose", {})
    if diag.get("scenarios"):
        lines += ["", "Where the one-time cost lands (diagnose; ms; excess over the same op with no "
                  "profiler; launch = the launching call on the CPU, gpu = CUDA events around it):", "",
                  *result_files.table(("scenario", "enable", "stop", "first op: excess (launch, gpu)",
                                       "later ops: largest excess"), [])]
        for sc in diag["scenarios"]:
            first, rest = sc["steps"][0], sc["steps"][1:]
            worst = max(rest, key=lambda x: x["excess_ms"]) if rest else None
            lines.append(f"| {sc['scenario']} | {sc['enable_ms']:.1f} | {sc['stop_ms']:.1f} | {first['op']}: "
                         f"{first['excess_ms']:.1f} ({first['launch_ms']:.1f}, {first['gpu_ms']:.1f}) | "
                         + (f"{worst['op']}: {worst['excess_ms']:.1f}" if worst else "-") + " |")
    live = report.get("live", {})
    if live and "error" not in live:
        lines += ["", "CUPTI's GetData answers while a 1 MB buffer fills (live; result codes: 0 success, "
                  "8 CUPTI_ERROR_OUT_OF_MEMORY):", ""]
        for label, rec in live.items():
            lines.append(f"- {label}: set_period -> {rec['set_period_result']}; before {rec['before']}; "
                         f"after {rec['after']}; samples at disable {rec['stats'].get('samples_at_disable')}")
    sw = report.get("sweep", {})
    if sw.get("rows"):
        lines += ["", "The floor's steady cost over CUPTI settings (sweep; one factor at a time around "
                  "2^16, 4 MB buffer, 8 MB scratch, 20 ms sleep span and drain):", "",
                  *result_files.table(("setting", "gemm steady", "tiny_torch steady", "gemm first run",
                                       "samples", "buffer full"), [])]
        for r in sw["rows"]:
            if "steady_ratio" not in r:
                lines.append(f"| {r['config']} | {r.get('error')} | | | | |")
                continue
            steady = r["steady_ratio"]
            lines.append(f"| {r['config']} | {steady['gemm']:.3f}x | {steady['tiny_torch']:.3f}x | "
                         f"{r['first_ratio']['gemm']:.2f}x | {r['stats'].get('samples')} | "
                         f"{r['stats'].get('buffer_full')} |")
    if report.get("memory"):
        lines += ["", "Host memory growth (MB, fresh process, after warm-up):", ""]
        for w, m in report["memory"].items():
            lines.append(f"- {w}: " + ", ".join(f"{v} {r.get('rss_growth_mb', r.get('error'))}" for v, r in m.items()))
        lines += ["", "Fresh processes (one per variant; the session is the process's first): "
                  "steady run over the no-profiler process's, and what the PC-sampling session "
                  "wrote; triton.profiler's run over its no-profiler run, and each variant's host "
                  "memory growth:", "",
                  *result_files.table(("workload", "timing only", "our PC sampling", "floor",
                                       "triton.profiler", "samples (in the profile / CUPTI)",
                                       "PC records", "non-user",
                                       "memory: ours / floor / triton.profiler"), [])]
        for w, m in report["memory"].items():
            none = m.get("none", {}).get("steady_s")
            def ratio(v):
                x = m.get(v, {}).get("steady_s")
                return f"{x / none:.3f}x" if x and none else "-"
            p = m.get("pcs", {})
            t = report.get("triton", {}).get(w, {})
            n = report.get("none_child", {}).get(w, {})
            tri = (f"{t['run_s'] / n['run_s']:.1f}x" if "run_s" in t and "run_s" in n
                   else str(t.get("error", "-")))
            mem = " / ".join(f"{x['rss_growth_mb']:.0f} MB" if "rss_growth_mb" in x else "-"
                             for x in (p, m.get("floor", {}), t))
            lines.append(f"| {w} | {ratio('timing')} | {ratio('pcs')} | {ratio('floor')} | {tri} | "
                         f"{p.get('profile_samples')} / {p.get('samples')} | {p.get('pc_records')} | "
                         f"{p.get('non_user')} | {mem} |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
