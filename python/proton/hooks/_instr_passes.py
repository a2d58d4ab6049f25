"""The compile side of intra-kernel instrumentation: Triton's proton passes with our options,
the llir stage that checks a kernel's regions pair and tells the passes the kernel's warps,
and the kernel's scope names read back from its TTGIR. ``instrumentation.py`` installs them.
"""

import re
import threading
from typing import Any, Dict

from .. import _instr_state
from .. import mode as _mode

PROFILE_BUFFER_ALIGNMENT = 128


def _backend_name(triton) -> str:
    try:
        target = triton.runtime.driver.active.get_current_target()
    except Exception as e:
        raise RuntimeError(f"backend='instrumentation' needs an active Triton driver: {e}") from e
    if target.backend == "cuda":
        return "nvidia"
    if target.backend == "hip":
        return "amd"
    raise RuntimeError(f"backend='instrumentation': unsupported target {target.backend!r}")


class _PassSet:
    """The object Triton 3.6/3.8 call as ``backends[...].compiler.instrumentation``."""

    def __init__(self, passes: Dict[str, Any]):
        self._passes = passes

    def patch(self, ir: str, pm, context):
        self.load_dialects(context)
        if ir in self._passes:
            self._passes[ir](pm)

    def load_dialects(self, ctx):
        from triton._C.libtriton import proton as tp

        tp.load_dialects(ctx)


def _passes(triton, options: _mode.InstrumentationMode, backend: str, max_shared_mem: int):
    from triton._C.libtriton import passes as tpasses
    from triton._C.libtriton import proton as tp

    enums = options.to_triton()
    long_clock = _mode.Optimize.CLOCK32 not in options.optimizations

    def to_llvmir(pm):
        # profile_buffer_size 1 and alignment 128 as triton.profiler: the pass sizes each CTA's
        # slice of the global scratch itself. The buffer size follows the kernel's warps (the
        # llir stage says how many; 4 where no stage hook told).
        buffer_size = options.buffer_bytes(getattr(_compiling, "num_warps", 4))
        tp.add_convert_proton_to_protongpu(pm, enums["metric_type"], enums["sampling_strategy"],
                                           options.sampling_options, enums["granularity"],
                                           enums["buffer_strategy"], enums["buffer_type"],
                                           buffer_size, max_shared_mem, 1,
                                           PROFILE_BUFFER_ALIGNMENT, long_clock)
        tpasses.common.add_cse(pm)
        if _mode.Optimize.SCHED_STORES in options.optimizations:
            tp.add_schedule_buffer_store(pm)
        tp.add_allocate_proton_shared_memory(pm)
        if _mode.Optimize.SCHED_BARRIERS in options.optimizations and backend == "amd":
            tp.add_sched_barriers(pm)

    def to_llvm(pm):
        if hasattr(tp, "add_allocate_proton_global_scratch_buffer"):  # 3.6; 3.9 has none
            tp.add_allocate_proton_global_scratch_buffer(pm)
        if backend == "nvidia":
            tp.add_convert_proton_nvidia_gpu_to_llvm(pm)
        else:
            arch = triton.runtime.driver.active.utils.get_device_properties(
                triton.runtime.driver.active.get_current_device())["arch"].split(":")[0]
            tp.add_convert_proton_amd_gpu_to_llvm(pm, arch)

    return to_llvmir, to_llvm


def _max_shared_mem(triton) -> int:
    driver = triton.runtime.driver.active
    try:
        return int(driver.utils.get_device_properties(driver.get_current_device())["max_shared_mem"])
    except Exception:
        # A test driver without device properties: H100's opt-in maximum.
        return int(getattr(driver, "max_shared_mem", 232448))


def _scope_tree(ttgir_path):
    """Scope ids -> names and parents, read by Triton's own analysis of the kernel's TTGIR."""
    if not ttgir_path:
        return [], []
    from triton._C.libtriton import ir, nvidia
    from triton._C.libtriton import proton as tp

    context = ir.context()
    ir.load_dialects(context)
    nvidia.load_dialects(context)
    tp.load_dialects(context)
    module = ir.parse_mlir_module(ttgir_path, context)
    module.context = context
    names = [(int(i), str(n)) for i, n in tp.get_scope_id_names(module)]
    parents = [(int(i), int(p)) for i, p in tp.get_scope_id_parents(module)]
    return names, parents


# The kernel being lowered on this thread (set by the llir stage around Triton's passes).
_compiling = threading.local()

_RECORD = re.compile(r'proton\.record (start|end) "((?:[^"\\]|\\.)*)"')
_FUNC = re.compile(r"tt\.func (?:public |private )?@([\w$.]+)")


def unbalanced_regions(ttgir: str):
    """Region problems in a kernel's TTGIR text: [(region, reason)], empty when balanced.

    Text order is program order for straight-line code and loop bodies; only what can never
    pair (an end before any start, different start and end counts) is reported."""
    open_count: Dict[str, int] = {}
    problems = []
    for kind, name in _RECORD.findall(ttgir):
        if kind == "start":
            open_count[name] = open_count.get(name, 0) + 1
        elif open_count.get(name, 0) == 0:
            problems.append((name, "exit_scope without a matching enter_scope"))
        else:
            open_count[name] -= 1
    problems += [(n, "enter_scope never closed by exit_scope") for n, c in open_count.items() if c]
    return problems


def _check_regions_stage(previous):
    """knobs.runtime.add_stages_inspection_hook: before lowering to LLVM, fail with the kernel's
    and the region's names instead of Triton's bare 'PassManager::run failed'."""

    def hook(*args):
        if not args:
            # Triton 3.9 asks for a cache key (per launch, so keep it constant): the check
            # does not change the code, so ours adds nothing to the previous hook's.
            return previous() if previous is not None else ("", "")
        backend, stages, options, language, capability = args
        if previous is not None:
            previous(backend, stages, options, language, capability)
        make_llir = stages.get("llir")
        if make_llir is None:
            return

        def llir(src, metadata):
            if _instr_state.on:
                text = str(src)
                problems = unbalanced_regions(text)
                if problems:
                    found = _FUNC.search(text)
                    kernel = metadata.get("name") or (found.group(1) if found else "?")
                    detail = "; ".join(f"region {n!r}: {why}" for n, why in problems)
                    raise ValueError(f"proton.language regions in kernel {kernel!r} do not pair: "
                                     f"{detail}")
            # Our passes run inside make_llir on this thread: they size the buffer by the warps.
            _compiling.num_warps = int(getattr(options, "num_warps", 4) or 4)
            try:
                return make_llir(src, metadata)
            finally:
                _compiling.num_warps = 4

        stages["llir"] = llir

    hook._proton_previous = previous
    return hook


