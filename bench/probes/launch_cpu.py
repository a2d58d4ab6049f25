"""Where the launching thread's time goes in the 1,000-launch wall loop, by library.

    PYTHONPATH=build/bench/bench/native python bench/probes/launch_cpu.py [--rounds 30] [--out FILE]

The wall-time row of instrumentation_bench.py says how much slower a loop of instrumented
launches is under each profiler; this says where on the launching thread the difference is
spent. The loop of `loop_one_region` (132 CTAs, launch-bound: the thread is busy all the time)
runs in rounds that take turns between variants:

  plain    no profiler, the kernel without regions
  timing   kernel timing alone (proton.start(), CUPTI), the same kernel
  fixed    an instrumentation session whose kernels write into one Python-allocated buffer:
           kernel timing and the instrumented launch path, without our allocator, launch
           queue, copy-back or decoding
  cfixed   the same with the buffer handed out by an empty C++ function through nanobind, as
           our allocator is called: the floor Proton is compared with
  proton   an instrumentation session with CUPTI's kernel time (PROTON_INSTR_KERNEL_TIME=1)
  barec    the instrumented binary with the empty C++ allocator and no profiler at all:
           Triton's launch path for an instrumented kernel by itself
  cycles   Proton as it starts: region cycles only (no CUPTI kernel records)

while _proton_bench's sampler (bench/native/cpu_sampler.h) takes the thread's program counter
every `--period-us`. Printed: us per launch by library for each variant and the symbols that
differ most between neighbouring variants; --out writes them as JSON. A probe, not a target:
samples land where the thread is, so time the thread waits in a system call shows in libc.
"""

import argparse
import collections
import json
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parents[1]  # bench/
sys.path.insert(0, str(HERE))

from lib import machine  # noqa: E402

VARIANTS = ("plain", "timing", "fixed", "cfixed", "proton", "barec", "cycles")


def group_of(library):
    """A short name for the object a sample fell in."""
    base = os.path.basename(library)
    for key, name in (("libcuda.so", "libcuda"), ("libcupti", "libcupti"), ("_proton", "proton"),
                      ("libpython", "python"), ("python3", "python"), ("launcher", "triton launcher"),
                      ("cuda_utils", "triton launcher"), ("libtorch", "torch"), ("libc10", "torch"),
                      ("libc.so", "libc"), ("ld-linux", "ld.so"), ("libstdc++", "libstdc++")):
        if key in base:
            return name
    return base or "?"


def compact_chain(caller):
    """The stack scan's code words, shortened: the driver's exported entry points (its internal
    addresses say little) and the other libraries, each run of one named once."""
    out = []
    for c in caller.split(" | "):
        library, symbol = c.split(" ", 1)
        g = group_of(library)
        if g == "libcuda" and symbol.startswith("+0x"):
            continue
        name = f"{g} {symbol}" if g in ("libcuda", "libcupti", "libc") and not symbol.startswith(
            "+0x") else g
        if not out or out[-1] != name:
            out.append(name)
    return " | ".join(out[:10])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument("--period-us", type=int, default=100)
    ap.add_argument("--out", type=pathlib.Path)
    ap.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/launch_cpu"))
    args = ap.parse_args()

    import torch

    import _proton_bench as pb
    import instrumentation_kernels as K
    import proton
    from instrumentation_bench import FixedBuffer, bare_instrumentation, start_session
    from triton.runtime import _allocation

    args.work.mkdir(parents=True, exist_ok=True)
    x, out, grid, kw = K.loop_args(torch, ctas=132)
    K.loop_one_region[grid](x, out, num_warps=4, **kw)  # compile both binaries first
    s = proton.start(str(args.work / "warm"), backend="instrumentation")
    K.loop_one_region[grid](x, out, num_warps=4, **kw)
    torch.cuda.synchronize()
    proton.finalize(s)

    c_buffer = torch.zeros(16 << 20, dtype=torch.uint8, device="cuda")
    wall = collections.defaultdict(list)
    sync = collections.defaultdict(list)  # us in the synchronize after each loop

    def loop(label):
        torch.cuda.synchronize()
        pb.cpu_sampler_label(label)
        t0 = time.perf_counter()
        for _ in range(args.launches):
            K.loop_one_region[grid](x, out, num_warps=4, **kw)
        pb.cpu_sampler_label(label + len(VARIANTS))  # the synchronize at the end, apart
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        pb.cpu_sampler_label(-1)
        wall[VARIANTS[label]].append((t2 - t0) / args.launches * 1e6)
        sync[VARIANTS[label]].append((t2 - t1) * 1e6)

    def bare(label):
        pb.set_fixed_scratch(c_buffer.data_ptr())
        with bare_instrumentation(pb.fixed_scratch):
            loop(label)

    def run(variant, r):
        label = VARIANTS.index(variant)
        if variant == "plain":
            return loop(label)
        if variant == "barec":
            return bare(label)
        backend = "cupti" if variant == "timing" else "instrumentation"
        session = start_session(args.work / f"{variant}{r}", backend, variant != "cycles")
        ours = _allocation._profile_allocator.get()
        if variant == "fixed":
            _allocation.set_profile_allocator(FixedBuffer())
        elif variant == "cfixed":
            pb.set_fixed_scratch(c_buffer.data_ptr())
            _allocation.set_profile_allocator(pb.fixed_scratch)
        try:
            loop(label)
        finally:
            _allocation.set_profile_allocator(ours)
            proton.finalize(session)

    pb.cpu_sampler_start(args.period_us)
    try:
        for r in range(args.rounds):
            order = VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))
            for v in order:
                run(v, r)
    finally:
        pb.cpu_sampler_stop()
    report = pb.cpu_sampler_report()

    per_launch = args.rounds * args.launches
    us = args.period_us / per_launch  # one sample, in us per launch
    by_group = {v: collections.Counter() for v in VARIANTS}
    by_symbol = {v: collections.Counter() for v in VARIANTS}
    sync_samples = {v: collections.Counter() for v in VARIANTS}
    for label, library, symbol, caller, count in report["rows"]:
        if caller:
            symbol += " <- " + compact_chain(caller)
        if label >= len(VARIANTS):  # in the synchronize: counted in the totals, shown apart
            sync_samples[VARIANTS[label - len(VARIANTS)]][f"{group_of(library)} {symbol}"] += (
                count * us)
        v = VARIANTS[label % len(VARIANTS)]
        g = group_of(library)
        by_group[v][g] += count * us
        by_symbol[v][f"{g} {symbol}"] += count * us
    by_leaf = {v: collections.Counter() for v in VARIANTS}  # callers left out
    for v in VARIANTS:
        for k, x in by_symbol[v].items():
            by_leaf[v][k.split(" <- ")[0]] += x
    result = {
        "gpu": machine.gpu_name(), "rounds": args.rounds, "launches": args.launches,
        "period_us": args.period_us, "dropped": report["dropped"],
        "wall_us": {v: {"median": sorted(w)[len(w) // 2], "min": min(w)} for v, w in wall.items()},
        "sync_us": {v: {"median": sorted(w)[len(w) // 2], "max": max(w)} for v, w in sync.items()},
        "sampled_us": {v: sum(by_group[v].values()) for v in VARIANTS},
        "sync_sampled_us": {v: dict(sync_samples[v].most_common(5)) for v in VARIANTS},
        "by_group_us": {v: dict(by_group[v].most_common()) for v in VARIANTS},
        "symbol_diffs_us": {},
        "top_symbols_us": {v: dict(by_symbol[v].most_common(200)) for v in VARIANTS},
        "by_leaf_us": {v: dict(by_leaf[v].most_common(100)) for v in VARIANTS},
    }
    print(f"{result['gpu']}: {args.rounds} rounds x {args.launches} launches, a sample every "
          f"{args.period_us} us; us per launch")
    print("variant  wall(median/min)  sync us(median/max)  sampled  " + "  ".join(
        g for g, _ in by_group["proton"].most_common(8)))
    top = [g for g, _ in by_group["proton"].most_common(8)]
    for v in VARIANTS:
        w = result["wall_us"][v]
        y = result["sync_us"][v]
        print(f"{v:8s} {w['median']:6.2f}/{w['min']:6.2f}  {y['median']:7.0f}/{y['max']:7.0f}  "
              f"{result['sampled_us'][v]:7.2f}  " +
              "  ".join(f"{by_group[v][g]:.2f}" for g in top))
    for a, b in (("timing", "plain"), ("fixed", "timing"), ("cfixed", "fixed"),
                 ("proton", "cfixed"), ("barec", "plain"), ("cycles", "barec")):
        diff = collections.Counter()
        for k in set(by_symbol[a]) | set(by_symbol[b]):
            diff[k] = by_symbol[a][k] - by_symbol[b][k]
        rows = sorted(diff.items(), key=lambda kv: -abs(kv[1]))[:12]
        result["symbol_diffs_us"][f"{a}-{b}"] = dict(rows)
        print(f"\n{a} - {b}: " + ", ".join(f"{k} {d:+.3f}" for k, d in rows))
    for v in VARIANTS:
        print(f"in {v}'s synchronize: " + ", ".join(
            f"{k} {d:.3f}" for k, d in sync_samples[v].most_common(5)))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
