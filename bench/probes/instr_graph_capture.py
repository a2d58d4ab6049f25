"""An instrumented Triton kernel captured into a CUDA graph: triton.profiler's answer beside
Proton's, and what a replay costs.

Each profiler runs in its own interpreter: a session with backend="instrumentation", one eager
launch, then `torch.cuda.graph` capture of one launch and three replays. Printed per profiler
(one JSON line): whether the capture survived, and Proton's counters (captured launches,
replays copied back). Proton's run then times replays of a graph of ten instrumented launches
with the session open (records copied back at every replay), after finalize (captured kernels
still instrumented, nothing copied) and of the same ten launches captured with no session
(uninstrumented), and the per-launch wall time of eager launches on the legacy stream and on a
side stream (the allocator's capture query).

    python bench/probes/instr_graph_capture.py            # on a GPU machine with triton 3.6
    python bench/probes/instr_graph_capture.py --json out.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def best_us(fn, n, rounds=5):
    """The best of `rounds` timings of `n` calls of fn, in µs per call (device synchronized)."""
    import torch

    best = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return round(best, 2)


def child(which, out_dir):
    os.environ["PROTON_BENCH_PL"] = "triton" if which == "triton" else "proton"
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import torch
    import instrumentation_kernels as K

    if which == "triton":
        import triton.profiler as P
    else:
        import proton as P
    res = {"profiler": which}
    x, o, grid, kw = K.loop_args(torch, ctas=64, iters=16, block=256)

    def launch():
        K.loop_one_region[grid](x, o, num_warps=4, **kw)

    def graph_of(n):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n):
                launch()
        return g

    P.start(os.path.join(out_dir, which), backend="instrumentation")
    launch()
    torch.cuda.synchronize()
    try:
        g = graph_of(1)
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        res["capture"] = "ok"
    except Exception as e:  # triton.profiler's exit synchronizes the capturing stream
        res["capture"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    if which == "proton":
        from proton.hooks import instrumentation as I

        res["eager_us_legacy_stream"] = best_us(launch, 1000)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            res["eager_us_side_stream"] = best_us(launch, 1000)
        g10 = graph_of(10)
        res["replay_us_10_recorded"] = best_us(g10.replay, 200)
    try:
        P.finalize()
        res["finalize"] = "ok"
    except Exception as e:
        res["finalize"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    if which == "proton":
        s = I.stats()
        res["stats"] = {k: s[k] for k in ("graph_launches", "graph_replays", "graph_dropped",
                                          "graph_unheard", "copy_errors")}
        res["replay_us_10_after_finalize"] = best_us(g10.replay, 200)  # no copies
        res["replay_us_10_uninstrumented"] = best_us(graph_of(10).replay, 200)
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--child", choices=("triton", "proton"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as d:
            child(args.child, d)
        return
    results = []
    for which in ("triton", "proton"):
        p = subprocess.run([sys.executable, __file__, "--child", which], capture_output=True,
                           text=True, timeout=300)
        line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        try:
            results.append(json.loads(line))
        except json.JSONDecodeError:
            results.append({"profiler": which, "error": (p.stderr or p.stdout)[-500:]})
        print(json.dumps(results[-1]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
