"""Builds and runs regions_example.cu, then shows its regions on Proton's call tree.

    python examples/cuda_regions/run_example.py [out_dir]

Needs nvcc and a GPU. The kernel's raw profile scratch goes through the same C++ decoder as
Triton kernels' (proton.hooks.instrumentation.add_cuda_regions).
"""

import json
import pathlib
import subprocess
import sys

import proton
from proton.hooks import instrumentation

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def run_step(what: str, command: list, capture: bool = False) -> str:
    """Runs one step; on failure shows the tool's own message and exits with its status."""
    try:
        r = subprocess.run(command, capture_output=capture, text=True)
    except OSError as e:
        sys.exit(f"{what}: cannot run {command[0]}: {e.strerror}")
    if r.returncode != 0:
        if capture:
            sys.stderr.write(r.stderr or r.stdout)
        print(f"{what} failed (exit status {r.returncode})", file=sys.stderr)
        sys.exit(r.returncode if 0 < r.returncode < 256 else 1)
    return r.stdout if capture else ""


def build_and_run(out_dir: pathlib.Path) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / "regions_example"
    run_step("nvcc", ["nvcc", "-O2", "-arch=sm_90", "-I", str(ROOT / "include"),
                      str(HERE / "regions_example.cu"), "-o", str(exe)])
    raw = out_dir / "scratch.bin"
    line = run_step(exe.name, [str(exe), str(raw)], capture=True)
    info = dict(kv.split("=", 1) for kv in line.split())
    return {"raw": raw, "kernel": info["kernel"], "warps": int(info["warps"]),
            "scratch_bytes": int(info["scratch_bytes"])}


def main():
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "cuda_regions_out")
    run = build_and_run(out_dir)
    session = proton.start(str(out_dir / "cuda_regions"), backend="cupti")
    with proton.scope("example"):
        stats = instrumentation.add_cuda_regions(
            run["kernel"], run["raw"].read_bytes(), num_warps=run["warps"],
            scratch_bytes=run["scratch_bytes"], scope_names={0: "loop", 1: "step"},
            scope_parents={1: 0})
    proton.finalize(session)
    tree = json.load(open(out_dir / "cuda_regions.hatchet"))
    print(json.dumps(stats))
    print(json.dumps(tree[0], indent=1)[:2000])


if __name__ == "__main__":
    main()
