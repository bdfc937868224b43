#include "agent/work_directory.h"

#include <cerrno>
#include <charconv>
#include <string>
#include <string_view>
#include <system_error>

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/private_directory.h"

namespace dormant::agent {
namespace {

// The PID in NAME-PID-…; 0 where the name has none.
pid_t owner_of(std::string_view name) {
  size_t first = name.find('-');
  if (first == std::string_view::npos) return 0;
  std::string_view rest = name.substr(first + 1);
  pid_t pid = 0;
  auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  if (error != std::errc() || end == rest.data() || pid <= 0) return 0;
  return pid;
}

bool is_running(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

}  // namespace

std::filesystem::path work_directory_of(const std::filesystem::path& state_dir) {
  return state_dir / "work";
}

Result<size_t> prepare_work_directory(const std::filesystem::path& state_dir) {
  if (auto made = make_private_directory(state_dir); !made) {
    return Error(made.error()).with_context("--state-dir");
  }
  const std::filesystem::path work = work_directory_of(state_dir);
  if (auto made = make_private_directory(work); !made) {
    return Error(made.error()).with_context("--state-dir");
  }
  size_t removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(work, error)) {
    pid_t owner = owner_of(entry.path().filename().string());
    if (owner == ::getpid() || is_running(owner)) continue;
    std::error_code ignored;
    removed += std::filesystem::remove_all(entry.path(), ignored) > 0;
  }
  if (error) return Error::from_errno("reading " + work.string(), error.value());
  if (removed > 0) {
    spdlog::info("removed {} work files that an agent killed earlier left in {}", removed,
                 work.string());
  }
  return removed;
}

}  // namespace dormant::agent
