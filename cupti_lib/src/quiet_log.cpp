#include "cupti_lib/src/quiet_log.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "cupti_lib/src/cupti_api.h"

namespace dormant::cupti {
namespace {

std::atomic<bool> g_quiet{false};
std::mutex g_logged_mutex;
constexpr int kMaxLogged = 32;
const char* g_logged[kMaxLogged];  // the texts already logged (string literals)
int g_logged_count = 0;

bool first_time(const char* text) {
  std::lock_guard lock(g_logged_mutex);
  for (int i = 0; i < g_logged_count; ++i) {
    if (std::strcmp(g_logged[i], text) == 0) return false;
  }
  if (g_logged_count < kMaxLogged) g_logged[g_logged_count++] = text;
  return true;
}

}  // namespace

void log_once(const char* text) {
  if (first_time(text)) std::fprintf(stderr, "dormant_cupti: %s\n", text);
}

bool cupti_ok(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return true;
  if (first_time(what)) {
    const char* reason = nullptr;
    if (cupti().get_result_string(result, &reason) != CUPTI_SUCCESS || reason == nullptr) {
      reason = "unknown error";
    }
    std::fprintf(stderr,
                 "dormant_cupti: %s failed (%d: %s); GPU profiling is off in this process\n", what,
                 static_cast<int>(result), reason);
  }
  return false;
}

bool quiet() { return g_quiet.load(std::memory_order_relaxed); }
void go_quiet() { g_quiet.store(true, std::memory_order_relaxed); }

}  // namespace dormant::cupti
