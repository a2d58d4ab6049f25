"""Compiled-kernel facts: what Triton's compiler decided for each kernel a session may launch.

Installed into ``triton.knobs.runtime.kernel_load_end_hook`` by the first ``proton.start`` (with
or without ``hook="triton"``) and left there: Triton calls it once per compiled kernel and
device, when it loads the binary, never per launch. It hands the engine the kernel's name,
``num_warps``, ``num_stages``, ``num_ctas``, shared memory, ``n_regs``, ``n_spills``, its config
(the Autotuner's ``Config`` when one launched it, else the kernel's constexpr arguments) and the
file and line of its ``@jit`` function; the profile writer joins them to the kernel nodes.
Kernels loaded before the first ``start`` are not seen.
"""

import sys

from .. import _proton

_installed = False
# How far up the stack the CompiledKernel (Triton's _init_handles) and an Autotuner's config
# are looked for: the hook chain, _init_handles, launch, JITFunction.run, Autotuner._bench, ...
_MAX_FRAMES = 24


def _config_text(config, kernel):
    """``BLOCK_M=64, BLOCK_N=128, num_warps=4, num_stages=3``."""
    parts = []
    if config is not None:
        parts += [f"{k}={v}" for k, v in config.kwargs.items()]
    else:
        src = getattr(kernel, "src", None)
        fn = getattr(src, "fn", None)
        params = getattr(fn, "params", None)
        for key, value in sorted(getattr(src, "constants", {}).items()):
            index = key[0] if isinstance(key, tuple) and len(key) == 1 else None
            if params is None or index is None or index >= len(params):
                continue
            if getattr(params[index], "is_constexpr", False):
                parts.append(f"{params[index].name}={value}")
    meta = kernel.metadata
    parts.append(f"num_warps={getattr(meta, 'num_warps', '?')}")
    parts.append(f"num_stages={getattr(meta, 'num_stages', '?')}")
    if getattr(meta, "num_ctas", 1) not in (1, None):
        parts.append(f"num_ctas={meta.num_ctas}")
    if config is not None and getattr(config, "maxnreg", None):
        parts.append(f"maxnreg={config.maxnreg}")
    return ", ".join(parts)


def _source(kernel):
    fn = getattr(getattr(kernel, "src", None), "fn", None)
    code = getattr(getattr(fn, "fn", None), "__code__", None)
    if code is None:
        return ""
    return f"{code.co_filename}:{code.co_firstlineno}"


def _find(function):
    """The CompiledKernel that loaded ``function`` and the Autotuner config it runs under."""
    kernel = config = None
    frame = sys._getframe(2)
    for _ in range(_MAX_FRAMES):
        if frame is None:
            break
        local = frame.f_locals
        owner = local.get("self")
        if kernel is None:
            if owner is not None and hasattr(owner, "metadata") and \
                    getattr(owner, "function", None) == function:
                kernel = owner
        elif hasattr(local.get("config"), "all_kwargs") and hasattr(local["config"], "kwargs"):
            config = local["config"]
            break
        frame = frame.f_back
    return kernel, config


def _loaded(module, function, name, metadata_group, hash=None, *args):
    """``knobs.runtime.kernel_load_end_hook``: once per loaded kernel."""
    try:
        kernel, config = _find(function)
        if kernel is None:
            _proton._note_compiled_kernel(str(name))
            return
        meta = kernel.metadata

        def num(value):
            return int(value) if isinstance(value, int) else -1

        _proton._note_compiled_kernel(
            str(name), num(getattr(meta, "num_warps", None)), num(getattr(meta, "num_stages", None)),
            num(getattr(meta, "num_ctas", None)), num(getattr(meta, "shared", None)),
            num(getattr(kernel, "n_regs", None)), num(getattr(kernel, "n_spills", None)),
            _config_text(config, kernel), _source(kernel))
    except Exception:  # a fact we cannot read must never fail Triton's kernel load
        pass


def install() -> None:
    """Adds the load hook to Triton's chain (once per process; Triton 3.4+, else nothing)."""
    global _installed
    if _installed:
        return
    try:
        from triton import knobs
    except ImportError:
        return
    chain = getattr(knobs.runtime, "kernel_load_end_hook", None)
    if not hasattr(chain, "add"):
        return
    chain.add(_loaded)
    _installed = True
