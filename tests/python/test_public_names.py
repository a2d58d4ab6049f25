"""Every public name of the installed triton.profiler exists in proton, or is in NOT_SUPPORTED,
each entry with its reason, and each listed in README.md's "Names not supported" table.

The walk reads Triton's source files (no Triton module is imported): a module's public names
are what it defines at top level (def, class, assignment) and, for a package's __init__, what it
imports from within the package. scripts/test runs this against Triton 3.6 and 3.9.
"""

import ast
import importlib
import pathlib

import pytest

pytestmark = pytest.mark.triton

# "module.name" (module relative to triton.profiler, "" for the package) -> why not.
NOT_SUPPORTED = {
    "configure_runtime": "selects a ROCm runtime before Triton's native library loads; Proton is "
                         "NVIDIA-only and has no such library to prepare",
    "proton": "triton.profiler.proton is the command's module; ours is proton.cli (the `proton` "
              "command, `python -m proton`)",
    "scope.thread_local_scopes": "Triton's per-thread scope stack; ours is kept by the engine "
                                 "(proton.context.depth, proton._proton.open_scopes)",
    "hooks.launch.enabled": "Triton's per-launch nesting flag; the C++ launch hook keeps its own",
    "hooks.launch.in_hook": "Triton's per-launch nesting flag; the C++ launch hook keeps its own",
    "hooks.instrumentation.VERSION": "the version of Triton's instrumentation record layout; the "
                                     "engine decodes its own layout",
    "hooks.instrumentation.CudaAllocator": "Triton's torch-allocated profile scratch; ours is a C++ "
                                           "pool (PROTON_INSTR_POOL_MB)",
    "hooks.instrumentation.Instrumentation": "Triton 3.6's pass registry; ours installs Triton's "
                                             "passes itself",
    "metric.FLOPS_DTYPES": "maps metrics to Triton's native type indexes; ours types metrics in C++",
    "metric.ROOFLINE_DTYPES": "maps metrics to Triton's native type indexes; ours types metrics in C++",
    "metric.tensor_metric_kernel": "Triton's kernel summing tensor metrics on the device; ours is "
                                   "the engine's own",
    "metric.scalar_metric_kernel": "Triton's kernel writing scalar metrics for graph launches; ours "
                                   "is the engine's own",
    "metric.set_metric_kernels": "compiles the two kernels above; nothing to compile here",
    "metric.transform_tensor_metrics": "splits a metrics dict for Triton's native binding; the engine "
                                       "takes the dict as it is",
}

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def triton_public_names():
    triton = pytest.importorskip("triton")
    root = pathlib.Path(triton.__file__).parent / "profiler"
    if not root.is_dir():
        pytest.skip(f"Triton {triton.__version__} has no triton.profiler")
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [p for p in path.relative_to(root).with_suffix("").parts if p != "__init__"]
        if any(p.startswith("_") for p in parts):
            continue  # private modules (_rocm)
        found = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.Assign):
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found.add(node.target.id)
            elif path.name == "__init__.py" and isinstance(node, ast.ImportFrom) and node.level:
                found.update(a.asname or a.name for a in node.names)
        names[".".join(parts)] = sorted(n for n in found if not n.startswith("_"))
    return triton.__version__, names


def test_every_public_name_of_triton_profiler_exists_or_is_listed():
    version, modules = triton_public_names()
    assert "specs" in modules and "max_flops" in modules["specs"]  # the walk found something
    missing = []
    for module, names in modules.items():
        if module in NOT_SUPPORTED:
            continue
        ours = importlib.import_module("proton" + (f".{module}" if module else ""))
        for name in names:
            key = f"{module}.{name}" if module else name
            if not hasattr(ours, name) and key not in NOT_SUPPORTED:
                missing.append(key)
    assert not missing, f"triton.profiler {version} names missing from proton: {missing}"


def test_every_name_not_supported_is_in_the_readme_with_a_reason():
    text = README.read_text()
    table = text[text.index("### Names not supported"):]
    for key, why in NOT_SUPPORTED.items():
        assert why, key
        assert f"`{key}`" in table, f"{key} is not in README.md's 'Names not supported' table"


def test_names_added_for_the_drop_in():
    import proton
    from proton import flags, metric, viewer
    scope = importlib.import_module("proton.scope")  # the module (proton.scope is the class)

    assert proton.metadata_state is proton.state.metadata_state
    assert flags.flags.profiling_on is False and flags.flags.command_line is False
    with pytest.raises(AttributeError, match="read-only"):
        flags.flags.profiling_on = True
    assert metric.FLOPS_WIDTHS == (8, 16, 32, 64)
    assert scope.MetricValueType is not None
    assert viewer.derivable_metrics["tflop16/s"] == viewer.FactorDict(
        "flops16", {"flop16/s": 1, "gflop16/s": 1e9, "tflop16/s": 1e12})
    assert viewer.avg_cpu_time_factor_dict.factor["avg_cpu_time/ms"] == 1e-3
    tree = [{"frame": {"name": "ROOT"}, "metrics": {"count": 1}, "children": [
        {"frame": {"name": "__proton_launch_metadata"}, "metrics": {"count": 1}, "children": []},
        {"frame": {"name": "k"}, "metrics": {"count": 1}, "children": []}]}, {}]
    kept = viewer.remove_frames(tree)
    assert [c["frame"]["name"] for c in kept[0]["children"]] == ["k"]


@pytest.mark.parametrize("module", ["viewer"])
def test_tables_equal_tritons(module):
    theirs = pytest.importorskip(f"triton.profiler.{module}")
    ours = importlib.import_module(f"proton.{module}")
    for name in ("time_factor_dict", "avg_time_factor_dict", "cpu_time_factor_dict",
                 "avg_cpu_time_factor_dict", "bytes_factor_dict", "default_flop_factor_dict"):
        if hasattr(theirs, name):
            assert getattr(ours, name) == getattr(theirs, name), name
    if hasattr(theirs, "derivable_metrics"):
        assert {k: tuple(v) for k, v in ours.derivable_metrics.items()} == \
            {k: tuple(v) for k, v in theirs.derivable_metrics.items()}
