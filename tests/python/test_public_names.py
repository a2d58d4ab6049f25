"""Every public name of the installed triton.profiler exists in proton, or is in NOT_SUPPORTED,
each entry with its reason, and each listed in README.md's "Names not supported" table.

The walk reads Triton's source files (no Triton module is imported): a module's public names
are what it defines at top level (def, class, assignment) and, for a package's __init__, what it
imports from within the package. scripts/test runs this against Triton 3.6 and 3.9.

Triton's main branch cannot be installed, so its names, read by the same rule from its sources,
are kept below (TRITON_MAIN) and checked the same way, and against README's "Triton main" column.
"""

import ast
import importlib
import pathlib
import re

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

# Triton main's public names (module -> names) by the rule of triton_public_names(), read from
# triton-lang/triton's third_party/proton/proton at main commit 9f6f9e0866e7 (2026-08-04), the
# newest main commit whose sources could be read; Triton 3.9 was released after it. Update it
# when a newer main is read.
TRITON_MAIN_COMMIT = "9f6f9e0866e70f3dd8cde1a3365681916d20401a"
TRITON_MAIN = {
    "": ("DEFAULT_PROFILE_NAME activate context cpu_timed_scope data deactivate enter_scope "
         "enter_state exit_scope exit_state finalize metadata_state mode profile scope specs start "
         "state"),
    "context": "depth",
    "data": "advance_phase clear get get_msgpack is_phase_complete",
    "flags": "ProfilerFlags flags",
    "hooks": "HookManager InstrumentationHook LaunchHook",
    "hooks.hook": "Hook HookManager",
    "hooks.instrumentation": "CudaAllocator Instrumentation InstrumentationHook VERSION",
    "hooks.launch": "LaunchHook enabled id in_hook op_name",
    "language": ("Event allocate_event disable_semantic enable_semantic end_event enter_scope "
                 "exit_scope record record_event scope start_event"),
    "metric": ("FLOPS_DTYPES FLOPS_WIDTHS ROOFLINE_DTYPES scalar_metric_kernel set_metric_kernels "
               "tensor_metric_kernel transform_tensor_metrics"),
    "mode": ("BaseMode Default InstrumentationMode MMA Optimize PCSampling buffer_strategies "
             "buffer_types granularities metric_types optimizations sampling_strategies"),
    "profile": "DEFAULT_PROFILE_NAME activate deactivate finalize profile start",
    "proton": "do_setup_and_execute execute_as_main is_pytest main parse_arguments run_profiling",
    "scope": "MetricValueType cpu_timed_scope enter_scope exit_scope scope thread_local_scopes",
    "specs": "amd_bps_by_arch amd_fp8_flops_by_arch flops_by_device max_bps max_flops",
    "state": ("COMPUTE_METADATA_SCOPE_NAME COMPUTE_METADATA_SCOPE_PREFIX enter_state exit_state "
              "get_metadata_state_name metadata_state state"),
    "viewer": ("FactorDict apply_diff_profile avg_cpu_time_factor_dict avg_time_factor_dict "
               "bytes_factor_dict cpu_time_factor_dict default_flop_factor_dict derivable_metrics "
               "derive_metrics emit_warnings filter_frames format_frames get_min_time_bytes "
               "get_min_time_flops get_raw_metrics main match_available_metrics parse print_tree read "
               "remove_frames show_metrics time_factor_dict"),
}

# Modules and names in triton-lang/triton's published history that are neither on main at
# TRITON_MAIN_COMMIT nor in 3.9 (prototype branches, pull requests) -> where they come from.
# README.md names them, so that nobody takes them for names Proton lacks.
OFF_MAIN = {
    "trace_replay": "a 2024 prototype branch of intra-kernel tracing",
    "intra": "a January 2025 prototype branch of intra-kernel profiling",
    "dev.record": "a 2025 prototype branch of the Proton dialect",
    "semantic": "a 2025 prototype branch of the Proton dialect",
    "frequency": "a branch locking GPU clocks through nvidia-smi / rocm-smi",
    "metrics.parser": "a branch with a derived-metric expression language for the viewer",
    "metrics.interpreter": "a branch with a derived-metric expression language for the viewer",
    "data.get_buffered_profiles": "a pull request keeping periodic-flushing phases in memory",
    "data.get_buffered_profile_stats": "the same pull request",
    "data.get_buffered_profile_serialized_up_to_phase": "the same pull request",
    "state.get_state": "a closed pull request on nested launch-metadata states",
    "state.is_state_active": "the same closed pull request",
    "language.mark": "a version newer than 3.9, branch unknown: an in-kernel marker",
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


def missing_from_proton(modules):
    missing = []
    for module, names in modules.items():
        if module in NOT_SUPPORTED:
            continue
        ours = importlib.import_module("proton" + (f".{module}" if module else ""))
        for name in names:
            key = f"{module}.{name}" if module else name
            if not hasattr(ours, name) and key not in NOT_SUPPORTED:
                missing.append(key)
    return missing


def test_every_public_name_of_triton_profiler_exists_or_is_listed():
    version, modules = triton_public_names()
    assert "specs" in modules and "max_flops" in modules["specs"]  # the walk found something
    missing = missing_from_proton(modules)
    assert not missing, f"triton.profiler {version} names missing from proton: {missing}"


def test_every_name_not_supported_is_in_the_readme_with_a_reason():
    text = README.read_text()
    table = text[text.index("### Names not supported"):]
    for key, why in NOT_SUPPORTED.items():
        assert why, key
        assert f"`{key}`" in table, f"{key} is not in README.md's 'Names not supported' table"


def test_every_public_name_of_triton_main_exists_or_is_listed():
    modules = {module: names.split() for module, names in TRITON_MAIN.items()}
    missing = missing_from_proton(modules)
    assert not missing, f"Triton main ({TRITON_MAIN_COMMIT[:12]}) names missing from proton: {missing}"


def main_keys():
    """Triton main's modules and "module.name" keys (a bare name for the package's own)."""
    return {module for module in TRITON_MAIN if module} | {
        f"{module}.{name}" if module else name
        for module, names in TRITON_MAIN.items() for name in names.split()}


def readme_rows():
    """README's "Names not supported" table: each row's cells, keyed by every `name` in its first."""
    text = README.read_text()
    lines = text[text.index("### Names not supported"):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        for name in re.findall(r"`([^`]+)`", cells[0].split(" (")[0]):
            rows[name] = cells
    return rows


def test_readmes_triton_main_column_agrees_with_triton_main():
    rows, on_main = readme_rows(), main_keys()
    wrong = []
    for key in NOT_SUPPORTED:
        _, _, in39, main, _ = rows[key]
        said = in39 if main.startswith("as 3.9") else main
        if said.startswith("—") == (key in on_main):
            wrong.append(f"{key}: README says {main!r}")
    assert not wrong, f"README's Triton main column disagrees with {TRITON_MAIN_COMMIT[:12]}: {wrong}"


def test_names_off_triton_main_are_in_the_readme():
    text = README.read_text()
    section = text[text.index("### Names not supported"):text.index("## Environment variables")]
    assert not set(OFF_MAIN) & main_keys()
    for key, where in OFF_MAIN.items():
        assert where, key
        assert f"`{key}`" in section, f"{key} is not in README.md's 'Names not supported' section"


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
