#include "agent/allocator_settings.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <unistd.h>

namespace dormant::agent {
namespace {

// Set on the second start: "-" when the caller had no GLIBC_TUNABLES, else "=" and its value.
constexpr const char* kCallerTunables = "DORMANT_CALLER_GLIBC_TUNABLES";

void restore(const std::optional<std::string>& tunables) {
  if (tunables) {
    ::setenv("GLIBC_TUNABLES", tunables->c_str(), 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
}

std::optional<std::string> environment_variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

}  // namespace

std::optional<std::string> apply_allocator_settings(char** argv) {
  if (auto marker = environment_variable(kCallerTunables)) {
    restore(marker->starts_with('=') ? std::optional(marker->substr(1)) : std::nullopt);
    ::unsetenv(kCallerTunables);
    return std::nullopt;
  }
  std::optional<std::string> caller = environment_variable("GLIBC_TUNABLES");
  std::string tunables = kDaemonTunables;
  if (caller && !caller->empty()) tunables += ":" + *caller;
  // The file itself, not /proc/self/exe, so that the process keeps its name (pgrep, ps, top).
  std::error_code unreadable;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", unreadable);
  int error = unreadable.value();
  if (!unreadable) {
    ::setenv(kCallerTunables, caller ? ("=" + *caller).c_str() : "-", 1);
    ::setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
    ::execv(self.c_str(), argv);
    error = errno;
    ::unsetenv(kCallerTunables);
    restore(caller);
  }
  return "cannot start again with " + tunables + " (" + self.string() + ": " +
         std::strerror(error) + "); running with glibc's default caches";
}

}  // namespace dormant::agent
