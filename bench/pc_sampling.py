"""PC sampling: its cost beside the floor and triton.profiler, and what the profile holds.

The target table of issue 22 (docs/pc-sampling.md): for each workload, one process, rounds
interleaved, the time of
  none      no profiler
  timing    proton, kernel timing only
  pcs       proton, mode="pcsampling"
  floor     the minimal PC-sampling client (_proton_bench, bench/native/pc_floor.cpp)
and, in a child process with a timeout (it may not finish), triton.profiler mode="pcsampling".
Host memory growth is measured in a fresh child process per variant.

  python bench/pc_sampling.py --out DIR             # the table (~5-8 min on an H100)
  python bench/pc_sampling.py --probe --out DIR     # correctness + quick timings, < 150 s

Needs the bench module: cmake -S . -B build/bench -G Ninja -DPROTON_BUILD_BENCH=ON
-DPROTON_BUILD_VIEWER=OFF && ninja -C build/bench _proton_bench, then
PYTHONPATH=build/bench/bench/native (scripts/gpu-test does this).
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent / "build" / "bench" / "bench" / "native"))


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# ---------------------------------------------------------------------------------------------
# Workloads: each returns a callable that runs the loop and synchronizes once at the end.

def workloads(sizes):
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def tiny_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
                 mask=mask)

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    o = torch.empty_like(x)

    def gemm():
        for _ in range(sizes["gemm"]):
            a @ b
        torch.cuda.synchronize()

    def tiny_torch():
        for _ in range(sizes["tiny"]):
            x + y
        torch.cuda.synchronize()

    def tiny_triton():
        for _ in range(sizes["tiny"]):
            tiny_add[(1,)](x, y, o, 1024, BLOCK=1024)
        torch.cuda.synchronize()

    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    mlp = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(mlp.parameters(), lr=1e-3)
    inp = torch.randn(512, 2048, device="cuda")

    def mlp_steps():
        for _ in range(sizes["mlp"]):
            opt.zero_grad(set_to_none=True)
            mlp(inp).square().mean().backward()
            opt.step()
        torch.cuda.synchronize()

    out = {"gemm": gemm, "tiny_triton": tiny_triton, "tiny_torch": tiny_torch, "mlp": mlp_steps}
    return {k: v for k, v in out.items() if k in sizes["only"]}


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
        t0 = time.perf_counter()
        proton.finalize()
        fin = time.perf_counter() - t0
        info = {"finalize_s": fin}
        if self.mode:
            from proton import _proton
            info["stats"] = _proton._pc_sampling_stats()
            info["profile_samples"] = profile_samples(self.path + ".hatchet")
        return info


class FloorVariant(Variant):
    name = "floor"

    def __init__(self, period_log2, buffer_bytes, sleep_ms):
        import _proton_bench
        self.bench = _proton_bench
        self.args = dict(period_log2=period_log2, buffer_bytes=buffer_bytes, sleep_ms=sleep_ms)

    def start(self):
        self.bench.pc_floor_start(**self.args)

    def stop(self):
        return {"stats": self.bench.pc_floor_stop()}


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


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def in_process_table(sizes, rounds, use_floor):
    import torch
    torch.cuda.init()
    loads = workloads(sizes)
    for fn in loads.values():  # compile, load modules, warm cuBLAS
        fn()
    tmp = tempfile.mkdtemp(prefix="proton_pcs_bench_")
    variants = [NoProfiler(), ProtonVariant("timing", None, tmp), ProtonVariant("pcs", "pcsampling", tmp)]
    floor_note = None
    if use_floor:
        try:
            from proton import _proton
            variants.append(None)  # placeholder: sized like ours, after our first start
        except ImportError as e:
            floor_note = f"no floor: {e}"
    results = {}
    for wname, fn in loads.items():
        times = {}
        extra = {}
        for r in range(rounds):
            for i, v in enumerate(variants):
                if v is None:
                    st = extra.get("pcs", {}).get("stats", {})
                    try:
                        v = variants[i] = FloorVariant(st.get("start_period_log2", 16),
                                                       st.get("buffer_bytes", 4 << 20),
                                                       st.get("sleep_span_ms", 20))
                    except Exception as e:  # noqa: BLE001 (the bench module is optional)
                        floor_note = f"no floor: {e}"
                        variants.pop(i)
                        continue
                print(f"  {wname} round {r} {v.name}", flush=True)
                v.start()
                t = timed(fn)
                info = v.stop()
                times.setdefault(v.name, []).append(t)
                extra[v.name] = info
        base = statistics.median(times["none"])
        row = {k: {"median_s": statistics.median(t), "ratio": statistics.median(t) / base}
               for k, t in times.items()}
        row["pcs_info"] = extra.get("pcs")
        row["floor_info"] = extra.get("floor")
        row["timing_finalize_s"] = extra.get("timing", {}).get("finalize_s")
        results[wname] = row
        print(f"{wname:12s} " + "  ".join(f"{k} {row[k]['ratio']:.3f}x" for k in times), flush=True)
    if floor_note:
        results["floor_note"] = floor_note
    return results


# ---------------------------------------------------------------------------------------------
# Child processes: memory growth per variant, and triton.profiler (which may not finish).

def child_main(args):
    import torch
    sizes = json.loads(args.sizes)
    loads = workloads(sizes)
    fn = loads[args.workload]
    fn()  # warm: torch, cuBLAS, Triton allocations happen before the measurement
    before = rss_mb()
    t0 = time.perf_counter()
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
    t_start = time.perf_counter() - t0
    run = timed(fn)
    peak = rss_mb()
    t0 = time.perf_counter()
    if args.variant == "triton":
        tp.finalize()
    elif args.variant == "floor":
        _proton_bench.pc_floor_stop()
    elif args.variant in ("timing", "pcs"):
        proton.finalize()
    fin = time.perf_counter() - t0
    # none: run twice as long to compare like with like
    print("RESULT " + json.dumps({"rss_growth_mb": peak - before, "run_s": run, "start_s": t_start,
                                  "finalize_s": fin}), flush=True)
    torch.cuda.synchronize()


def run_child(variant, workload, sizes, timeout):
    cmd = [sys.executable, str(HERE), "--child", "--variant", variant, "--workload", workload,
           "--sizes", json.dumps(sizes)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout} s", "wall_s": time.perf_counter() - t0}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": f"exit {p.returncode}: {(p.stderr or p.stdout)[-600:]}"}


# ---------------------------------------------------------------------------------------------
# The probe: correctness on a real GPU, and a quick look at the cost.

SLOW_LINE_SRC = '''
import triton
import triton.language as tl

@triton.jit
def slow_line_kernel(idx_ptr, src_ptr, out_ptr, n, iters, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i = tl.load(idx_ptr + offs, mask=mask, other=0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(iters):
        v = tl.load(src_ptr + i, mask=mask, other=0.0); i = (i + v.to(tl.int32) + 7919) % n  # SLOW
        acc += v
    tl.store(out_ptr + offs, acc, mask=mask)
'''


def probe(out_dir):
    import importlib.util
    import torch
    import proton
    from proton import _proton

    report = {"gpu": torch.cuda.get_device_name(0)}
    src = out_dir / "slow_line_kernel.py"
    src.write_text(SLOW_LINE_SRC)
    # The gather and the use that waits for it share one line: samples land on the waiting
    # instruction (the use), so a load alone on its line would not hold them.
    slow_line = next(i for i, l in enumerate(SLOW_LINE_SRC.splitlines(), 1) if "# SLOW" in l)
    spec = importlib.util.spec_from_file_location("slow_line_kernel", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    n = 1 << 20
    idx = torch.randint(0, n, (n,), device="cuda", dtype=torch.int32)
    srcv = torch.rand(n, device="cuda")
    out = torch.empty(n, device="cuda")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def slow(iters):
        mod.slow_line_kernel[(n // 1024,)](idx, srcv, out, n, iters, BLOCK=1024)

    slow(1)  # compiled and loaded before start: lines must come from Triton's cache
    torch.cuda.synchronize()
    path = str(out_dir / "probe")
    t0 = time.perf_counter()
    proton.start(path, mode="pcsampling")
    report["start_s"] = time.perf_counter() - t0
    with proton.scope("long"):
        for _ in range(20):
            slow(64)
    with proton.scope("short"):
        for _ in range(20):
            slow(16)
    with proton.scope("gemm"):
        for _ in range(50):
            a @ a
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    proton.finalize()
    report["finalize_s"] = time.perf_counter() - t0
    report["stats"] = _proton._pc_sampling_stats()
    with open(path + ".hatchet") as f:
        root = json.load(f)[0]

    def find(node, pred, trail=()):
        trail = trail + (node["frame"]["name"],)
        if pred(node):
            yield trail, node
        for c in node.get("children", []):
            yield from find(c, pred, trail)

    kernels = []
    for trail, k in find(root, lambda x: "time (ns)" in x.get("metrics", {}) and "device_id" in x.get("metrics", {})):
        lines = []
        for c in k.get("children", []):
            m = c.get("metrics", {})
            if "num_samples" not in m:
                continue
            stalls = sorted(((v, s) for s, v in m.items() if s.startswith("stalled_")), reverse=True)
            lines.append({"location": c["frame"]["name"][:160], "samples": m["num_samples"],
                          "stalled": m.get("num_stalled_samples"),
                          "stall_sum": sum(v for v, _ in stalls),
                          "top_stalls": [f"{s}={v}" for v, s in stalls[:4]]})
        lines.sort(key=lambda l: -l["samples"])
        kernels.append({"path": "/".join(trail[1:])[:200], "time_ns": k["metrics"]["time (ns)"],
                        "count": k["metrics"]["count"], "lines": lines[:8],
                        "samples": sum(l["samples"] for l in lines)})
    report["kernels"] = kernels
    report["root_metrics"] = {k: v for k, v in root.get("metrics", {}).items() if k.startswith("pc_")}
    report["slow_line_expected"] = f"slow_line_kernel.py:{slow_line}"
    checks = {}
    for scope in ("long", "short"):
        ks = [k for k in kernels if k["path"].startswith(scope + "/") and "slow_line_kernel" in k["path"]]
        if ks and ks[0]["lines"]:
            top = ks[0]["lines"][0]
            checks[f"{scope}_top_line"] = top["location"]
            checks[f"{scope}_top_is_slow_line"] = f"slow_line_kernel.py:{slow_line}@" in top["location"]
            checks[f"{scope}_top_stalls"] = top["top_stalls"]
            checks[f"{scope}_samples"] = ks[0]["samples"]
        else:
            checks[f"{scope}_samples"] = 0
    if checks.get("short_samples"):
        checks["long_over_short_samples"] = checks["long_samples"] / max(1, checks["short_samples"])
    g = [k for k in kernels if k["path"].startswith("gemm/")]
    checks["gemm_kernels"] = [(k["path"][-80:], k["samples"], [l["location"][:60] for l in k["lines"][:2]]) for k in g]
    checks["stall_sums_match"] = all(l["stall_sum"] == l["samples"] for k in kernels for l in k["lines"])
    report["checks"] = checks
    print(json.dumps(checks, indent=1))
    print("stats", json.dumps(report["stats"]))
    print("root", report["root_metrics"], "finalize_s", round(report["finalize_s"], 3))

    # Two cycles more: start/finalize twice with the same kernels.
    for cycle in range(2):
        proton.start(str(out_dir / f"cycle{cycle}"), mode="pcsampling")
        slow(16)
        proton.finalize()
        report[f"cycle{cycle}_samples"] = profile_samples(str(out_dir / f"cycle{cycle}.hatchet"))
    print("cycles", report["cycle0_samples"], report["cycle1_samples"])
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=".")
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="gemm,tiny_triton,tiny_torch,mlp")
    ap.add_argument("--no-triton", action="store_true", help="skip triton.profiler")
    ap.add_argument("--triton-timeout", type=int, default=120)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--variant", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_main(args)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"argv": sys.argv}
    if args.probe:
        sizes = {"gemm": 50, "tiny": 2000, "mlp": 20, "only": args.only.split(",")}
        if args.only == ap.get_default("only"):
            sizes["only"] = ["gemm", "tiny_triton", "tiny_torch"]
        t0 = time.perf_counter()
        report["probe"] = probe(out)
        (out / "pc_probe.json").write_text(json.dumps(report, indent=1, default=str))  # if a later stage crashes
        report["memory"] = {v: run_child(v, "gemm", sizes, 60) for v in ("none", "pcs", "floor")}
        print("memory", json.dumps(report["memory"]), flush=True)
        (out / "pc_probe.json").write_text(json.dumps(report, indent=1, default=str))
        report["table"] = in_process_table(sizes, rounds=2, use_floor=True)
        if not args.no_triton:
            report["triton_gemm"] = run_child("triton", "gemm", sizes, 45)
            base = report["memory"]["none"].get("run_s")
            tri = report["triton_gemm"].get("run_s")
            print("triton.profiler pcsampling, gemm x50:", report["triton_gemm"],
                  f"ratio {tri / base:.1f}x" if base and tri else "")
        report["wall_s"] = time.perf_counter() - t0
    else:
        sizes = {"gemm": 100, "tiny": 5000, "mlp": 200, "only": args.only.split(",")}
        report["table"] = in_process_table(sizes, rounds=args.rounds, use_floor=True)
        report["memory"] = {}
        for w in ("gemm", "mlp"):
            if w in sizes["only"]:
                report["memory"][w] = {v: run_child(v, w, sizes, 300) for v in ("none", "timing", "pcs", "floor")}
        if not args.no_triton:
            report["triton"] = {w: run_child("triton", w, sizes, args.triton_timeout) for w in sizes["only"]}
            report["none_child"] = {w: run_child("none", w, sizes, args.triton_timeout) for w in sizes["only"]}
        write_markdown(report, out / "pc_sampling.md")
    try:
        import torch
        report["gpu"] = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001
        pass
    name = "pc_probe.json" if args.probe else "pc_sampling.json"
    (out / name).write_text(json.dumps(report, indent=1, default=str))
    print("wrote", out / name)


def write_markdown(report, path):
    t = report["table"]
    lines = [f"# PC sampling cost ({report.get('gpu', '?')})", "",
             "| workload | timing only | our PC sampling | floor | triton.profiler | samples | buffer full | finalize |",
             "|---|---|---|---|---|---|---|---|"]
    for w, row in t.items():
        if not isinstance(row, dict) or "none" not in row:
            continue
        tri = report.get("triton", {}).get(w, {})
        base = report.get("none_child", {}).get(w, {}).get("run_s")
        tri_s = tri.get("error") or (f"{tri['run_s'] / base:.1f}x" if base and "run_s" in tri else "?")
        st = (row.get("pcs_info") or {}).get("stats", {})
        lines.append(f"| {w} | {row.get('timing', {}).get('ratio', 0):.3f}x | {row.get('pcs', {}).get('ratio', 0):.3f}x | "
                     f"{row.get('floor', {}).get('ratio', float('nan')):.3f}x | {tri_s} | {st.get('samples')} | "
                     f"{st.get('buffer_full')} | {(row.get('pcs_info') or {}).get('finalize_s', 0):.3f} s |")
    lines += ["", "Host memory growth (MB, fresh process, after warm-up):", ""]
    for w, m in report.get("memory", {}).items():
        lines.append(f"- {w}: " + ", ".join(f"{v} {r.get('rss_growth_mb', r.get('error'))}" for v, r in m.items()))
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
