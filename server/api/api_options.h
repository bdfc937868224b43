// What the server's command line sets of its API (config/server_config.h maps the flags).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "server/api/long_polls.h"

namespace dormant::server::api {

struct ApiOptions {
  // The longest a heartbeat may ask to be held (?wait=N) until its host has a new command; every
  // heartbeat answer advertises it in X-Dormant-Long-Poll. 0: no long-polls, no advertisement.
  std::chrono::seconds long_poll_max{0};
  // How many heartbeats may be held at once, and from one address (--max-connections / 2, 8):
  // past them a heartbeat is answered at once.
  LongPollLimits long_poll_limits;
  // A host heard from within it is active (Studio: 2 minutes): selectors resolve against the
  // inventories of such hosts only, and the profiling status views show only them.
  std::chrono::seconds active_window{120};
  // Mutual TLS: heartbeats, completions and uploads are taken for a host only from a client
  // certificate that names it, so that one host's key cannot speak for another.
  bool bind_hostname_to_certificate = false;
  // Largest uploaded profile once decompressed (--max-profile-mb): a gzip bomb stops here.
  size_t max_profile_bytes = 16 << 20;
  // Distinct stacks a merged flamegraph keeps: its memory, whatever the profiles hold.
  size_t merge_max_stacks = 1 << 20;
  // Merged flamegraphs made at once (merge_slots.h): fewer than the server's threads. With
  // render_threads, on threads of their own, so that a merge (seconds, a core) never holds one
  // that draws a single profile. Not niced: a merge reads the rollups with a database connection
  // in hand, and a niced thread descheduled while holding SQLite's only one kept heartbeats
  // waiting past --database-wait-ms on a loaded machine (503s); nice had made no measurable
  // difference to heartbeats during merges anyway (issue 40: 12.6-14.5 ms at most against
  // 12.0-14.0 ms).
  int concurrent_merges = 1;
  int merge_nice = 0;
  // Frames a flamegraph draws at most (profile/flamegraph.h); those past it become boxes.
  size_t svg_max_frames = 50000;
  // Per-profile flamegraphs kept as drawn for the next request (svg_cache.h), in bytes; 0: none.
  size_t svg_cache_bytes = 64 << 20;
  // Flamegraphs and pprof files are made on threads of their own (job_pool.h), with as many
  // more waiting; past them, 503 with Retry-After. 0: made on the thread that handles the request.
  int render_threads = 0;
  int render_queue = 0;
  // Every other request that uses the database, likewise: the threads that serve connections
  // (and the health check) never wait for it. 0: on the thread that handles the request.
  int store_threads = 0;
  int store_queue = 0;
  // A request that waited this long for a store thread is answered 503 instead (--database-wait-ms,
  // as for a connection).
  std::chrono::milliseconds store_wait{2000};
};

}  // namespace dormant::server::api
