// dormant-server's configuration, from flags, DORMANT_* environment variables and a config file.
#pragma once

#include <string>
#include <variant>

#include "common/result.h"
#include "config/exit_request.h"

namespace dormant::config {

struct ServerConfig {
  std::string listen_address = "0.0.0.0";
  int port = 8443;
  std::string data_dir = "/var/lib/dormant-server";
  std::string database;            // PostgreSQL URL; empty: SQLite in data_dir
  int database_connections = 0;    // to PostgreSQL; 0: as many as threads
  int database_wait_ms = 2000;     // a request's wait for a database connection, then 503
  int retention_days = 0;          // profiles and command history; 0: kept forever
  int host_expiry_days = 30;       // hosts not heard from for longer are deleted; 0: never
  int max_storage_mb = 0;          // profiles' compressed bytes; 0: no cap
  int min_free_disk_mb = 100;      // uploads stop short of it on the data dir's file system
  int long_poll_max_s = 30;        // longest hold of a heartbeat waiting for a command; 0: none
  int active_window_s = 120;       // a host heard from this recently is active: selectors pick it
  int merge_max_stacks = 1 << 20;  // distinct stacks a merged flamegraph keeps
  int merge_max_mb = 0;            // no longer read: merges read rollups; a warning when given
  int minute_rollup_days = 7;      // how long each size of rollup bucket is kept; 0: for ever
  int hour_rollup_days = 90;
  int day_rollup_days = 365;
  int rollup_max_stacks = 1 << 20;  // distinct stacks one rollup bucket keeps
  int svg_max_frames = 50000;       // frames a flamegraph draws; the rest become boxes
  int svg_cache_mb = 64;            // per-profile flamegraphs kept as drawn; 0: none
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;  // when set, clients must present a certificate it signed
  std::string tls_min_version = "1.2";
  bool bind_hostname_to_certificate = false;  // a host speaks only with a certificate naming it
  bool insecure_http = false;                 // plain HTTP, only when asked for
  std::string tokens_file;                    // one token per line; '#' starts a comment
  int max_body_bytes = 4 << 20;
  int max_header_bytes = 16 << 10;
  int read_timeout_s = 10;   // per request: a slow client cannot hold a connection longer
  int idle_timeout_s = 120;  // a kept-alive connection between two requests (agents: 30 s apart)
  int max_connections = 16384;
  int max_connections_per_address = 64;  // 0: no cap
  int min_body_rate = 16 << 10;          // bytes a second a request body must keep up
  int max_inflight_body_mb = 256;        // request bodies being received at once
  int max_profile_mb = 16;               // an uploaded profile once decompressed
  int threads = 0;                       // 0: one per core
  std::string log_level = "info";
};

std::variant<ServerConfig, ExitRequest> parse_server_args(int argc, const char* const* argv);

Result<void> validate(const ServerConfig& config);

}  // namespace dormant::config
