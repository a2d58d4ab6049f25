"""GPU probe for the instrumentation runtime (one H100 run, Triton 3.6).

    python bench/probes/instrumentation_probe.py OUT_DIR

1. raw: runs an instrumented kernel with a plain torch buffer as profile scratch, dumps the
   buffer (raw_<kernel>.bin), decodes it with our C++ decoder and prints per-CTA headers,
   per-warp indices and region cycles;
2. triton: the same kernels under triton.profiler (subprocess), its region metrics;
3. proton: the same kernels under proton.start(backend="instrumentation"), ours, side by side.
"""

import json
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parents[1]  # bench/
sys.path.insert(0, str(HERE))

from lib import proc  # noqa: E402

KERNELS = ("loop_one_region", "loop_region_per_iter")


def raw_dump(out_dir):
    import torch
    from triton.runtime import _allocation

    import proton
    import instrumentation_kernels as K
    from proton.hooks.instrumentation import InstrumentationHook

    bufs = []

    def alloc(size, alignment, stream):
        bufs.append(torch.zeros(size, dtype=torch.uint8, device="cuda"))
        return bufs[-1]

    report = {}
    for mode in ("default:optimizations=", None):
        hook = InstrumentationHook(mode)
        hook.activate()
        _allocation.set_profile_allocator(alloc)
        try:
            for name in KERNELS:
                bufs.clear()
                x, out, grid, kw = K.loop_args(torch, ctas=8)
                compiled = getattr(K, name)[grid](x, out, num_warps=4, **kw)
                torch.cuda.synchronize()
                raw = bufs[-1].cpu().numpy().tobytes()
                tag = f"{name}_{'clock64' if mode else 'clock32'}"
                (out_dir / f"raw_{tag}.bin").write_bytes(raw)
                scratch = compiled.metadata.profile_scratch_size
                hdr = struct.unpack_from("<IIII QQQ", raw, 0)
                idx = struct.unpack_from("<4I", raw, 40)
                first_events = [struct.unpack_from("<II", raw, 56 + 8 * i) for i in range(6)]
                d = proton._proton.instr_decode(raw, 4, scratch, [])
                cyc = [s[5] - s[4] for s in d["samples"]]
                report[tag] = {
                    "scratch": scratch, "bytes": len(raw), "header": hdr, "indices": idx,
                    "first_events_hex": [[hex(a), hex(b)] for a, b in first_events],
                    "samples": len(d["samples"]), "cycles_sum": sum(cyc),
                    "cycles_min": min(cyc) if cyc else None, "cycles_max": max(cyc) if cyc else None,
                    "errors": d["errors"], "unmatched": d["unmatched_events"],
                    "wrapped": d["wrapped_units"]}
                print(tag, json.dumps(report[tag]))
        finally:
            hook.deactivate()
    return report


TRITON_RUN = r'''
import json, os, sys, torch
os.environ["PROTON_BENCH_PL"] = "triton"
sys.path.insert(0, sys.argv[1])
import triton.profiler as tp
import instrumentation_kernels as K
name = sys.argv[2]
s = tp.start(name, backend="instrumentation")
for kernel in ("loop_one_region", "loop_region_per_iter"):
    x, out, grid, kw = K.loop_args(torch, ctas=8)
    getattr(K, kernel)[grid](x, out, num_warps=4, **kw)
torch.cuda.synchronize()
tp.finalize()
'''


def regions(path):
    root = json.load(open(path))[0]
    found = {}

    def walk(node, kernel=None):
        for c in node.get("children", []):
            m = c.get("metrics", {})
            if "cycles" in m:
                found[f"{kernel}/{c['frame']['name']}"] = {
                    k: m.get(k) for k in ("cycles", "normalized_cycles", "count", "device_id",
                                          "device_type")}
            walk(c, c["frame"]["name"] if "cycles" not in m else kernel)

    walk(root)
    return found


def main():
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "instr_probe")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"raw": raw_dump(out_dir)}
    r = proc.run([sys.executable, "-c", TRITON_RUN, HERE, out_dir / "triton"], timeout=120)
    report["triton_stderr"] = r.stderr[-2000:]
    report["triton"] = regions(out_dir / "triton.hatchet") if r.rc == 0 else None

    import torch
    import proton
    import instrumentation_kernels as K
    from proton.hooks import instrumentation as instr

    for optimizations in ("", None):  # Triton's defaults, then ours
        tag = "proton_triton_options" if optimizations == "" else "proton"
        mode = "default:optimizations=" if optimizations == "" else None
        s = proton.start(str(out_dir / tag), backend="instrumentation", mode=mode)
        for kernel in KERNELS:
            x, out, grid, kw = K.loop_args(torch, ctas=8)
            getattr(K, kernel)[grid](x, out, num_warps=4, **kw)
        torch.cuda.synchronize()
        proton.finalize(s)
        report[tag] = regions(out_dir / f"{tag}.hatchet")
    report["stats"] = instr.stats()
    (out_dir / "probe.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({k: report[k] for k in ("triton", "proton_triton_options", "proton", "stats")},
                     indent=1, default=str))


if __name__ == "__main__":
    main()
