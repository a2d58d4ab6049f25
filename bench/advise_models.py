"""The analyzer on real programs: each workload runs under the `proton` command in its own
process, and its profile's findings (docs/advise.md) are collected into one result.

    python3 bench/advise_models.py [--out DIR] [--only NAME,...] [--steps N]

Workloads:
  gpt2_train        a GPT-2 (6 layers, 512 wide, random weights from its config: no download)
                    trained eagerly in bf16 autocast, 20 steps with AdamW; the answers a user
                    gets on a real model.
  gpt2_pcsampling   the same under mode="pcsampling": the stall rule has samples to read.
  gpt2_compiled     the same model under torch.compile: Triton kernels with their compiled
                    facts.
  gemm_bf16         control: 8192x8192 bf16 GEMMs, a well-tuned large kernel.
  graph_step        control: an MLP's forward and backward captured in a CUDA graph and
                    replayed.
The controls must have no `high` finding; the result says whether they had one.

Results: <date>-<gpu>-advise-models.{json,md} in --out (bench/results by default).
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

from lib import machine, proc, results

COMMON = """
import os, time, torch, proton
steps = int(os.environ.get("STEPS", "20"))
torch.manual_seed(0)
"""

GPT2 = COMMON + """
from transformers import GPT2Config, GPT2LMHeadModel
config = GPT2Config(n_layer=6, n_embd=512, n_head=8, n_positions=512, vocab_size=32000)
model = GPT2LMHeadModel(config).cuda()
if os.environ.get("COMPILE") == "1":
    model = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, config.vocab_size, (8, 256), device="cuda")

def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        with proton.scope("forward"):
            loss = model(ids, labels=ids).loss
    with proton.scope("backward"):
        loss.backward()
    with proton.scope("optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)

proton.deactivate()
for _ in range(3):  # warm-up (and compilation) outside the profile
    step()
torch.cuda.synchronize()
proton.activate()
for _ in range(steps):
    with proton.cpu_timed_scope("step"):
        step()
torch.cuda.synchronize()
"""

GEMM = COMMON + """
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
proton.deactivate()
(a @ b).sum().item()
proton.activate()
with proton.cpu_timed_scope("gemm"):
    for _ in range(steps * 2):
        c = a @ b
    torch.cuda.synchronize()
"""

GRAPH_STEP = COMMON + """
model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).cuda()
x = torch.randn(256, 1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        model(x).square().mean().backward()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with proton.scope("capture"), torch.cuda.graph(g):
    model(x).square().mean().backward()
torch.cuda.synchronize()
with proton.cpu_timed_scope("step"):
    for _ in range(steps * 10):
        g.replay()
    torch.cuda.synchronize()
"""

WORKLOADS = {
    # name: (program, proton flags, environment, is a control)
    "gpt2_train": (GPT2, [], {}, False),
    "gpt2_pcsampling": (GPT2, ["-m", "pcsampling"], {}, False),
    "gpt2_compiled": (GPT2, [], {"COMPILE": "1"}, False),
    "gemm_bf16": (GEMM, [], {}, True),
    "graph_step": (GRAPH_STEP, [], {}, True),
}


def run_one(name, workdir, steps, timeout):
    program, flags, env, control = WORKLOADS[name]
    script = workdir / f"{name}.py"
    script.write_text(textwrap.dedent(program))
    env = {**os.environ, **env, "STEPS": str(steps)}
    child = proc.run([sys.executable, "-m", "proton", "-n", name, *flags, script], timeout,
                     cwd=workdir, env=env)
    row = {"workload": name, "control": control, "flags": flags}
    why = child.error()
    if why:
        row["error"] = why
        return row
    profile = workdir / f"{name}.hatchet"
    viewer = [sys.executable, "-m", "proton.viewer"]
    text = subprocess.run([*viewer, "--advise=8", str(profile)], capture_output=True, text=True)
    listed = subprocess.run([*viewer, "--advise", "--format", "json", str(profile)],
                            capture_output=True, text=True)
    try:
        found = json.loads(listed.stdout)
    except json.JSONDecodeError:
        row["error"] = "the viewer's JSON did not parse: " + listed.stderr[-500:]
        return row
    answers = [f for f in found if not f["rule"].startswith("hint.")]
    row["findings"] = answers
    row["hints"] = [f["rule"] for f in found if f["rule"].startswith("hint.")]
    row["high"] = sum(f["severity"] == "high" for f in answers)
    row["text"] = text.stdout
    return row


def markdown(data):
    lines = [f"# The analyzer on real programs ({data['gpu']}, commit {data['commit']})", "",
             "`proton-viewer --advise` on each workload's profile (bench/advise_models.py).", ""]
    rows = []
    for r in data["runs"]:
        if "error" in r:
            rows.append([r["workload"], "error", r["error"].splitlines()[-1][:120], ""])
            continue
        top = "; ".join(f"{f['severity']} {f['rule']} @ {' > '.join(f['frame']) or 'ROOT'}"
                        for f in r["findings"][:3]) or "none"
        verdict = ("control: " + ("no high finding" if r["high"] == 0 else
                                  f"{r['high']} high finding(s)")) if r["control"] else ""
        rows.append([r["workload"], len(r["findings"]), top, verdict])
    lines += results.table(["workload", "findings", "top three", "control"], rows)
    for r in data["runs"]:
        if r.get("text"):
            lines += ["", f"## {r['workload']}", "", "```", r["text"].rstrip(), "```"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(results.DEFAULT_DIR))
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per workload")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; known: {', '.join(WORKLOADS)}")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [run_one(n, pathlib.Path(tmp), args.steps, args.timeout) for n in names]
    data = {**machine.describe(), "gpu": machine.gpu_name() or "no GPU",
            "commit": machine.git_commit(), "runs": runs}
    stem = results.stem(args.out, data["gpu"], "advise-models", data["commit"] or "")
    results.write(stem, data, markdown(data))
    print(markdown(data))
    print(f"written: {stem}.json, {stem}.md")
    failed = [r["workload"] for r in runs if "error" in r or (r["control"] and r["high"])]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
