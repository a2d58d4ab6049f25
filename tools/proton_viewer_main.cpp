// proton-viewer: the command-line entry point; all logic lives in src/viewer.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "viewer/cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  proton::viewer::Terminal terminal;
  terminal.stdout_is_tty = ::isatty(STDOUT_FILENO) != 0;
  const char* no_color = std::getenv("NO_COLOR");
  terminal.no_color_env = no_color != nullptr && no_color[0] != '\0';
  int status = proton::viewer::run_cli(args, std::cout, std::cerr, terminal);
  std::cout.flush();
  return status;
}
