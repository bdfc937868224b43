// The idle daemon's allocator settings. glibc reads them only from GLIBC_TUNABLES when a program
// starts, so the daemon starts itself again, once, with them set:
// - no per-thread cache of freed blocks: the I/O thread's, refilled by a session, would hand the
//   idle heartbeats blocks spread over every page the session touched, and malloc_trim cannot give
//   back a page that holds a cached block;
// - no cache of exited threads' stacks, each of which keeps its touched pages.
#pragma once

#include <optional>
#include <string>

namespace dormant::agent {

inline constexpr const char* kDaemonTunables =
    "glibc.malloc.tcache_count=0:glibc.pthread.stack_cache_size=0";

// On the first start, sets GLIBC_TUNABLES (the caller's own settings kept after ours, so they
// win) and executes the agent's file with `argv`: the same process, started again. On the second,
// puts the caller's GLIBC_TUNABLES back, so that perf and the agent's other children run as the
// agent was launched. What went wrong when the settings could not be applied; the daemon runs on
// without them.
std::optional<std::string> apply_allocator_settings(char** argv);

}  // namespace dormant::agent
