"""Peak FLOP/s and memory bandwidth per GPU architecture, as ``triton.profiler.specs``.

The figures are the viewer's peak table (C++), the one ``proton-viewer -m util`` uses, so a
script that works out utilisation itself gets the viewer's numbers. Clocks are in kHz, as the
device map of a profile (and Triton's driver) gives them; widths in bits.
"""

from functools import partial as _partial

from . import _proton


def max_flops(device_type, arch, width, num_sms, clock_rate):
    """Peak dense FLOP/s for operands of ``width`` bits on a ``device_type`` ("CUDA" or "HIP")
    device of architecture ``arch`` ("90", "gfx942") with ``num_sms`` SMs (CUs) at ``clock_rate``
    kHz. An unknown device type or architecture raises ``ValueError``."""
    return _proton.max_flops(device_type, arch, width, num_sms, clock_rate)


def max_bps(device_type, arch, bus_width, memory_clock_rate):
    """Peak memory bandwidth in bytes/s: CUDA from ``bus_width`` (bits) and ``memory_clock_rate``
    (kHz) at two transfers per clock; HIP from the architecture's figure."""
    return _proton.max_bps(device_type, arch, bus_width, memory_clock_rate)


def _cuda_flops(arch, width, num_sms=0, clock_rate=0, **kwargs):
    return _proton.max_flops("CUDA", arch, width, num_sms, clock_rate)


_rows = _proton.arch_peaks()
# Triton's tables, built from the same rows: CUDA's per-arch functions of (width, num_sms=,
# clock_rate=); HIP's 8-bit FLOP per CU per clock and its bandwidth.
flops_by_device = {"CUDA": {arch: _partial(_cuda_flops, arch) for kind, arch, *_ in _rows if kind == "CUDA"}}
amd_fp8_flops_by_arch = {arch: per_clock for kind, arch, _, per_clock, _ in _rows if kind == "HIP"}
amd_bps_by_arch = {arch: bps for kind, arch, _, _, bps in _rows if kind == "HIP"}
del _rows

__all__ = ["amd_bps_by_arch", "amd_fp8_flops_by_arch", "flops_by_device", "max_bps", "max_flops"]
