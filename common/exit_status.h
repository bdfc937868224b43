// How a child process ended: a normal exit with a code, or a death by signal.
#pragma once

#include <string>

namespace dormant {

// "SIGSEGV"; "signal 64" for a number without a name.
std::string signal_name(int signal);

struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code, when !signaled
  int signal = 0;  // terminating signal, when signaled
  bool core_dumped = false;

  static ExitStatus from_wait_status(int status);
  bool success() const { return !signaled && code == 0; }
  // "exited with code 3", "killed by SIGSEGV (Segmentation fault)".
  std::string describe() const;
};

}  // namespace dormant
