#!/usr/bin/env python3
"""In one call: DDP over NCCL on two GPUs, profiled per rank, compared with no profiler
and with triton.profiler.

    python bench/ddp_two_gpus.py [--out DIR] [--steps 50] [--viewer PATH]
    (scripts/ddp-two-gpus wraps it)

Runs an 8-layer MLP under DistributedDataParallel (NCCL), `--steps` steps, four times with
`python -m torch.distributed.run --standalone --nproc-per-node 2`:
  base     no profiler
  proton   -m proton -n ddp                     (tree: the step-time comparison)
  trace    -m proton -n ddp_trace -d tree,trace  (per-rank traces for the merged Perfetto file)
  triton   -m triton.profiler.proton -n ddp_triton  (skipped when Triton is missing)
  straggle -m proton -n ddp_straggle, rank 1 doing 20 more GEMMs in each forward: the
           analyzer's straggler rule must name rank 1 there, and stay quiet on the `proton` run
Each rank times its own steps (CUDA-synchronized, after 5 warm-up steps) into
steps_<mode>.rank<r>.json. Then: per-rank kernel and NCCL kernel counts and the call paths of
the NCCL kernels, `proton-viewer` on both rank files (merged tree with imbalance, --stragglers),
`proton-viewer --advise` on both runs' rank files (which now also reads each NCCL kernel's
exposed communication, `exposed_comm (ns)`: the comm_exposed rule),
the merged trace with each rank's clock shift, step-time ratios per rank, and file sizes. All of
it lands in --out (summary.json, summary.md, viewer_*.txt and the profiles).

NVLink multicast stays off: NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 are always set.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import textwrap

from lib import machine, proc
from lib import results as result_files

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}

TRAIN = """
import json, os, sys, time
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("DDP_STEPS", "50"))
MODE = os.environ.get("DDP_MODE", "base")
if MODE in ("proton", "trace", "nonvtx", "straggle"):
    import proton
    scope = proton.scope
elif MODE == "floor":  # CUPTI kernel activity and nothing else: what any CUPTI profiler pays
    import contextlib, _proton_bench
    _proton_bench._floor_start()
    scope = lambda name: contextlib.nullcontext()
elif MODE == "triton":
    import triton.profiler as tp
    scope = tp.scope
else:  # base: no profiler imported at all
    import contextlib
    scope = lambda name: contextlib.nullcontext()

dist.init_process_group("nccl")
rank = dist.get_rank()
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
model = DDP(torch.nn.Sequential(*layers).cuda(), device_ids=[local])
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 2048, device="cuda")
y = torch.randn(256, 2048, device="cuda")
# The known straggler: rank 1 does more work in each forward than rank 0.
extra = int(os.environ.get("DDP_STRAGGLE", "0")) if rank == 1 else 0
w = torch.randn(2048, 2048, device="cuda")
times = []
for step in range(STEPS):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with scope("step"):
        with scope("forward"):
            for _ in range(extra):
                x @ w
            loss = torch.nn.functional.mse_loss(model(x), y)
        with scope("backward"):
            loss.backward()          # DDP's bucket hooks issue the NCCL all_reduce here
        with scope("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
with open(f"steps_{os.environ.get('DDP_TAG', MODE)}.rank{rank}.json", "w") as f:
    json.dump({"rank": rank, "device": local, "step_s": times[5:]}, f)
dist.barrier()
dist.destroy_process_group()
"""


def run(cmd, cwd, env, log):
    print("$", " ".join(cmd), flush=True)
    r = proc.run_logged(cmd, os.path.join(cwd, log), 900, cwd=cwd, env=env)
    if r.rc != 0:
        print(r.stderr[-3000:], file=sys.stderr)
    return 124 if r.timed_out else r.rc


def walk(node, path, out):
    metrics = node.get("metrics", {})
    name = node["frame"]["name"]
    if "device_id" in metrics:
        out.append((path + [name], metrics.get("count", 0), metrics.get("time (ns)", 0)))
    for c in node.get("children", []):
        walk(c, path + [name], out)


def rank_summary(path):
    with open(path) as f:
        root = json.load(f)[0]
    kernels = []
    walk(root, [], kernels)
    nccl = [k for k in kernels if "nccl" in k[0][-1].lower()]
    by_kind = {}
    for p, count, _ in nccl:
        kind = next((w for w in ("AllReduce", "Broadcast", "AllGather", "ReduceScatter")
                     if w in p[-1]), p[-1][:40])
        by_kind[kind] = by_kind.get(kind, 0) + count
    paths = {}
    for p, count, _ in nccl:
        key = " > ".join(p[1:-1]) or "(root)"
        paths[key] = paths.get(key, 0) + count
    return {
        "file": os.path.basename(path),
        "bytes": os.path.getsize(path),
        "rank_block": {k: v for k, v in root["frame"].items() if k not in ("name", "type")},
        "kernels": sum(k[1] for k in kernels),
        "nccl_kernels": sum(k[1] for k in nccl),
        "nccl_by_kind": by_kind,
        "nccl_call_paths": paths,
    }


def advise_findings(path):
    """The analyzer's answers (hints left out) from the JSON that `--advise --format json`
    wrote into the log `path` (after its command line); None without one, or {"error": ...}."""
    if not os.path.exists(path):
        return None
    text = open(path).read().split("\n--- stderr ---")[0]
    text = text.split("\n", 1)[-1]  # the command line comes first
    start, end = text.find("["), text.rfind("]")
    try:
        found = json.loads(text[start:end + 1])
    except ValueError:
        return {"error": text[-500:]}
    return [f for f in found if not f["rule"].startswith("hint.")]


def advise_summary(path):
    """The first five answers as (rule, severity, frame, evidence) rows."""
    found = advise_findings(path)
    if not isinstance(found, list):
        return found
    return [{"rule": f["rule"], "severity": f["severity"], "frame": f["frame"],
             "evidence": f.get("evidence")} for f in found[:5]]


def straggler_verdict(path):
    """Every straggler finding as "rank R at a > b (severity)", in the analyzer's order."""
    found = advise_findings(path)
    if not isinstance(found, list):
        return found
    return [f"rank {int(f['evidence']['slowest_rank'])} at {' > '.join(f['frame'])} "
            f"({f['severity']})" if "slowest_rank" in f["evidence"] else
            f"{' > '.join(f['frame'])} ({f['severity']})"
            for f in found if f["rule"] == "straggler"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="ddp-two-gpus-out")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--modes", default="base,proton,trace,nonvtx,floor,triton,straggle",
                    help="which runs, comma-separated (base and proton are always run)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="every mode this many times, in turns: step times vary from one "
                         "torchrun to the next by more than the profilers differ")
    ap.add_argument("--viewer", default=os.environ.get("PROTON_VIEWER") or
                    shutil.which("proton-viewer"))
    args = ap.parse_args()
    import torch

    gpus = torch.cuda.device_count()
    if gpus < 2:
        sys.exit(f"needs 2 GPUs, found {gpus}")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "train.py"), "w") as f:
        f.write(textwrap.dedent(TRAIN))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update(NO_MULTICAST)
    env["DDP_STEPS"] = str(args.steps)
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", "2"]
    modes = {
        "base": launcher + ["train.py"],
        "proton": launcher + ["-m", "proton", "-n", "ddp", "train.py"],
        "trace": launcher + ["-m", "proton", "-n", "ddp_trace", "-d", "tree,trace", "train.py"],
        "nonvtx": launcher + ["-m", "proton", "-n", "ddp_nonvtx", "--no-nvtx", "train.py"],
        "floor": launcher + ["train.py"],
        "triton": launcher + ["-m", "triton.profiler.proton", "-n", "ddp_triton", "train.py"],
        "straggle": launcher + ["-m", "proton", "-n", "ddp_straggle", "train.py"],
    }
    chosen = set(args.modes.split(",")) | {"base", "proton"}
    modes = {m: c for m, c in modes.items() if m in chosen}
    status = {}
    for rnd, (mode, cmd) in ((r, mc) for r in range(args.rounds) for mc in modes.items()):
        if status.get(mode, 0) != 0:
            continue
        if mode == "triton":
            try:
                import triton.profiler  # noqa: F401
            except ImportError:
                status[mode] = "skipped: no triton"
                continue
        if mode == "floor":
            try:
                import _proton_bench  # noqa: F401
            except ImportError:
                status[mode] = "skipped: the bench module (_proton_bench) is not built"
                continue
        if mode == "straggle" and rnd > 0:
            continue  # a known answer, not a timing: one run is enough
        status[mode] = run(cmd, out, dict(env, DDP_MODE=mode, DDP_TAG=f"{mode}_r{rnd}",
                                          DDP_STRAGGLE="20" if mode == "straggle" else "0"),
                           f"run_{mode}.log")

    summary = {"gpu": machine.gpu_name(), "gpus": gpus, "steps": args.steps,
               "rounds": args.rounds,
               "env": NO_MULTICAST, "commands": {m: " ".join(c) for m, c in modes.items()},
               "status": status, "ranks": {}, "step_ms": {}, "ratios": {}, "files": {}}
    for r in (0, 1):
        p = os.path.join(out, f"ddp.rank{r}.hatchet")
        if os.path.exists(p):
            summary["ranks"][r] = rank_summary(p)
    summary["ddp_hatchet_exists"] = os.path.exists(os.path.join(out, "ddp.hatchet"))
    for mode in modes:
        for r in (0, 1):
            steps, per_round = [], []
            for rnd in range(args.rounds):
                p = os.path.join(out, f"steps_{mode}_r{rnd}.rank{r}.json")
                if os.path.exists(p):
                    with open(p) as f:
                        s = json.load(f)["step_s"]
                    steps += s
                    per_round.append(round(statistics.median(s) * 1e3, 3))
            if steps:
                summary["step_ms"].setdefault(mode, {})[r] = round(statistics.median(steps) * 1e3, 3)
                summary.setdefault("step_ms_per_round", {}).setdefault(mode, {})[r] = per_round
    base = summary["step_ms"].get("base", {})
    for mode in ("proton", "trace", "nonvtx", "floor", "triton"):
        for r, ms in summary["step_ms"].get(mode, {}).items():
            if r in base:
                summary["ratios"].setdefault(mode, {})[r] = round(ms / base[r], 3)

    if args.viewer:
        files = [os.path.join(out, f"ddp.rank{r}.hatchet") for r in (0, 1)]
        views = {
            "viewer_tree.txt": [args.viewer, "--no-color", "-m", "time/ms", *files],
            "viewer_stragglers.txt": [args.viewer, "--stragglers", "-m", "time", *files],
            "viewer_merge.txt": [args.viewer, "merge", "-o", os.path.join(out, "ddp.merged.hatchet"),
                                 *files],
            "viewer_trace_merge.txt": [args.viewer, "merge", "--output-format", "trace", "-o",
                                       os.path.join(out, "ddp.merged_trace.json"),
                                       *[os.path.join(out, f"ddp_trace.rank{r}.chrome_trace")
                                         for r in (0, 1)]],
        }
        for tag, name in (("", "ddp"), ("_straggle", "ddp_straggle")):
            rank_files = [os.path.join(out, f"{name}.rank{r}.hatchet") for r in (0, 1)]
            if all(os.path.exists(f) for f in rank_files):
                views[f"viewer_advise{tag}.txt"] = [args.viewer, "--advise", *rank_files]
                views[f"viewer_advise{tag}_json.txt"] = [args.viewer, "--advise", "--format",
                                                     "json", *rank_files]
        if "trace" not in modes:
            del views["viewer_trace_merge.txt"]
        for name, cmd in views.items():
            r = proc.run_logged(cmd, os.path.join(out, name), 300, cwd=out)
            summary.setdefault("viewer_status", {})[name] = r.rc
        for tag in ("", "_straggle"):
            path = os.path.join(out, f"viewer_advise{tag}_json.txt")
            summary[f"advise{tag}"] = advise_summary(path)
            summary[f"stragglers{tag}"] = straggler_verdict(path)
        trace = os.path.join(out, "ddp.merged_trace.json")
        if os.path.exists(trace):
            with open(trace) as f:
                t = json.load(f)
            summary["merged_trace"] = {
                "processes": sorted({e["args"]["name"] for e in t["traceEvents"]
                                     if e.get("ph") == "M" and e["name"] == "process_name"}),
                "shift_ns": t["otherData"].get("proton_rank_shift_ns"),
                "gpu_offset_ns": t["otherData"].get("proton_gpu_offset_ns"),
            }
    for name in sorted(os.listdir(out)):
        if name.endswith((".hatchet", ".chrome_trace", ".json")) and not name.startswith("steps_"):
            summary["files"][name] = os.path.getsize(os.path.join(out, name))

    result_files.write_json(os.path.join(out, "summary.json"), summary, indent=2)
    lines = [f"# DDP on two GPUs ({summary['gpu']}), {args.steps} steps", ""]
    for r, s in summary["ranks"].items():
        lines.append(f"- rank {r}: {s['kernels']} kernels, {s['nccl_kernels']} NCCL "
                     f"{s['nccl_by_kind']}; NCCL under {s['nccl_call_paths']}; "
                     f"block {s['rank_block']}")
    lines.append(f"- step ms per rank (median of {args.rounds} rounds' steps): {summary['step_ms']}")
    lines.append(f"- per round: {summary.get('step_ms_per_round')}")
    lines.append(f"- ratio to base per rank: {summary['ratios']}")
    lines.append(f"- merged trace: {summary.get('merged_trace')}")
    lines.append(f"- advise, balanced ranks (the `proton` run): {summary.get('advise')}")
    lines.append(f"- advise, rank 1 straggling (the `straggle` run): {summary.get('advise_straggle')}")
    lines.append(f"- straggler findings, balanced ranks (expected none): {summary.get('stragglers')}")
    lines.append("- straggler findings, rank 1 straggling (expected rank 1 first): "
                 f"{summary.get('stragglers_straggle')}")
    lines.append(f"- files: {summary['files']}")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    for name in ("viewer_tree.txt", "viewer_stragglers.txt", "viewer_trace_merge.txt",
                 "viewer_advise.txt", "viewer_advise_straggle.txt"):
        p = os.path.join(out, name)
        if os.path.exists(p):
            print(f"\n==== {name} ====")
            print(open(p).read()[:6000])
    ok = status.get("base") == 0 and status.get("proton") == 0 and len(summary["ranks"]) == 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
