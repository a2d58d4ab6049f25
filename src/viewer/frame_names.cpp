#include "viewer/frame_names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace proton::viewer {

namespace {

struct PythonFrame {
  std::string_view path;  // up to the last ':' before the line
  std::string_view line;
  std::string_view function;
};

// Proton names Python frames "<file>:<line>@<function>".
std::optional<PythonFrame> split_python_frame(std::string_view name) {
  auto at = name.find('@');
  if (at == std::string_view::npos) return std::nullopt;
  auto colon = name.rfind(':', at);
  if (colon == std::string_view::npos || colon + 1 == at) return std::nullopt;
  for (size_t i = colon + 1; i < at; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
  }
  return PythonFrame{name.substr(0, colon), name.substr(colon + 1, at - colon - 1),
                     name.substr(at + 1)};
}

std::string_view basename(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool looks_like_cpp(std::string_view name) {
  return name.find("::") != std::string_view::npos || name.starts_with("void ");
}

}  // namespace

std::optional<FrameFormat> parse_frame_format(std::string_view text) {
  if (text == "full") return FrameFormat::kFull;
  if (text == "file_function_line") return FrameFormat::kFileFunctionLine;
  if (text == "function_line") return FrameFormat::kFunctionLine;
  if (text == "file_function") return FrameFormat::kFileFunction;
  return std::nullopt;
}

std::string format_frame(std::string_view name, FrameFormat format) {
  if (format == FrameFormat::kFull) return std::string(name);
  auto frame = split_python_frame(name);
  if (!frame) return std::string(name);
  std::string file(basename(frame->path));
  switch (format) {
    case FrameFormat::kFileFunctionLine:
      return file + ":" + std::string(frame->line) + "@" + std::string(frame->function);
    case FrameFormat::kFunctionLine:
      return std::string(frame->line) + "@" + std::string(frame->function);
    case FrameFormat::kFileFunction:
      return file + "@" + std::string(frame->function);
    case FrameFormat::kFull:
      break;
  }
  return std::string(name);
}

std::optional<std::string> demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::nullopt;
  std::string copy(name);  // __cxa_demangle needs a terminated string
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !out) return std::nullopt;
  return std::string(out.get());
}

std::string shorten_cpp_name(std::string_view name) {
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  std::string out;
  int angle = 0;
  int paren = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (angle == 0 && paren == 0 && name.substr(i).starts_with(kAnonymous)) {
      out += "{anon}";
      i += kAnonymous.size() - 1;
      continue;
    }
    // "operator<" and friends are names, not brackets; they are rare in kernels, keep them.
    if (c == '<' && paren == 0) {
      if (angle++ == 0) out += "<…>";
      continue;
    }
    if (c == '>' && angle > 0 && paren == 0) {
      --angle;
      continue;
    }
    if (angle > 0) continue;
    if (c == '(') {
      ++paren;
      continue;
    }
    if (c == ')' && paren > 0) {
      --paren;
      continue;
    }
    if (paren > 0) continue;
    out += c;
  }
  // Drop cv-qualifiers of member functions, then the return type: the last space outside
  // brackets separates it from the name.
  for (std::string_view suffix : {" const", " volatile", " "}) {
    while (std::string_view(out).ends_with(suffix))
      out.resize(out.size() - suffix.size());
  }
  if (auto space = out.rfind(' '); space != std::string::npos) out.erase(0, space + 1);
  return out.empty() ? std::string(name) : out;
}

std::string display_name(std::string_view name, const NameOptions& options) {
  std::string shown = format_frame(name, options.format);
  if (auto demangled = demangle(shown)) {
    shown = options.full_names ? *demangled : shorten_cpp_name(*demangled);
  } else if (!options.full_names && looks_like_cpp(shown) && !split_python_frame(shown)) {
    shown = shorten_cpp_name(shown);
  }
  return terminal_safe(shown);
}

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  return out;
}

}  // namespace proton::viewer
