"""Profiler overhead benchmark: every workload under every profiler, one process per run.

    python3 bench/run.py [--quick | --preset steady] [--out DIR] [--variants a,b]
                         [--workloads a,b] [--cpus auto|none|2-5]

Rounds are interleaved (for each round, for each workload, every variant in a rotated order),
so slow drifts of clocks or temperature hit all variants alike. Each (round, workload,
variant) runs in a fresh process: by default a fork of this one, which has imported torch and
triton but never touched CUDA (so a child pays for CUDA initialization, not for 5 s of
imports); `--isolation spawn` starts `python3 bench/child.py` instead. Every child is pinned
to the same few CPUs (`--cpus`), so no run pays for migrations the others did not.

Writes DIR/<date>-<gpu>[-<preset>].json (every measurement) and .md (the table and the
targets, also printed); the default preset's files carry no suffix.
"""

import argparse
import json
import os
import pathlib
import select
import signal
import sys
import time

import report
import variants
import workloads
from lib import machine, proc
from lib import results as result_files

HERE = pathlib.Path(__file__).resolve().parent

# rounds: processes per (workload, variant); loops: timed regions per process, after `warmup`
# untimed ones; budget_s: no round starts that would end past it. A preset may also name its
# variants and workloads (the command line's --variants/--workloads still win).
PRESETS = {
    "default": {"rounds": 5, "loops": 7, "warmup": 2, "budget_s": 330},
    "quick": {"rounds": 2, "loops": 3, "warmup": 1, "budget_s": 110},
    # The launch-bound targets, judged on enough samples to trust: 9 rounds x 30 regions of
    # 5,000 launches. 4 warm-up regions (20,000 launches) cycle CUPTI's 1 MiB buffers several
    # times, so the buffer pool has stopped growing before timing starts. A job is ~0.8 s of
    # fork, CUDA init and start/stop plus 34 regions of 35-65 ms; 90 jobs: ~4 min on an H200.
    "steady": {"rounds": 9, "loops": 30, "warmup": 4, "budget_s": 300,
               "workloads": ["tiny_torch", "tiny_triton"],
               "variants": ["none", "floor", "floor_cb", "proton", "triton"]},
    # The other targets (MLP step vs triton.profiler, median of 5; GEMM;
    # graph replays in both modes): 5 rounds of 5 variants on 3 workloads, ~2-3 min.
    "targets": {"rounds": 5, "loops": 9, "warmup": 2, "budget_s": 240,
                "workloads": ["mlp_train", "gemm_bf16", "cuda_graph"],
                "variants": ["none", "floor", "proton", "triton", "proton_graph"]},
    # Replays of a graph instantiated before start; mode="graph" must cost
    # no more than the default mode (docs/graphs.md). 4 rounds of 6 variants, ~40 s.
    "graph_pre": {"rounds": 4, "loops": 9, "warmup": 2, "budget_s": 60,
                  "workloads": ["cuda_graph_pre"],
                  "variants": ["none", "floor", "floor_graph_off", "proton", "proton_graph",
                               "proton_graph_eager"]},
}
JOB_TIMEOUT_S = 180
PIN_CPUS = 4  # enough for the launching thread, CUPTI's buffer thread and the profiler's


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), default="default",
                   help="default: every workload and variant (~5-6 min); quick: ~2 min; "
                   "steady: the launch-bound targets, 9 rounds (~5 min); "
                   "targets: MLP, GEMM and graph replays, 5 rounds (~3 min); "
                   "graph_pre: a graph from before start, mode='graph' vs default (~40 s)")
    p.add_argument("--quick", action="store_true", help="same as --preset quick")
    p.add_argument("--out", default=str(HERE / "results"), help="folder for the .json and .md")
    p.add_argument("--variants", help="comma-separated (default: the preset's, else all)")
    p.add_argument("--workloads", help="comma-separated (default: the preset's, else all)")
    p.add_argument("--rounds", type=int, help="override the preset's rounds")
    p.add_argument("--loops", type=int, help="override the preset's timed regions per process")
    p.add_argument("--budget-s", type=float, help="start no round that would end past this")
    p.add_argument("--isolation", choices=("fork", "spawn"), default="fork")
    p.add_argument("--cpus", default="auto",
                   help="CPUs every child is pinned to: auto (4 cores, not the first), none "
                   "(no pinning), or a list such as 2-5 or 2,4,6,8")
    args = p.parse_args(argv)
    if args.quick:
        args.preset = "quick"
    preset = PRESETS[args.preset]
    args.variants = _names(args.variants, preset.get("variants"), variants.ALL)
    args.workloads = _names(args.workloads, preset.get("workloads"), workloads.ALL)
    if "none" not in args.variants:
        args.variants.insert(0, "none")  # every ratio is against it
    args.cpus = pick_cpus(args.cpus)
    return args


def config_for(args):
    """The preset's numbers with the command line's overrides."""
    config = {k: v for k, v in PRESETS[args.preset].items() if k not in ("variants", "workloads")}
    for key in ("rounds", "loops", "budget_s"):
        if getattr(args, key):
            config[key] = getattr(args, key)
    return config


def _names(text, preset, known):
    names = [n for n in text.split(",") if n] if text else list(preset or known)
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"unknown {unknown}; choose from {sorted(known)}")
    return names


def pick_cpus(spec):
    """The sorted CPU list every child is pinned to, or None for no pinning.

    auto: of the CPUs this process may use, skip the first one's physical core (CPU 0 where
    allowed, which takes interrupts and housekeeping first) and take PIN_CPUS others, one per
    physical core where there are enough, so a run's threads do not share a core's execution
    units. With fewer than PIN_CPUS CPUs to spare, nothing is pinned.
    """
    allowed = sorted(os.sched_getaffinity(0))
    if spec == "none":
        return None
    if spec != "auto":
        cpus = sorted(_cpu_list(spec))
        if not cpus or not set(cpus) <= set(allowed):
            sys.exit(f"--cpus {spec}: not a subset of the CPUs allowed here ({_ranges(allowed)})")
        return cpus
    first_core = _siblings(allowed[0])
    spare = [cpu for cpu in allowed if cpu not in first_core]
    cpus, taken = [], set()
    for cpu in spare:
        if cpu not in taken and len(cpus) < PIN_CPUS:
            cpus.append(cpu)
            taken.update(_siblings(cpu))
    # Not enough physical cores: hyperthread siblings are still better than migrating.
    cpus += [cpu for cpu in spare if cpu not in cpus][:PIN_CPUS - len(cpus)]
    return sorted(cpus) if len(cpus) == PIN_CPUS else None


def _siblings(cpu):
    """The CPUs sharing `cpu`'s physical core (itself included), from sysfs."""
    path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    try:
        with open(path) as f:
            return _cpu_list(f.read().strip()) | {cpu}
    except (OSError, ValueError):
        return {cpu}


def _cpu_list(text):
    """'1-3,8' -> {1, 2, 3, 8} (the kernel's list format)."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def _ranges(cpus):
    """[1, 2, 3, 8] -> '1-3,8'."""
    out, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            out.append(f"{start}-{cpu}" if cpu != start else f"{cpu}")
            start = None
    return ",".join(out)


def round_jobs(round_index, args, config, skip):
    """One round: each workload under each variant, the variant order rotated per round."""
    shift = round_index % len(args.variants)
    order = args.variants[shift:] + args.variants[:shift]
    for workload in args.workloads:
        for variant in order:
            if variant not in skip:
                yield {"variant": variant, "workload": workload, "round": round_index,
                       "loops": config["loops"], "warmup": config["warmup"], "cpus": args.cpus}


def run_forked(job):
    """run_job in a forked child; the result comes back through a pipe."""
    import child

    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: measure, report, and leave without running the parent's exit hooks
        os.close(read_fd)
        code = 0
        try:
            with os.fdopen(write_fd, "w") as pipe:
                pipe.write(json.dumps(child.run_job(job)))
        except BaseException:
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_fd)
    text = _read_until(read_fd, pid, JOB_TIMEOUT_S)
    _, status = os.waitpid(pid, 0)
    why = f"killed after {JOB_TIMEOUT_S} s" if text is None else f"wait status {status}"
    return _parse(job, text or "", why)


def _read_until(fd, pid, timeout_s):
    """Everything the child writes before it closes the pipe; None (child killed) past the
    timeout."""
    chunks, deadline = [], time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks).decode()
            chunks.append(chunk)
    finally:
        os.close(fd)


def run_spawned(job):
    """run_job in a fresh interpreter: `python3 bench/child.py JOB`."""
    cmd = [sys.executable, str(HERE / "child.py"), json.dumps(job)]
    # Pinned from exec on, so that threads started by imports are pinned too.
    pin = (lambda: os.sched_setaffinity(0, job["cpus"])) if job.get("cpus") else None
    child = proc.run(cmd, JOB_TIMEOUT_S, preexec_fn=pin)
    if child.timed_out:
        return _parse(job, "", "timed out")
    last = [ln for ln in child.stdout.splitlines() if ln.startswith("{")]
    return _parse(job, last[-1] if last else "", f"exit code {child.rc}")


def _parse(job, text, why):
    try:
        return json.loads(text)
    except ValueError:
        base = {k: job[k] for k in ("variant", "workload", "round")}
        return {**base, "error": f"no result from the child ({why})"}


def preload_for_fork():
    """Imports the heavy modules once, in the parent, without initializing CUDA."""
    import torch

    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    if torch.cuda.is_initialized():
        print("CUDA got initialized in the parent; falling back to spawn", file=sys.stderr)
        return run_spawned
    return run_forked


def run_rounds(args, config, runner):
    results, skip, round_s = [], set(), 0.0
    began = time.monotonic()
    for r in range(config["rounds"]):
        elapsed = time.monotonic() - began
        if r and elapsed + round_s > config["budget_s"]:
            print(f"stopping after {r} rounds: the next would pass the {config['budget_s']:.0f} s "
                  "budget", file=sys.stderr)
            break
        t0 = time.monotonic()
        for job in round_jobs(r, args, config, skip):
            result = runner(job)
            results.append(result)
            _progress(result, time.monotonic() - began)
            if "skipped" in result:
                skip.add(job["variant"])  # the same in every round: don't pay for it again
        round_s = time.monotonic() - t0
    return results


def _progress(result, elapsed):
    what = (result.get("error") or (f"skipped: {result['skipped']}" if "skipped" in result
            else f"{report.run_ms(result):.2f} ms ({result.get('stat', 'median')})"))
    print(f"[{elapsed:6.1f}s] r{result['round']} {result['workload']:<12} "
          f"{result['variant']:<8} {what}", file=sys.stderr, flush=True)
    if "traceback" in result:
        print(result["traceback"], file=sys.stderr, flush=True)


def write_outputs(out_dir, meta, runs, table):
    preset = meta["config"].get("preset", "default")
    stem = result_files.stem(out_dir, meta.get("device"), "" if preset == "default" else preset,
                             date=meta["date"])
    data = {"meta": meta, "summary": report.summarize(runs),
            "targets": report.targets(runs)[0], "results": runs}
    return result_files.write(stem, data, table)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    config = config_for(args)
    if args.cpus:
        print(f"children pinned to CPUs {_ranges(args.cpus)}", file=sys.stderr)
    runner = run_spawned if args.isolation == "spawn" else preload_for_fork()

    began = time.monotonic()
    results = run_rounds(args, config, runner)
    ok = [r for r in results if "median_ms" in r]
    meta = {
        "date": machine.today(),
        "device": ok[0]["device"] if ok else None,
        "versions": ok[0]["versions"] if ok else {},
        "commit": machine.git_commit(),
        "config": {**config, "preset": args.preset, "isolation": args.isolation,
                   "cpus": args.cpus, "variants": args.variants, "workloads": args.workloads},
        "wall_s": round(time.monotonic() - began, 1),
    }
    table = report.markdown(meta, results)
    print(table)
    stem = write_outputs(args.out, meta, results, table)
    print(f"wrote {stem}.json and {stem}.md", file=sys.stderr)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
