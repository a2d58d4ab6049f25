"""Each compiled Triton kernel's facts reach the engine once, when Triton loads it.

No GPU here: kernels compile for GPUTarget("cuda", 90, 32) and Triton's load step
(CompiledKernel._init_handles, which needs a driver) is played by a function that sets what the
driver would (function handle, n_regs, n_spills) and calls ``kernel_load_end_hook`` as Triton
does. Runs against whichever Triton is importable (3.6 installed, 3.9 with
PYTHONPATH=build/triton39).
"""

import os

import pytest

triton = pytest.importorskip("triton")

import proton  # noqa: E402
from proton import _proton  # noqa: E402
from proton.hooks import compiled  # noqa: E402

from instr_stub_driver import stub_driver  # noqa: E402

pytestmark = pytest.mark.triton


def _kernel():
    import triton.language as tl

    @triton.jit
    def scale_rows(x, N: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x + offs, tl.load(x + offs) * N)

    return scale_rows


def _compile(tmp_path, num_warps=4, num_stages=2, block=64):
    from triton import knobs
    from triton.backends.compiler import GPUTarget

    os.environ["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    knobs.cache.dir = str(tmp_path / "cache")
    src = triton.compiler.ASTSource(fn=_kernel(), signature={"x": "*fp32"},
                                    constexprs={"N": 3, "BLOCK": block})
    with stub_driver():
        return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": num_warps, "num_stages": num_stages})


def _load(kernel, function, n_regs, n_spills):
    """What CompiledKernel._init_handles does around the hook (``self`` is the kernel)."""
    from triton import knobs

    self = kernel
    self.function, self.n_regs, self.n_spills = function, n_regs, n_spills
    knobs.runtime.kernel_load_end_hook(None, self.function, self.name, self.metadata_group,
                                       self.hash)


@pytest.fixture
def facts(out):
    _proton._clear_compiled_kernels()
    proton.start(out.name)  # no hook="triton": the load hook is installed all the same
    yield lambda: _proton._compiled_kernels()
    proton.finalize()
    _proton._clear_compiled_kernels()


def test_start_installs_the_load_hook_once(facts):
    from triton import knobs

    calls = knobs.runtime.kernel_load_end_hook.calls
    assert calls.count(compiled._loaded) == 1
    compiled.install()
    assert calls.count(compiled._loaded) == 1
    # Nothing on the launch path: the launch chains are untouched by it.
    assert compiled._loaded not in knobs.runtime.launch_enter_hook.calls


def test_a_loaded_kernel_hands_over_its_compiled_facts(facts, tmp_path):
    k = _compile(tmp_path)
    _load(k, 0xF00, n_regs=40, n_spills=3)
    (name, warps, stages, ctas, shared, regs, spills, config, source), = facts()
    assert name == "scale_rows"
    assert (warps, stages, ctas, regs, spills) == (4, 2, 1, 40, 3)
    assert shared == k.metadata.shared
    assert config == "N=3, BLOCK=64, num_warps=4, num_stages=2"
    path, line = source.rsplit(":", 1)
    assert path == __file__ and int(line) > 0
    # The same kernel loaded again (a second device): kept once.
    _load(k, 0xF00, n_regs=40, n_spills=3)
    assert len(facts()) == 1


def test_an_autotuner_config_names_the_kernel_it_loads(facts, tmp_path):
    k = _compile(tmp_path, num_warps=8, num_stages=3, block=128)

    def bench(config):  # Autotuner._bench's local: the config being tried
        _load(k, 0xF01, n_regs=64, n_spills=0)

    bench(triton.Config({"BLOCK": 128}, num_warps=8, num_stages=3))
    (entry,) = facts()
    assert entry[1:3] == (8, 3)
    assert entry[7] == "BLOCK=128, num_warps=8, num_stages=3"


def test_a_load_the_hook_cannot_read_still_names_the_kernel(facts):
    from triton import knobs

    knobs.runtime.kernel_load_end_hook(None, 0xBAD, "opaque_kernel", {}, "hash")
    assert facts() == [("opaque_kernel", -1, -1, -1, -1, -1, -1, "", "")]
