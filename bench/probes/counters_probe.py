"""GPU probe for hardware counters: one command, every stage in its own process.

    python bench/probes/counters_probe.py --out $OUT/probe [--stages a,b,...]

Stages (each a subprocess with a timeout, so one crash does not hide the rest; each writes
<stage>.json and <stage>.log under --out):
  sweep   the PM-sampling floor (bench/native/pm_floor.h) with kernel activity beside it, over
          intervals, hardware-buffer sizes and evaluate on/off: cost on a GEMM loop and on tiny
          launches, samples, overflows, decode and evaluate time per sample, and the process's
          resident memory after each setup step (profiler host, hardware buffer, image).
  values  proton mode="counters" (data="tree,trace") on an 8192^2 bf16 GEMM, a 256 MB copy
          kernel, tiny launches and a graph replay, each alone, then all back to back: values
          per kernel, bytes moved vs measured, where sample edges fall against kernel edges,
          and kernel durations under kernel timing vs counters (does sampling shift them?).
  range   the Range Profiler (range=user and range=auto) on the same GEMM and copy, one launch
          at a time: per-launch values, for the comparison with ncu.
  ncu     Nsight Compute on the same kernels, as the program runs (no cache flush, no clock
          locking) and with its defaults (flush + base clocks).
  final   in one process: kernel timing, then mode="counters" at several intervals: the GEMM
          loop and tiny launches over baseline, samples, overflows, decode cost, copy bytes vs
          bytes moved, kernel durations (clock shift), resident memory.
  floor2  the PM floor with Proton's buffer sizes at those intervals, and a lighter metric set:
          image bytes and decode cost per sample.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/

from lib import proc  # noqa: E402

PM_SET = ["dram__bytes_read.sum", "dram__bytes_write.sum",
          "sm__warps_active.avg.pct_of_peak_sustained_active",
          "TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_active",
          "TPC.TriageCompute.sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_sustained_active",
          "lts__t_sectors.sum", "gpc__cycles_elapsed.avg.per_second"]

NCU_METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum",
               "sm__warps_active.avg.pct_of_peak_sustained_active",
               "sm__inst_executed.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
               "lts__t_sectors.sum", "gpc__cycles_elapsed.avg.per_second",
               "gpu__time_duration.sum"]

STAGE = r'''
import json, os, statistics, sys, time
import torch
from lib.rss import rss_kb as vmrss
OUT, stage = sys.argv[1], sys.argv[2]
PM_SET = json.loads(sys.argv[3])
res = {"stage": stage}

def save():
    with open(os.path.join(OUT, stage + ".json"), "w") as f:
        json.dump(res, f, indent=1, default=str)

def timed(fn, n):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t

def walk(node, path=""):
    p = path + "/" + node["frame"]["name"][:60]
    yield p, node
    for c in node.get("children", []):
        yield from walk(c, p)

def kernels(path):
    data = json.load(open(path))
    return {p: n["metrics"] for p, n in walk(data[0])
            if n.get("metrics", {}).get("count") and "device_id" in n["metrics"]}

torch.manual_seed(0)
big_a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
big_b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
src = torch.empty(64 << 20, device="cuda", dtype=torch.float32)  # 256 MB
dst = torch.empty_like(src)
tiny = torch.zeros(16, device="cuda")
gemm8k = lambda: torch.matmul(big_a, big_b)
gemm = lambda: torch.matmul(a, b)
copy = lambda: torch.mul(src, 1.0, out=dst)  # a copy kernel: reads and writes 256 MB
small = lambda: tiny.add_(1)
for f in (gemm8k, gemm, copy, small):
    f()
torch.cuda.synchronize()

def rest():
    torch.cuda.synchronize()
    time.sleep(0.003)

INTERVALS = [100, 250, 1000]

try:
    if stage == "sweep":
        import _proton_bench as P
        base = {"gemm": min(timed(gemm, 100) for _ in range(3)),
                "tiny": min(timed(small, 5000) for _ in range(3))}
        res["baseline_s"] = base
        P._floor_start()
        kf = {"gemm": min(timed(gemm, 100) for _ in range(3)),
              "tiny": min(timed(small, 5000) for _ in range(3))}
        res["kernel_floor"] = {k: kf[k] / base[k] for k in kf}
        configs = [(100, 8, True), (100, 2, True), (100, 32, True), (200, 8, True),
                   (50, 8, True), (20, 8, True), (20, 8, False), (10, 8, True), (20, 2, True)]
        res["configs"] = []
        for interval_us, mb, evaluate in configs:
            t0 = time.perf_counter()
            P._pm_floor_start(PM_SET, interval_us=interval_us, hardware_buffer=mb << 20,
                              image_samples=1024, decode_ms=20, evaluate=evaluate,
                              keep_samples=0)
            start_s = time.perf_counter() - t0
            g = min(timed(gemm, 100) for _ in range(3))
            t = min(timed(small, 5000) for _ in range(3))
            s = dict(P._pm_floor_stop())
            row = {"interval_us": interval_us, "buffer_mb": mb, "evaluate": evaluate,
                   "start_s": start_s, "gemm": g / base["gemm"], "tiny": t / base["tiny"],
                   "tiny_us_per_launch_above_kernel_floor": (t - kf["tiny"]) / 5000 * 1e6,
                   **{k: v for k, v in s.items() if k != "kept"}}
            if s["samples"]:
                row["decode_us_per_sample"] = s["decode_ns"] / s["samples"] / 1000
                row["evaluate_us_per_sample"] = s["evaluate_ns"] / s["samples"] / 1000
            res["configs"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k not in ("rss_kb",)}), flush=True)
            save()
        P._floor_stop()
    elif stage == "values":
        import proton, proton.counters

        def each_kind_alone():
            for name, f, n in (("gemm8k", gemm8k, 5), ("copy", copy, 10), ("gemm", gemm, 50),
                               ("tiny", small, 2000)):
                with proton.scope(name):
                    for _ in range(n):
                        f()
                rest()

        # Kernel durations under kernel timing alone first (clock behaviour without sampling).
        proton.start(os.path.join(OUT, "timing"))
        each_kind_alone()
        proton.finalize()
        res["timing"] = kernels(os.path.join(OUT, "timing.hatchet"))
        # The same under mode="counters", each kind alone, then back to back, then a graph.
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            copy(); small()
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            copy(); small(); copy()
        t0 = time.perf_counter()
        proton.start(os.path.join(OUT, "counters"), data="tree,trace", mode="counters")
        res["start_s"] = time.perf_counter() - t0
        each_kind_alone()
        with proton.scope("mixed"):
            for _ in range(5):
                gemm8k(); copy(); small(); gemm()
        rest()
        with proton.scope("graph"):
            for _ in range(5):
                g.replay()
        rest()
        t0 = time.perf_counter()
        proton.finalize()
        res["finalize_s"] = time.perf_counter() - t0
        res["stats"] = proton.counters.stats()
        res["counters"] = kernels(os.path.join(OUT, "counters.hatchet"))
        res["root"] = json.load(open(os.path.join(OUT, "counters.hatchet")))[0]["metrics"]
        res["copy_bytes_per_launch"] = 2 * src.numel() * 4
        # Alignment: per copy kernel (trace), the DRAM rate of the samples around its edges.
        tr = json.load(open(os.path.join(OUT, "counters.chrome_trace")))
        ev = tr["traceEvents"]
        reads = sorted((e["ts"], e["args"]["value"]) for e in ev
                       if e.get("ph") == "C" and e["name"] == "dram__bytes_read.sum.per_second")
        boxes = sorted((e["ts"], e["ts"] + e["dur"], e["name"][:40]) for e in ev
                       if e.get("ph") == "X" and "dur" in e and e.get("pid") == 0
                       and e.get("cat") != "cpu")
        res["trace_samples"] = len(reads)
        res["trace_kernels"] = len(boxes)
        near = []
        import bisect
        ts = [r[0] for r in reads]
        for k0, k1, kname in boxes:
            if k1 - k0 < 50 or "elementwise" not in kname.lower():  # the copies, not tiny
                continue
            i = bisect.bisect_left(ts, k0 - 300)
            j = bisect.bisect_right(ts, k1 + 300)
            near.append({"kernel": [k0, k1, kname],
                         "samples": [[round(t - k0, 1), round(v / 1e9, 1)] for t, v in reads[i:j]]})
            if len(near) >= 4:
                break
        res["copy_edges_GBps"] = near
    elif stage == "range":
        import proton, proton.counters
        for mode in ("counters:range=user", "counters:range=auto"):
            tag = mode.split("=")[-1]
            proton.start(os.path.join(OUT, "range_" + tag), mode=mode)
            for name, f in (("gemm8k", gemm8k), ("copy", copy), ("gemm", gemm)):
                with proton.scope(name):
                    for _ in range(3):
                        f()
                        torch.cuda.synchronize()
            proton.finalize()
            res[tag] = kernels(os.path.join(OUT, "range_" + tag + ".hatchet"))
            res[tag + "_stats"] = proton.counters.stats()
    elif stage == "final":
        import proton, proton.counters
        base = {"gemm": min(timed(gemm, 100) for _ in range(3)),
                "tiny": min(timed(small, 5000) for _ in range(3))}
        res["baseline_s"] = base
        print(json.dumps(base), flush=True)
        nbytes = src.numel() * 4
        for tag, mode in [("timing", None)] + [(f"counters_{i}", f"counters:interval_us={i}")
                                               for i in INTERVALS]:
            row = {"mode": mode}
            try:
                vm0 = vmrss()
                t0 = time.perf_counter()
                proton.start(os.path.join(OUT, tag), **({} if mode is None else {"mode": mode}))
                row["start_s"] = time.perf_counter() - t0
                row["vm_start_kb"] = vmrss() - vm0
                with proton.scope("gemm"):
                    g = min(timed(gemm, 100) for _ in range(3))
                with proton.scope("tiny"):
                    t = min(timed(small, 5000) for _ in range(3))
                rest()
                with proton.scope("copy"):
                    for _ in range(10):
                        copy()
                rest()
                with proton.scope("gemm8k"):
                    for _ in range(5):
                        gemm8k()
                rest()
                row["vm_run_kb"] = vmrss() - vm0
                t0 = time.perf_counter()
                proton.finalize()
                row["finalize_s"] = time.perf_counter() - t0
                row["gemm"] = g / base["gemm"]
                row["tiny"] = t / base["tiny"]
                row["tiny_us_per_launch"] = (t - base["tiny"]) / 5000 * 1e6
                st = proton.counters.stats()
                row["stats"] = {k: v for k, v in st.items() if k.startswith("pm_")}
                if st.get("pm_samples"):
                    row["decode_us_per_sample"] = st["pm_decode_ns"] / st["pm_samples"] / 1e3
                    row["evaluate_us_per_sample"] = st["pm_evaluate_ns"] / st["pm_samples"] / 1e3
                ks = kernels(os.path.join(OUT, tag + ".hatchet"))
                for path, m in ks.items():
                    scope = path.split("/")[2] if path.count("/") >= 2 else ""
                    if scope not in ("gemm", "tiny", "copy", "gemm8k"):
                        continue
                    info = {"count": m["count"], "mean_ns": m["time (ns)"] / m["count"]}
                    for k, v in m.items():
                        if k.endswith(" (ns-weighted)") and m.get("counter time (ns)"):
                            info[k[:-14][-40:]] = v / m["counter time (ns)"]
                        elif k.startswith(("dram__", "lts__", "counter samples")):
                            info[k] = v
                    if scope == "copy" and "dram__bytes_read.sum" in m:
                        info["bytes_vs_moved"] = (m["dram__bytes_read.sum"] +
                                                  m["dram__bytes_write.sum"]) / (2 * nbytes * m["count"])
                    row.setdefault("kernels", {})[scope] = info
                root = json.load(open(os.path.join(OUT, tag + ".hatchet")))[0]["metrics"]
                row["root"] = {k: v for k, v in root.items() if k.startswith("counter ")}
            except Exception:
                import traceback
                row["exception"] = traceback.format_exc()[-1500:]
            res[tag] = row
            print(tag, json.dumps(row)[:3000], flush=True)
            save()
        res["baseline_end_s"] = {"gemm": min(timed(gemm, 100) for _ in range(3)),
                                 "tiny": min(timed(small, 5000) for _ in range(3))}
    elif stage == "floor2":
        import _proton_bench as P
        light = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors.sum",
                 "gpc__cycles_elapsed.avg.per_second"]
        base = {"gemm": min(timed(gemm, 100) for _ in range(3)),
                "tiny": min(timed(small, 5000) for _ in range(3))}
        P._floor_start()
        kf = {"gemm": min(timed(gemm, 100) for _ in range(3)),
              "tiny": min(timed(small, 5000) for _ in range(3))}
        res["kernel_floor"] = {k: kf[k] / base[k] for k in kf}
        print(json.dumps(res), flush=True)
        res["configs"] = []
        for interval_us, metrics, set_name in [(100, PM_SET, "default"), (100, light, "light"),
                                               (250, PM_SET, "default"), (1000, PM_SET, "default")]:
            per_period = 20000 // interval_us
            mb = min(64, max(4, (200000 // interval_us + 1) * 32 // 1024 + 1))
            image = min(1024, max(32, 2 * per_period + 1))
            P._pm_floor_start(metrics, interval_us=interval_us, hardware_buffer=mb << 20,
                              image_samples=image, decode_ms=20, evaluate=True, keep_samples=0)
            g = min(timed(gemm, 100) for _ in range(3))
            t = min(timed(small, 5000) for _ in range(3))
            s = dict(P._pm_floor_stop())
            row = {"interval_us": interval_us, "set": set_name, "buffer_mb": mb,
                   "image_samples": image, "gemm": g / base["gemm"], "tiny": t / base["tiny"],
                   **{k: v for k, v in s.items() if k != "kept"}}
            row["image_bytes_per_sample"] = s["image_bytes"] / image
            if s["samples"]:
                row["decode_us_per_sample"] = s["decode_ns"] / s["samples"] / 1000
                row["evaluate_us_per_sample"] = s["evaluate_ns"] / s["samples"] / 1000
            res["configs"].append(row)
            print(json.dumps(row), flush=True)
            save()
        P._floor_stop()
    elif stage == "ncu_target":
        with torch.cuda.nvtx.range("measure"):
            for f in (gemm8k, copy, gemm):
                for _ in range(3):
                    f()
                torch.cuda.synchronize()
except Exception:
    import traceback
    res["exception"] = traceback.format_exc()
save()
print(json.dumps({k: v for k, v in res.items() if k not in ("counters", "timing", "configs")},
                 default=str)[:6000])
'''


def run(cmd, out, name, timeout):
    t = time.time()
    p = proc.run_logged(cmd, os.path.join(out, name + ".log"), timeout, env=proc.env_with_bench())
    rc = 124 if p.timed_out else p.rc
    print(f"== {name}: rc={rc} {time.time() - t:.1f}s", flush=True)
    print((p.stdout + "\n--- stderr ---\n" + p.stderr)[-3000:], flush=True)
    return rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "probe"))
    ap.add_argument("--stages", default="sweep,values,range,ncu")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    script = os.path.join(args.out, "stage.py")
    with open(script, "w") as f:
        f.write(STAGE)
    py = sys.executable
    timeouts = {"sweep": 60, "values": 60, "range": 40, "final": 40, "floor2": 25}
    for stage in args.stages.split(","):
        if stage == "ncu":
            for tag, extra in (("ncu_inplace", ["--cache-control", "none", "--clock-control",
                                                "none"]), ("ncu_default", [])):
                run(["ncu", "--metrics", ",".join(NCU_METRICS), "--csv", "--print-units", "base",
                     *extra, "--nvtx", "--nvtx-include", "measure/", py, script, args.out,
                     "ncu_target", json.dumps(PM_SET)], args.out, tag, 90)
        else:
            run([py, script, args.out, stage, json.dumps(PM_SET)], args.out, stage,
                timeouts.get(stage, 60))


if __name__ == "__main__":
    main()
