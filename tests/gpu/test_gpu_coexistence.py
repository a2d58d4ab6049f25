"""Another profiler holding CUPTI: proton says so clearly, and the program goes on."""

import json

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

# Runs in its own process: torch.profiler's CUPTI state outlives its `with` block.
UNDER_TORCH_PROFILER = """
import json, sys, torch, proton
from torch.profiler import ProfilerActivity, profile
x = torch.ones(16, device="cuda")
torch.cuda.synchronize()
outcome = {}
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    x + x
    try:
        proton.start(sys.argv[1])
        outcome["started"] = True
        with proton.scope("under_torch"):
            x + x
        proton.finalize()
    except Exception as e:
        outcome["error"] = f"{type(e).__name__}: {e}"
    y = x + x
torch.cuda.synchronize()
outcome["program_went_on"] = float(y.sum().item()) == 32.0
try:  # informational: whether torch.profiler's own results survived
    outcome["torch_kernels"] = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
except Exception as e:
    outcome["torch_kernels"] = repr(e)
print("OUTCOME " + json.dumps(outcome))
"""


def from_torch(line):
    """Kineto's own log lines (`[W1121 12:00:00 CuptiActivityProfiler.cpp:123] ...`) may say
    CUPTI too; only proton's words count."""
    if line.startswith("proton:"):
        return False  # ours, even when it names Kineto as the likely culprit
    return "kineto" in line.lower() or ".cpp:" in line or line.startswith("STAGE:")


def test_start_under_torch_profiler_names_cupti(out_name, run_script):
    result = run_script(UNDER_TORCH_PROFILER, out_name)
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("OUTCOME ")]
    assert result.returncode == 0 and lines, f"program did not go on:\n{result.stderr[-4000:]}"
    outcome = json.loads(lines[-1][len("OUTCOME "):])
    assert outcome["program_went_on"], outcome

    said = [outcome.get("error", "")] + [ln for ln in result.stderr.splitlines()
                                         if not from_torch(ln)]
    assert any("CUPTI" in ln for ln in said), (
        "proton.start under torch.profiler neither raised nor warned about CUPTI.\n"
        f"outcome={outcome}\nstderr:\n{result.stderr[-4000:]}")
