// The version-specific half of the Python-context walker: see python_frames.h for why the
// frames are read without the GIL and why that is safe for the calling thread's own frames.
#include "bindings/python_frames.h"

#include <Python.h>
#include <frameobject.h>

#include "common/utf8.h"

// 3.11 moved frames out of PyFrameObject into the private _PyInterpreterFrame; its layout and
// helpers live in the internal headers, which need Py_BUILD_CORE. 3.14 changed the layout
// again (stack references); until it is checked here it gets no frames.
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#define PROTON_INTERPRETER_FRAMES 1
#elif PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030B0000
#define PROTON_FRAME_OBJECTS 1
#endif

namespace proton::python {

namespace {

// UTF-8 of a str without PyUnicode_AsUTF8, which may allocate its cache (needs the GIL).
void append_utf8(PyObject* s, std::string& out) {
  if (s == nullptr || !PyUnicode_Check(s)) {
    out += '?';
    return;
  }
#if PY_VERSION_HEX < 0x030C0000
  if (!PyUnicode_IS_READY(s)) {  // a legacy string not yet in canonical form: rare for code
    out += '?';
    return;
  }
#endif
  Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  const void* data = PyUnicode_DATA(s);
  int kind = PyUnicode_KIND(s);
  if (PyUnicode_IS_ASCII(s)) {
    out.append(static_cast<const char*>(data), static_cast<size_t>(n));
    return;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    ::proton::append_utf8(static_cast<uint32_t>(PyUnicode_READ(kind, data, i)), out);
  }
}

}  // namespace

bool frames_supported() {
#if defined(PROTON_INTERPRETER_FRAMES) || defined(PROTON_FRAME_OBJECTS)
  return true;
#else
  return false;
#endif
}

int collect_frames(RawFrame* out, int cap, bool& truncated) {
  truncated = false;
  // The thread state bound to this OS thread, whether or not it holds the GIL now. Looked up
  // on every call: a C++ thread using PyGILState_Ensure/Release gets a new one each time.
  PyThreadState* ts = PyGILState_GetThisThreadState();
  if (ts == nullptr) return 0;
  int n = 0;
#if defined(PROTON_INTERPRETER_FRAMES)
#if PY_VERSION_HEX >= 0x030D0000
  _PyInterpreterFrame* f = ts->current_frame;
#else
  _PyInterpreterFrame* f = ts->cframe != nullptr ? ts->cframe->current_frame : nullptr;
#endif
  for (; f != nullptr; f = f->previous) {
#if PY_VERSION_HEX >= 0x030C0000
    // Entry frames the interpreter pushes for calls from C: not user code.
    if (f->owner == FRAME_OWNED_BY_CSTACK) continue;
#endif
#if PY_VERSION_HEX >= 0x030D0000
    if (f->f_executable == nullptr || !PyCode_Check(f->f_executable)) continue;
    auto* code = reinterpret_cast<PyCodeObject*>(f->f_executable);
#else
    PyCodeObject* code = f->f_code;
#endif
    if (_PyFrame_IsIncomplete(f)) continue;  // still setting up: not a visible frame yet
    if (n == cap) {
      truncated = true;
      break;
    }
    out[n++] =
        RawFrame{code, _PyInterpreterFrame_LASTI(f) * static_cast<int32_t>(sizeof(_Py_CODEUNIT))};
  }
#elif defined(PROTON_FRAME_OBJECTS)
  for (PyFrameObject* f = ts->frame; f != nullptr; f = f->f_back) {
    if (n == cap) {
      truncated = true;
      break;
    }
    out[n++] = RawFrame{f->f_code, f->f_lasti * static_cast<int32_t>(sizeof(_Py_CODEUNIT))};
  }
#else
  (void)out;
  (void)cap;
#endif
  return n;
}

CodeIdentity code_identity(const void* code) {
  const auto* c = static_cast<const PyCodeObject*>(code);
  return CodeIdentity{c->co_filename, c->co_name, c->co_firstlineno};
}

std::string frame_name(const void* code, int32_t lasti) {
  auto* c = static_cast<PyCodeObject*>(const_cast<void*>(code));
  std::string name;
  name.reserve(96);
  append_utf8(c->co_filename, name);
  name += ':';
  // A negative offset (a frame not started yet) gives co_firstlineno, as for PyFrame objects.
  name += std::to_string(PyCode_Addr2Line(c, lasti));
  name += '@';
  append_utf8(c->co_name, name);
  return name;
}

}  // namespace proton::python
