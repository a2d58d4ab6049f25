"""proton.specs: triton.profiler.specs' names, signatures and figures, from the viewer's table."""
import inspect
import math

import pytest

import proton
from proton import specs

# (device type, arch, num_sms, clock kHz) of real boards, and one that is not a reference.
BOARDS = [("CUDA", "80", 108, 1410000), ("CUDA", "89", 128, 2520000), ("CUDA", "90", 132, 1980000),
          ("CUDA", "90", 114, 1755000), ("CUDA", "100", 148, 1965000), ("CUDA", "100", 160, 1000000),
          ("HIP", "gfx90a", 110, 1700000), ("HIP", "gfx942", 304, 2100000), ("HIP", "gfx950", 256, 2400000)]
WIDTHS = [8, 16, 32, 64]


def test_is_a_public_module_of_the_package():
    assert proton.specs is specs
    assert "specs" in proton.__all__


def test_figures_written_out():
    # Triton's formulas, worked by hand: a fixed 8-bit peak on sm_80/sm_89, scaled by SMs x clock
    # on sm_90 (from the H100 PCIe's 1513 TFLOP/s) and sm_100, FP8 rate per CU per clock on AMD;
    # each width's peak is the 8-bit one divided by width / 8.
    assert specs.max_flops("CUDA", "80", 16, 1, 1) == 312e12
    assert specs.max_flops("CUDA", "89", 8, 1, 1) == pytest.approx(330.3e12)
    assert specs.max_flops("CUDA", "90", 8, 114, 1755000) == pytest.approx(1513e12, rel=1e-12)
    assert specs.max_flops("CUDA", "100", 16, 148, 1965000) == pytest.approx(148 * 16384 * 1.965e9 / 2)
    assert specs.max_flops("HIP", "gfx942", 8, 304, 2100000) == pytest.approx(4096 * 304 * 2.1e9)
    assert specs.max_bps("CUDA", "90", 5120, 2619000) == 2 * 5120 * 2619000 * 1e3 / 8
    assert specs.max_bps("HIP", "gfx950", 8192, 1000) == 8.0e12
    assert specs.amd_fp8_flops_by_arch["gfx90a"] == 1024
    assert specs.amd_bps_by_arch["gfx942"] == 5.3e12
    assert set(specs.flops_by_device["CUDA"]) >= {"80", "89", "90", "100"}
    assert specs.flops_by_device["CUDA"]["100"](8, num_sms=148, clock_rate=1965000) == pytest.approx(
        148 * 16384 * 1.965e9)


def test_unknown_device_or_arch_is_a_value_error_with_tritons_text():
    with pytest.raises(ValueError, match="^Unsupported architecture: 75$"):
        specs.max_flops("CUDA", "75", 16, 40, 1000000)
    with pytest.raises(ValueError, match="^Unsupported device type: XPU$"):
        specs.max_flops("XPU", "1", 16, 1, 1)
    with pytest.raises(ValueError, match="Unsupported architecture: gfx1100"):
        specs.max_bps("HIP", "gfx1100", 1, 1)


@pytest.mark.triton
def test_same_names_signatures_and_figures_as_triton():
    theirs = pytest.importorskip("triton.profiler.specs")
    for name in ("max_flops", "max_bps"):
        assert inspect.signature(getattr(specs, name)) == inspect.signature(getattr(theirs, name)), name
    assert specs.amd_bps_by_arch.items() >= theirs.amd_bps_by_arch.items()
    assert specs.amd_fp8_flops_by_arch.items() >= theirs.amd_fp8_flops_by_arch.items()
    assert set(specs.flops_by_device) >= set(theirs.flops_by_device)
    for kind, archs in theirs.flops_by_device.items():
        assert set(specs.flops_by_device[kind]) >= set(archs), kind
    for kind, arch, sms, clock in BOARDS:
        for width in WIDTHS:
            ours = specs.max_flops(kind, arch, width, sms, clock)
            assert ours == pytest.approx(theirs.max_flops(kind, arch, width, sms, clock), rel=1e-12), \
                (kind, arch, sms, clock, width)
            assert math.isfinite(ours) and ours > 0
        assert specs.max_bps(kind, arch, 5120, 2619000) == theirs.max_bps(kind, arch, 5120, 2619000)
