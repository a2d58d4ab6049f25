"""Cost of `with proton.scope("x"): pass` in nanoseconds, with and without a session.

    python3 bench/scope_overhead.py [--module proton|triton.profiler] [--iters N]

Needs no GPU: with none, a session still keeps its CPU-side scopes. Prints one JSON object:
for each case the best and median ns per iteration over repeats, net of an empty loop.
"""

import argparse
import contextlib
import importlib
import json
import os
import statistics
import sys
import tempfile
import time


def per_iter_ns(body, iters, repeats):
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        body(iters)
        samples.append((time.perf_counter_ns() - t0) / iters)
    return min(samples), statistics.median(samples)


def empty_loop(n):
    for _ in range(n):
        pass


def null_scope(n):
    null = contextlib.nullcontext()
    for _ in range(n):
        with null:
            pass


def make_cases(lib):
    scope, enter, exit_ = lib.scope, lib.enter_scope, lib.exit_scope

    def with_scope(n):
        for _ in range(n):
            with scope("x"):
                pass

    def enter_exit(n):
        for _ in range(n):
            enter("x")
            exit_()

    return {"with_scope": with_scope, "enter_exit_scope": enter_exit}


def measure(lib, iters, repeats):
    base_best, _ = per_iter_ns(empty_loop, iters, repeats)
    out = {"empty_loop_ns": round(base_best, 1)}

    def record(label, body):
        best, median = per_iter_ns(body, iters, repeats)
        out[label] = {"best_ns": round(best - base_best, 1), "median_ns": round(median - base_best, 1)}

    record("nullcontext", null_scope)
    for name, body in make_cases(lib).items():
        record(f"{name}/no_session", body)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            lib.start(os.path.join(tmp, "scope_overhead"))
        except Exception as e:  # e.g. no backend here: report it, keep the inactive numbers
            out["session_error"] = f"{type(e).__name__}: {e}"
            return out
        try:
            for name, body in make_cases(lib).items():
                record(f"{name}/active_session", body)
        finally:
            lib.finalize()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--module", default="proton", help="proton or triton.profiler")
    p.add_argument("--iters", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    lib = importlib.import_module(args.module)
    result = {"module": args.module, "python": sys.version.split()[0], "iters": args.iters,
              **measure(lib, args.iters, args.repeats)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
