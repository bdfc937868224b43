#include "profilers/ebpf/libbpf_log.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

namespace dormant::profilers::ebpf {
namespace {

// Enough for the verifier's explanation, which comes last.
constexpr size_t kLogTailBytes = 4096;

thread_local std::string* captured = nullptr;

// The verifier's log comes as one message of many kB, its reason last: formatted whole.
int route_libbpf_message(libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  va_list measuring;
  va_copy(measuring, args);
  int length = std::vsnprintf(nullptr, 0, format, measuring);
  va_end(measuring);
  if (length <= 0) return length;
  std::string text(static_cast<size_t>(length), '\0');
  std::vsnprintf(text.data(), text.size() + 1, format, args);
  if (captured != nullptr) {
    captured->append(text);
    if (captured->size() > 2 * kLogTailBytes) captured->erase(0, captured->size() - kLogTailBytes);
  } else {
    std::string_view line = text;
    while (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    spdlog::debug("libbpf: {}", line);
  }
  return length;
}

std::string tail_of(std::string log) {
  if (log.size() > kLogTailBytes) log.erase(0, log.size() - kLogTailBytes);
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log;
}

}  // namespace

Result<void> with_libbpf_log(std::string_view what, const std::function<int()>& step) {
  static std::once_flag routed;
  std::call_once(routed, [] { libbpf_set_print(route_libbpf_message); });
  std::string log;
  captured = &log;
  struct Release {
    ~Release() { captured = nullptr; }
  } release;
  int result = step();
  if (result == 0) return ok();
  int error = result < 0 ? -result : EINVAL;
  std::string message = "cannot " + std::string(what) + ": " + std::strerror(error);
  if (!log.empty()) message += "; libbpf said:\n" + tail_of(std::move(log));
  return Error(error == EPERM ? ErrorKind::kUnavailable : ErrorKind::kBpf, std::move(message));
}

}  // namespace dormant::profilers::ebpf
