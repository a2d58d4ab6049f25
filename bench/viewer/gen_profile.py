#!/usr/bin/env python3
"""Writes a synthetic Hatchet profile of N nodes (default 100,000) in triton.profiler's style.

Shape: Python frames nested a few levels deep, scopes, and kernel leaves carrying time, count,
flops16 and bytes on one H100, so every derived metric the viewer offers has work to do.
Deterministic for a given --seed.
"""
import argparse
import json
import random


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--fanout", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    made = 1
    root = {"frame": {"name": "ROOT", "type": "function"}, "metrics": {"count": 0, "time (ns)": 0},
            "children": []}
    frontier = [(root, 0)]
    while made < args.nodes and frontier:
        node, depth = frontier.pop(0)
        for i in range(rng.randint(1, args.fanout)):
            if made >= args.nodes:
                break
            made += 1
            leaf = depth >= 3 and rng.random() < 0.5
            if leaf:
                name = f"kernel_{rng.randrange(5000)}_{i}_BLOCK_M_{rng.choice([64, 128])}"
                metrics = {"count": rng.randint(1, 100), "device_id": "0", "device_type": "CUDA",
                           "time (ns)": rng.randint(1_000, 5_000_000),
                           "flops16": float(rng.randint(1, 10**6) * 10**6),
                           "bytes": rng.randint(1, 10**9)}
                child = {"frame": {"name": name, "type": "function"}, "metrics": metrics,
                         "children": []}
            else:
                name = f"/src/model/layer_{depth}.py:{rng.randint(1, 900)}@fn_{i}_{made}"
                child = {"frame": {"name": name, "type": "function"}, "metrics": {}, "children": []}
                frontier.append((child, depth + 1))
            node["children"].append(child)
    devices = {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1980000,
                              "memory_clock_rate": 2619000, "num_sms": 132}}}
    with open(args.output, "w") as f:
        json.dump([root, devices], f, sort_keys=True)
    print(f"wrote {made} nodes to {args.output}")


if __name__ == "__main__":
    main()
