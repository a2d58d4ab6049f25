"""What triton.profiler and proton write for NaN and infinite metric values, side by side.

    python bench/probes/nonfinite_triton.py [OUT_DIR]

Each profiler runs in its own child process (both use CUPTI): a scope "step" with metrics
loss=nan, up=inf, down=-inf, zero=-0.0 and one kernel launched inside it, a scope "step_vec"
with vec=[1.5, nan, -inf] where lists are accepted, then finalize as hatchet (and
hatchet_msgpack where the profiler has it). Without a GPU it still shows what Triton's own C++
writer (libproton) writes, driven below triton.profiler's Python layer. Prints, per file, the
step node's metrics as written: the JSON text, and for msgpack each value's bytes in hex
(cb 7f f8 .. is a float64 NaN, c0 is nil). Exits 0 without Triton or without a GPU.
"""

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys
import torch
which, base, fmt = sys.argv[1], sys.argv[2], sys.argv[3]
if which == "triton":
    import triton.profiler as prof
else:
    import proton as prof
nan, inf = float("nan"), float("inf")
x = torch.ones(1024, device="cuda")
session = prof.start(base)
with prof.scope("step", {"loss": nan, "up": inf, "down": -inf, "zero": -0.0}):
    x.add_(1)
    torch.cuda.synchronize()
try:  # list metrics: triton.profiler 3.6 refuses them
    with prof.scope("step_vec", {"vec": [1.5, nan, -inf]}):
        pass
except Exception as e:
    print(f"vec refused: {type(e).__name__}: {e}")
prof.finalize(session, output_format=fmt)
"""


def step_metrics_json(path):
    with open(path) as f:
        text = f.read()
    tree = json.loads(text)
    step = next(c for c in tree[0]["children"] if c["frame"]["name"] == "step")
    # The JSON text of the metrics as written (json.loads kept 1e999 as inf, null as None).
    start = text.find('"step"')
    key = text.find('"metrics"', start if start >= 0 else 0)
    end = text.find("}", key)
    return step["metrics"], text[key:end + 1] if key >= 0 else "?"


def msgpack_values(path):
    """Hex bytes of each float-ish value of the step node's metrics in a msgpack file."""
    try:
        import msgpack
    except ImportError:
        return {"msgpack": ("not installed", "")}
    with open(path, "rb") as f:
        data = f.read()
    tree = msgpack.unpackb(data, raw=False, strict_map_key=False)
    metrics = {}
    for c in tree[0]["children"]:
        if c["frame"]["name"] in ("step", "step_vec"):
            metrics.update(c["metrics"])
    out = {}
    for name in ("loss", "up", "down", "zero", "vec"):
        key = msgpack.packb(name)
        # The step node's own value, not a same-named metric of a node written before it.
        at = data.find(key, max(data.find(msgpack.packb("step")), 0))
        out[name] = (repr(metrics.get(name)),
                     data[at + len(key):at + len(key) + 9].hex(" ") if at >= 0 else "?")
    return out


def show(path):
    """Prints the step node's metrics of one written file, as text and as read back."""
    if path.endswith(".hatchet"):
        metrics, text = step_metrics_json(path)
        print(f"  JSON text: {' '.join(text.split())}")
        print(f"  json.loads: {metrics}")
    else:
        for k, v in msgpack_values(path).items():
            print(f"  {k}: python {v[0]}, bytes after the key: {v[1]}")


def run(which, base):
    for fmt in ("hatchet", "hatchet_msgpack"):
        path = f"{base}_{fmt}"
        r = subprocess.run([sys.executable, "-c", CHILD, which, path, fmt], capture_output=True,
                           text=True, timeout=300)
        print(f"== {which} {fmt} (exit {r.returncode})")
        if r.returncode != 0 or not os.path.exists(f"{path}.{fmt}"):
            print("  not written: " + (r.stderr.strip().splitlines() or ["?"])[-1])
            continue
        show(f"{path}.{fmt}")


# Without a GPU: triton.profiler's own C++ (libproton) records scope metrics and writes its
# Hatchet JSON when driven below its Python layer with the instrumentation backend, which needs
# no device at start ("cuda" is its mode string). Shows Triton's writer, not its GPU path.
CPU_CHILD = r"""
import sys
from triton._C.libproton import proton as lp
base = sys.argv[1]
s = lp.start(base, "shadow", "tree", "instrumentation", "cuda")
i = lp.record_scope()
lp.enter_scope(i, "step")
lp.add_metrics(i, {"loss": float("nan"), "up": float("inf"), "down": float("-inf"), "zero": -0.0})
lp.exit_scope(i, "step")
for fmt in ("hatchet_msgpack", "hatchet"):
    try:
        lp.finalize(s, fmt)
        break
    except Exception as e:
        print(f"finalize({fmt!r}): {type(e).__name__}: {e}")
"""


def cpu_only(out):
    base = os.path.join(out, "triton_cpu")
    r = subprocess.run([sys.executable, "-c", CPU_CHILD, base], capture_output=True, text=True,
                       timeout=120)
    print(f"== triton libproton without a GPU (exit {r.returncode})")
    print(r.stdout.strip() or r.stderr.strip()[-500:])
    for ext in ("hatchet_msgpack", "hatchet"):
        if os.path.exists(f"{base}.{ext}"):
            show(f"{base}.{ext}")


def main():
    try:
        import torch
        import triton.profiler  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e}")
        return 0
    if not torch.cuda.is_available():
        print("no GPU: triton's writer only (the side-by-side needs a GPU)")
        cpu_only(tempfile.mkdtemp(prefix="nonfinite_"))
        return 0
    import triton
    print(f"triton {triton.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}")
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="nonfinite_")
    os.makedirs(out, exist_ok=True)
    for which in ("triton", "proton"):
        run(which, os.path.join(out, which))
    return 0


if __name__ == "__main__":
    sys.exit(main())
