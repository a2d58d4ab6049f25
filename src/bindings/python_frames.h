// Reading the calling thread's own Python frames without the GIL.
//
// Kernel launches reach the CUPTI callback with the GIL released: PyTorch drops it around
// every op (pybind11 gil_scoped_release) and Triton's launcher around cuLaunchKernel
// (Py_BEGIN_ALLOW_THREADS). Taking the GIL back inside a driver callback costs a GIL handoff
// and can deadlock against a thread that holds the GIL while waiting on the driver, so the
// frames are read directly instead. That is safe for the calling thread's *own* frame chain:
// only this thread pushes or pops its frames, and it is parked inside the C call for as long
// as the callback runs; every frame holds a strong reference to its code object. Nothing here
// touches a reference count, allocates a Python object or calls the interpreter.
//
// The interpreter-frame layout is private to each CPython minor version, so this file is the
// one place that knows it (3.10 to 3.13; other versions report no frames, and launches fall
// back to the shadow context).
#pragma once

#include <cstdint>
#include <string>

namespace proton::python {

/// One frame as the walker sees it: the code object (borrowed, alive while the frame is) and
/// the offset in bytes of the instruction being executed.
struct RawFrame {
  const void* code;
  int32_t lasti;
};

/// Whether this interpreter version's frames can be read (else collect_frames returns 0).
bool frames_supported();

/// Fills `out` with the calling thread's frames, innermost first, up to `cap` of them. Returns
/// how many were written; sets `truncated` when older frames did not fit. Returns 0 when the
/// thread has no Python thread state or no frame. Callable without the GIL (see above).
int collect_frames(RawFrame* out, int cap, bool& truncated);

/// What a code object's frame is named at `lasti`: "file:line@function", Triton's format
/// (co_filename, the line PyFrame_GetLineNumber would give, co_name). Reads the code
/// object's immutable fields only, so it also runs without the GIL.
std::string frame_name(const void* code, int32_t lasti);

/// Cheap identity of a code object beyond its address, to tell a freed-and-reused address
/// apart: the addresses of its file-name and function-name strings and its first line.
struct CodeIdentity {
  const void* filename;
  const void* name;
  int firstlineno;
  bool operator==(const CodeIdentity&) const = default;
};
CodeIdentity code_identity(const void* code);

}  // namespace proton::python
