"""Metric values that are not plain numbers: tensors (as triton.profiler 3.9 takes them).

``with proton.scope("step", {"loss": loss, "tokens": n_tokens}):`` may pass torch tensors:

- a CPU tensor (or numpy scalar) of one element is read as a number (``.item()``);
- a one-element tensor on a GPU is **summed on the device**: the scope's value lives in a
  device accumulator, one per (sessions, node, metric), to which each use adds its value with
  one in-place device add, on the current stream, with no host synchronization. Inside CUDA
  graph capture the add is captured, so every replay adds again. The accumulators are read back
  (one device-to-host copy) when the session's data is read: ``finalize``, ``data.get``;
- a tensor of more than one element, or an object that is not a number, is an error naming the
  metric.

Tensors returned by a Triton kernel's ``launch_metadata`` (``hook="triton"``) take the same
path (``launch_value``): one accumulator per (sessions, launch site, kernel, metric); at the
read-back the engine hands its new sum to the kernel nodes its launches reached.

``(pty)`` metrics keep the last value (a device copy instead of an add). The tiny add kernels
run under the launch-metadata frame (``proton.state.COMPUTE_METADATA_SCOPE_NAME``), which every
viewer hides, so they never show up among the user's kernels.

The accumulators are allocated in slabs of 4096 values per device and kind (float64 for
floating tensors, int64 for the others), at most ``TRITON_PROFILE_METRIC_BUFFER_SIZE`` bytes
(``triton.knobs.proton.profile_metric_buffer_size``) in all. A slab is allocated outside graph
capture whenever possible: when a session starts on a process whose CUDA is initialized, or at
the first tensor metric; when a session starts before CUDA is initialized, at CUDA
initialization. A slab first needed during a capture cannot be made there (allocating fails and
would invalidate the capture, zeroing would be replayed): that is a ``CaptureAllocationError``
naming ``proton.metric.preallocate()``, and the capture stays valid.
"""

import sys
import threading

from . import _proton
from .state import COMPUTE_METADATA_SCOPE_NAME

# The operand widths of the flops<width> metrics (triton.profiler.metric's name).
FLOPS_WIDTHS = (8, 16, 32, 64)

_SLAB = 4096
# Tensors on these devices are read as numbers; others are accumulated on their device. (The
# CPU tests empty it to run the accumulator logic on CPU tensors.)
_HOST_DEVICES = ("cpu",)
_lock = threading.Lock()
# (device, is_float) -> [slab tensors]
_slabs: dict = {}
# (sessions tuple, context id, metric name, device, is_float) -> (slab index, offset)
_slots: dict = {}
# (device, is_float) -> next free index over all slabs of that kind
_next: dict = {}
# slot -> value already handed to the sessions (accumulators are never reset on the device:
# a reset would be one more kernel, and a captured graph may add at any time)
_folded: dict = {}


def _torch():
    return sys.modules.get("torch")


def _capacity_values() -> int:
    from . import _knobs

    return max(_SLAB, _knobs.profile_metric_buffer_size() // 8)


def _new_slab(torch, device, is_float):
    # Zeroing is a kernel too: it lands on the hidden frame, like the adds.
    outer = _proton.state() or None
    _proton.set_state(COMPUTE_METADATA_SCOPE_NAME)
    try:
        return _zeroed_slab(torch, device, is_float)
    finally:
        _proton.set_state(outer)


class CaptureAllocationError(RuntimeError):
    """A GPU tensor metric needs a new accumulator while a CUDA graph is being captured."""


def _zeroed_slab(torch, device, is_float):
    dtype = torch.float64 if is_float else torch.int64
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        # Measured on an H100 (torch 2.11): allocating, even on a side stream, fails with
        # "operation not permitted when stream is capturing" and invalidates the user's capture;
        # zeroing inside the capture would be replayed, wiping the sums on every replay. So no
        # CUDA call at all: a clear error, and the capture stays valid.
        raise CaptureAllocationError(
            f"GPU tensor metrics on {device} need an accumulator allocated outside CUDA-graph "
            "capture: call proton.metric.preallocate() once CUDA is initialized (start() does so "
            "when it is), or pass one GPU tensor metric before capturing")
    return torch.zeros(_SLAB, dtype=dtype, device=device)


def _slot(torch, key, device, is_float):
    slot = _slots.get(key)
    if slot is not None:
        return slot
    kind = (device, is_float)
    index = _next.get(kind, 0)
    if index >= _capacity_values():
        raise RuntimeError(
            f"metric '{key[2]}': the device tensor-metric buffer is full ({index} values); raise "
            "TRITON_PROFILE_METRIC_BUFFER_SIZE (triton.knobs.proton.profile_metric_buffer_size)")
    slabs = _slabs.setdefault(kind, [])
    if index // _SLAB >= len(slabs):
        slabs.append(_new_slab(torch, device, is_float))
    _next[kind] = index + 1
    slot = _slots[key] = (index // _SLAB, index % _SLAB)
    return slot


def _preallocate_now(torch, device) -> None:
    with _lock:
        for is_float in (True, False):
            kind = (device, is_float)
            if not _slabs.get(kind):
                _slabs[kind] = [_new_slab(torch, device, is_float)]


def preallocate(device=None) -> None:
    """One float and one int accumulator slab on `device` (default: the current one).

    start() calls it, before the session exists, when CUDA is initialized; otherwise the first
    device tensor metric outside a capture allocates.
    """
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return
    if torch.cuda.is_initialized():
        dev = torch.device("cuda", torch.cuda.current_device() if device is None else device)
        _preallocate_now(torch, dev)
        return
    # CUDA not up yet: the first device tensor metric outside a capture allocates. (A call
    # queued for torch's CUDA init ran inside our own allocation, under _lock, and hung.)


def _accumulate(torch, name: str, value, where=None):
    """Adds `value` to its accumulator on the device; returns the accumulator's key (None when
    no session is active). `where` tells launch-metadata slots apart from scope ones."""
    sessions = tuple(_proton._active_sessions())
    if not sessions:
        return None
    is_float = value.is_floating_point() or value.is_complex()
    if value.is_complex():
        raise TypeError(f"metric '{name}': complex tensors are not metric values")
    device = value.device
    context = _proton._metric_context()
    key = (sessions, context if where is None else (where, context), name, device, is_float)
    with _lock:
        slab_index, offset = _slot(torch, key, device, is_float)
        cell = _slabs[(device, is_float)][slab_index][offset]
    outer = _proton.state() or None
    _proton.set_state(COMPUTE_METADATA_SCOPE_NAME)  # the add kernel lands on a hidden frame
    try:
        if name.rstrip().endswith("(pty)"):
            cell.copy_(value.reshape(()))
        else:
            cell.add_(value.reshape(()))
    finally:
        _proton.set_state(outer)
    return key


# Launch-metadata accumulators (hook="triton"): key -> slot number and back. The engine notes
# which kernel nodes each slot's launches reached, and fold() hands the slot's value to them.
_launch_slots: dict = {}
_launch_keys: list = []


def _tensor_value(where: str, torch, value):
    """Checks a tensor metric; returns it (bool as int64)."""
    if value.numel() != 1:
        raise TypeError(f"{where}: a tensor metric must hold exactly one value (a 0-d tensor), "
                        f"got shape {tuple(value.shape)} ({_ACCEPTED})")
    if value.device.type == "meta":
        raise ValueError(f"{where}: a meta tensor has no value")
    if value.is_complex():
        raise TypeError(f"{where}: a complex tensor is not a metric value ({_ACCEPTED})")
    if value.dtype == torch.bool:
        value = value.to(torch.int64)  # as on the device: a count, not a bool
    return value


def launch_value(name: str, kernel: str, value):
    """Called by the launch hook for a launch_metadata value with a ``data_ptr`` (a tensor).

    A host tensor is read as a number. A device tensor is added, on the current stream (the
    one the kernel launches on), to an accumulator slot of its launch site, kernel and metric,
    with no host synchronization, also inside CUDA-graph capture (each replay adds again);
    returns ``(slot, typed zero)``; the slot is read back with the scope metrics (fold()).
    None: not a tensor this module knows (ignored, as triton.profiler ignores non-numbers).
    """
    torch = _torch()
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    shown = "".join(c if " " <= c != "\x7f" else f"\\x{ord(c):02x}" for c in name)
    value = _tensor_value(f"launch_metadata metric '{shown}' of kernel '{kernel}'", torch, value)
    if value.device.type in _HOST_DEVICES:
        return value.item()
    key = _accumulate(torch, name, value, where=kernel)
    zero = 0.0 if value.is_floating_point() else 0
    if key is None:
        return zero
    with _lock:
        slot = _launch_slots.get(key)
        if slot is None:
            slot = _launch_slots[key] = len(_launch_keys)
            _launch_keys.append(key)
    return slot, zero


_ACCEPTED = _proton._metric_values_accepted  # the engine's words, so both refuse alike


def convert(name: str, value, scope: str = "ROOT"):
    """Called by the engine for a metric value that is not an int, float, str or list.

    Errors are one line naming the metric, its scope and what is accepted.
    """
    shown = "".join(c if " " <= c != "\x7f" else f"\\x{ord(c):02x}" for c in name)
    where = f"metric '{shown}' in scope '{scope}'"  # the engine passes `scope` already escaped
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        value = _tensor_value(where, torch, value)
        if value.device.type in _HOST_DEVICES:
            return value.item()
        _accumulate(torch, name, value)
        # A 0 of the right type: creates the node and checks the type now (the sum comes
        # from the device later); a property gets its value at the read-back.
        return 0.0 if value.is_floating_point() else 0
    item = getattr(value, "item", None)
    if item is not None and callable(item):
        try:
            v = item()
        except Exception as e:
            raise ValueError(f"{where}: {type(value).__name__}.item() failed: {e}") from e
        if isinstance(v, (bool, int, float)):
            return v
        raise TypeError(f"{where}: {type(value).__name__}.item() returned "
                        f"{type(v).__name__}, not a number ({_ACCEPTED})")
    raise TypeError(f"{where}: a {type(value).__name__} is not a metric value ({_ACCEPTED})")


def fold() -> None:
    """Reads the device accumulators once and adds what is new to their sessions' trees."""
    torch = _torch()
    if torch is None or not _slots:
        return
    with _lock:
        slots = list(_slots.items())
        host = {}
        _proton._profiler_host_calls(True)  # this wait and these copies are not the program's
        try:
            for kind, slabs in _slabs.items():
                if kind[0].type == "cuda":
                    torch.cuda.synchronize(kind[0])
                host[kind] = [slab.cpu().tolist() for slab in slabs]
        finally:
            _proton._profiler_host_calls(False)
        launch_slots = dict(_launch_slots)
    if launch_slots:
        # The kernels those launches ran as must be placed before their values: deliver every
        # record (their kernels completed before the synchronization above).
        _proton._flush_records()
    for key, (slab_index, offset) in slots:
        sessions, ctx, name, device, is_float = key
        now = host[(device, is_float)][slab_index][offset]
        prop = name.rstrip().endswith("(pty)")
        before = _folded.get(key, 0)
        value = now if prop else now - before
        if not prop and value == 0:
            continue
        _folded[key] = now
        value = float(value) if is_float else int(value)
        launch_slot = launch_slots.get(key)
        for session in sessions:
            try:
                if launch_slot is not None:
                    _proton._add_launch_slot(session, launch_slot, name, value)
                else:
                    _proton._add_metrics_to(session, ctx, {name: value})
            except _proton.MetricTypeError:
                # This slot's kind (int or float) was refused at the scope already: the user
                # got the error there, and its values are not the metric's.
                pass


_proton._set_metric_converter(convert)
_proton._set_launch_tensor_converter(launch_value)
