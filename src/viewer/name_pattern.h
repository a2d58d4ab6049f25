// The regular expressions of -i and -e. POSIX extended syntax through glibc's regexec, not
// std::regex: libstdc++'s matcher recurses once per character and overflows the stack on the
// multi-kilobyte template names of library kernels (a 200 kB name crashed it in testing).
// Python's \d, which Triton's users type, is rewritten to [0-9]; glibc already knows \w and \s.
#pragma once

#include <regex.h>

#include <memory>
#include <string>
#include <string_view>

namespace proton::viewer {

class NamePattern {
 public:
  // Throws UsageError naming `option` when `pattern` does not compile.
  NamePattern(const std::string& pattern, std::string_view option);

  // True when the pattern matches anywhere in `name` (like Python's re.search).
  bool matches(const std::string& name) const;

 private:
  struct Free {
    void operator()(regex_t* r) const {
      regfree(r);
      delete r;
    }
  };
  std::unique_ptr<regex_t, Free> regex_;
};

}  // namespace proton::viewer
