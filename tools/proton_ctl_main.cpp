// proton-ctl: the command-line entry point; all logic lives in src/control.
#include <iostream>
#include <string>
#include <vector>

#include "control/ctl.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return proton::control::run_ctl(args, std::cout, std::cerr);
}
