#include "common/exit_status.h"

#include <cstring>

#include <sys/wait.h>

namespace dormant {

std::string signal_name(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  if (abbrev == nullptr) return "signal " + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

ExitStatus ExitStatus::from_wait_status(int status) {
  ExitStatus exit;
  if (WIFSIGNALED(status)) {
    exit.signaled = true;
    exit.signal = WTERMSIG(status);
    exit.core_dumped = WCOREDUMP(status);
  } else {
    exit.code = WEXITSTATUS(status);
  }
  return exit;
}

std::string ExitStatus::describe() const {
  if (!signaled) return "exited with code " + std::to_string(code);
  std::string text = "killed by " + signal_name(signal);
  if (const char* description = ::sigdescr_np(signal))
    text += std::string(" (") + description + ")";
  if (core_dumped) text += ", core dumped";
  return text;
}

}  // namespace dormant
