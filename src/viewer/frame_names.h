// How frame names are shown: Triton's -f formats for Python frames, demangled and shortened
// C++ kernel names, and terminal-safe text.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace proton::viewer {

enum class FrameFormat { kFull, kFileFunctionLine, kFunctionLine, kFileFunction };

std::optional<FrameFormat> parse_frame_format(std::string_view text);

struct NameOptions {
  FrameFormat format = FrameFormat::kFull;
  bool full_names = false;  // keep demangled kernel names whole
};

// Applies -f to a Python frame name ("/path/file.py:42@func"); other names are returned as is,
// since splitting C++ names on '/' or ':' would cut them in the wrong places.
std::string format_frame(std::string_view name, FrameFormat format);

// Itanium-demangles `name` when it is mangled ("_Z..."); nullopt otherwise.
std::optional<std::string> demangle(std::string_view name);

// Drops template arguments, parameter lists and the return type of a demangled C++ name, which
// for library kernels run to thousands of characters: "void ns::gemm<128, float>(Params)" ->
// "ns::gemm<…>".
std::string shorten_cpp_name(std::string_view name);

// The name shown for a frame under `options`.
std::string display_name(std::string_view name, const NameOptions& options);

// Replaces control bytes so names from a file cannot drive the terminal.
std::string terminal_safe(std::string_view text);

}  // namespace proton::viewer
