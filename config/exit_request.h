// What a program should do instead of running: print --help or --version (exit code 0, stdout)
// or a usage error (exit code 2, stderr).
#pragma once

#include <string>

namespace dormant::config {

struct ExitRequest {
  int exit_code;
  std::string text;
};

}  // namespace dormant::config
