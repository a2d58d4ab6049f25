"""Replays of a 100-kernel CUDA graph instantiated before profiling starts, per mode (needs a
GPU and torch).

    python3 bench/graph_pre_start_timing.py [--rounds 2] [--json F]

mode="graph" meets such a graph without its capture and runs the default mode's path (the
GPU test test_graph_mode_with_graphs_from_before_start_never_enables_the_graph_trace checks
that deterministically: one fallback, the graph trace never enabled). This measures what it
costs: each mode (none / default / graph / graph_eager, the last with
PROTON_GRAPH_TRACE_EAGER=1, the behaviour before the fallback) in a fresh process, rounds
interleaved, the best of 15 regions of 50 replays after 200 warm-up replays per process, and
the best over rounds. graph should equal default within the noise of separate processes
(about 10%); graph_eager was 1.63x against 1.38x on an H100.
"""

import argparse
import json
import os
import subprocess
import sys
import textwrap

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, tempfile, time, torch, proton
    from workloads import capture_add_graph

    mode = sys.argv[1]
    nodes, replays = 100, 50
    x = torch.zeros(1024, device="cuda")
    for _ in range(nodes):
        x.add_(1.0)
    g = capture_add_graph(x, nodes)
    if mode != "none":
        if mode == "graph_eager":
            os.environ["PROTON_GRAPH_TRACE_EAGER"] = "1"
        proton.start(os.path.join(tempfile.mkdtemp(), "p"),
                     mode="graph" if mode.startswith("graph") else None)
    for _ in range(200):
        g.replay()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(replays):
            g.replay()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    if mode != "none":
        proton.finalize()
    print(json.dumps({"us_per_kernel": best / (nodes * replays) * 1e6}))
    """
)

MODES = ["none", "default", "graph", "graph_eager"]


def run(mode):
    path = [BENCH_DIR] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    env.pop("PROTON_GRAPH_TRACE_EAGER", None)
    r = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{mode}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["us_per_kernel"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", help="write {mode: best us/kernel} here")
    args = ap.parse_args()
    best = {m: float("inf") for m in MODES}
    for _ in range(args.rounds):
        for m in MODES:
            best[m] = min(best[m], run(m))
    base = best["none"]
    print("graph from before start, µs/kernel (ratio to none):")
    for m in MODES:
        print(f"  {m:12s} {best[m]:.3f} ({best[m] / base:.2f}x)")
    print(f"graph / default: {best['graph'] / best['default']:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(best, f, indent=1)


if __name__ == "__main__":
    main()
