#include "viewer/name_pattern.h"

#include "viewer/errors.h"

namespace proton::viewer {

namespace {

std::string translate(const std::string& pattern) {
  std::string out;
  bool in_bracket = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char e = pattern[++i];
      if (!in_bracket && e == 'd') {
        out += "[0-9]";
      } else if (!in_bracket && e == 'D') {
        out += "[^0-9]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[') in_bracket = true;
    if (c == ']') in_bracket = false;
    out += c;
  }
  return out;
}

}  // namespace

NamePattern::NamePattern(const std::string& pattern, std::string_view option)
    : regex_(new regex_t) {
  int rc = regcomp(regex_.get(), translate(pattern).c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char message[256];
    regerror(rc, regex_.get(), message, sizeof message);
    // regcomp failed, so there is nothing for regfree to release: free the struct alone.
    delete regex_.release();
    throw UsageError("bad regular expression for " + std::string(option) + " '" + pattern +
                     "': " + message);
  }
}

bool NamePattern::matches(const std::string& name) const {
  return regexec(regex_.get(), name.c_str(), 0, nullptr, 0) == 0;
}

}  // namespace proton::viewer
