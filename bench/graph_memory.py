"""Memory and time of long CUDA-graph replay loops under each profiler (needs a GPU).

    python3 bench/graph_memory.py [--replays 100000] [--nodes 100] [--configs a,b] [--json F]

Each configuration runs in a fresh process: capture a graph of `--nodes` small kernels, replay
it 10,000 times to warm up (buffers, caches, trees reach their steady size), then
`--replays` more times, sampling resident memory (RSS) every 10,000 replays after a device
synchronization. The target is flat memory: |RSS after - RSS after warm-up| <= 1 MB
over 100,000 replays, in the default per-node mode and in mode="graph", and for a graph
captured before profiling started (no capture information: fan-out unknown). CUPTI's own
tracing is not flat (docs/cupti.md), so `floor` and `floor_graph` (CUPTI alone, kernel or
graph-level records) are the rows to compare the proton rows with.

Columns: `us/replay` is host wall time per replay over the measured replays (device-bound for
small graphs, so it also shows GPU-side tracing cost); `RSS warm` and `RSS end` in MB;
`growth` their difference; `kernels` what the profile holds (graph launches for mode="graph").
"""

import argparse
import json
import os
import sys
import tempfile
import time

from lib import machine, proc
from lib.rss import rss_mb

CONFIGS = {
    # name: (profiler, start kwargs, graph captured before start)
    "none": (None, {}, False),
    # CUPTI's own tracing with nothing of ours: what the proton rows must be compared with.
    "floor": ("floor", {}, False),
    "floor_graph": ("floor", {"graph_level": True}, False),
    "proton": ("proton", {}, False),
    "proton_before_start": ("proton", {}, True),
    "proton_graph": ("proton", {"mode": "graph"}, False),
    # mode="graph" on a graph from before start: the default mode's path (docs/graphs.md).
    "proton_graph_before_start": ("proton", {"mode": "graph"}, True),
    "triton": ("triton.profiler", {}, False),
}
SAMPLE_EVERY = 10_000


def child(cfg):
    import importlib

    import torch

    profiler, kwargs, before = CONFIGS[cfg["name"]]
    nodes, replays = cfg["nodes"], cfg["replays"]
    from workloads import capture_add_graph

    x = torch.zeros(1024, device="cuda")

    def capture():
        return capture_add_graph(x, nodes)

    floor = profiler == "floor"
    lib = importlib.import_module("proton" if floor else profiler) if profiler else None
    out = os.path.join(cfg["out_dir"], "profile")
    if before:
        g = capture()
    if floor:
        import variants  # bench/variants.py: the floors live in the bench module (bench/native)

        lib = variants.bench_module()
        lib._floor_start(**kwargs)
    elif lib:
        lib.start(out, **kwargs)
    if not before:
        g = capture()
    samples = []
    t0 = None
    for i in range(SAMPLE_EVERY + replays):
        if i == SAMPLE_EVERY:
            torch.cuda.synchronize()
            samples.append(rss_mb())
            t0 = time.perf_counter()
        g.replay()
        if i > SAMPLE_EVERY and (i - SAMPLE_EVERY + 1) % SAMPLE_EVERY == 0:
            torch.cuda.synchronize()
            samples.append(rss_mb())
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    kernels = None
    if floor:
        lib._floor_stop()
    elif lib:
        lib.finalize()
        with open(out + ".hatchet") as f:
            kernels = _kernel_count(json.load(f)[0])
    return {"name": cfg["name"], "rss_mb": samples, "us_per_replay": elapsed / replays * 1e6,
            "kernels": kernels, "device": machine.gpu_name()}


def _kernel_count(node):
    metrics = node.get("metrics", {})
    own = int(metrics.get("count", 0)) if "device_id" in metrics else 0
    return own + sum(_kernel_count(c) for c in node.get("children", []))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replays", type=int, default=100_000)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return 0

    print(f"{'config':<27}{'us/replay':>10}{'RSS warm':>10}{'RSS end':>10}{'growth':>9}"
          f"{'kernels':>12}")
    results = []
    for name in args.configs.split(","):
        with tempfile.TemporaryDirectory(prefix="proton-graph-mem-") as out_dir:
            cfg = {"name": name, "nodes": args.nodes, "replays": args.replays, "out_dir": out_dir}
            r = proc.run([sys.executable, __file__, "--child", json.dumps(cfg)])
        if r.rc != 0:
            why = (r.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{name:<27} failed: {why}")
            results.append({"name": name, "error": r.stderr[-4000:]})
            continue
        res = r.result()
        res["notices"] = [line for line in r.stderr.splitlines() if line.startswith("proton:")]
        results.append(res)
        warm, end = res["rss_mb"][0], res["rss_mb"][-1]
        print(f"{name:<27}{res['us_per_replay']:>10.2f}{warm:>10.1f}{end:>10.1f}"
              f"{end - warm:>+9.2f}{res['kernels'] if res['kernels'] is not None else '':>12}")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"replays": args.replays, "nodes": args.nodes, "results": results}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
