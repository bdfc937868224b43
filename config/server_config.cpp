#include "config/server_config.h"

#include <climits>

#include "config/cli.h"

namespace dormant::config {
namespace {

constexpr const char* kListening = "Listening and TLS";
constexpr const char* kStorage = "Storage and access";
constexpr const char* kLimits = "Limits";
constexpr const char* kGeneral = "General";

void define_options(CLI::App& app, ServerConfig& c) {
  app.set_version_flag("--version", "dormant-server " DORMANT_VERSION);
  add_config_file_option(app, kGeneral);
  app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error or critical")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "critical"}))
      ->group(kGeneral);

  app.add_option("--listen", c.listen_address, "Address to listen on")
      ->capture_default_str()
      ->group(kListening);
  add_int(app, "--port", c.port, 0, 65535, "TCP port (0: any free port, printed at start)",
          kListening);
  app.add_option("--tls-cert", c.tls_cert, "Server certificate chain (PEM)")
      ->check(CLI::ExistingFile)
      ->group(kListening);
  app.add_option("--tls-key", c.tls_key, "Private key of --tls-cert (PEM)")
      ->check(CLI::ExistingFile)
      ->group(kListening);
  app.add_option("--tls-client-ca", c.tls_client_ca,
                 "Require client certificates signed by these CAs (PEM)")
      ->check(CLI::ExistingFile)
      ->group(kListening);
  app.add_option("--tls-min-version", c.tls_min_version,
                 "Oldest TLS version served: 1.2 (ECDHE with AES-GCM or ChaCha20 only) or 1.3")
      ->check(CLI::IsMember({"1.2", "1.3"}))
      ->group(kListening);
  app.add_flag("--bind-hostname-to-certificate", c.bind_hostname_to_certificate,
               "Take heartbeats, completions and uploads for a host only from a client certificate "
               "that names it (needs --tls-client-ca)")
      ->group(kListening);
  app.add_flag("--insecure-http", c.insecure_http, "Serve plain HTTP instead of TLS")
      ->group(kListening);

  app.add_option("--data-dir", c.data_dir, "Where the database and the profiles are kept")
      ->capture_default_str()
      ->group(kStorage);
  app.add_option("--database", c.database,
                 "Keep everything in this PostgreSQL database (postgresql://...) instead of "
                 "--data-dir; several servers may share one. Put the password in ~/.pgpass or "
                 "PGPASSWORD, not here")
      ->group(kStorage);
  add_int(app, "--database-connections", c.database_connections, 0, 1024,
          "Connections to PostgreSQL (0: one per worker thread)", kStorage);
  add_int(app, "--database-wait-ms", c.database_wait_ms, 1, 600000,
          "How long a request waits for a database connection before it is answered 503 "
          "with Retry-After",
          kStorage);
  add_int(app, "--retention-days", c.retention_days, 0, 100000,
          "Delete profiles and command history older than this many days (0: keep them)", kStorage);
  add_int(app, "--host-expiry-days", c.host_expiry_days, 0, 100000,
          "Delete hosts not heard from for this many days (0: keep them)", kStorage);
  add_int(app, "--max-storage-mb", c.max_storage_mb, 0, INT_MAX,
          "Refuse uploads with 507 once profiles take this many MiB (0: no cap)", kStorage);
  add_int(app, "--min-free-disk-mb", c.min_free_disk_mb, 0, INT_MAX,
          "Refuse uploads with 507 when less than this many MiB would be left free on --data-dir's "
          "file system, kept for heartbeats, requests and completions (0: uploads may fill it)",
          kStorage);
  app.add_option("--tokens-file", c.tokens_file,
                 "API tokens, one 'TOKEN ROLE' per line (ROLE: agent, operator or reader; a token "
                 "on several lines has each line's role, a token alone every role), accepted as "
                 "'Authorization: Bearer', GPROFILER-API-KEY and the password of HTTP Basic")
      ->check(CLI::ExistingFile)
      ->group(kStorage);

  add_int(app, "--max-body-bytes", c.max_body_bytes, 1024, INT_MAX,
          "Largest request body (uploads are gzip-compressed)", kLimits);
  add_int(app, "--max-header-bytes", c.max_header_bytes, 1024, 1 << 20,
          "Largest request header block", kLimits);
  add_int(app, "--read-timeout", c.read_timeout_s, 1, 3600,
          "Seconds a client may take to send one request", kLimits);
  add_int(app, "--idle-timeout", c.idle_timeout_s, 1, 3600,
          "Seconds a kept-alive connection may wait for its next request", kLimits);
  add_int(app, "--max-connections", c.max_connections, 1, 1 << 20,
          "Connections served at once; at the cap a new one closes the one idle the longest "
          "(with none idle, new ones wait in the backlog)",
          kLimits);
  add_int(app, "--max-connections-per-address", c.max_connections_per_address, 0, 1 << 20,
          "Connections from one IP address at once; more are closed at once (0: no cap; raise "
          "it behind a proxy or NAT)",
          kLimits);
  add_int(app, "--min-body-rate", c.min_body_rate, 1, INT_MAX,
          "Bytes a second a request body must arrive at, after --read-timeout (slower: 408)",
          kLimits);
  add_int(app, "--max-inflight-body-mb", c.max_inflight_body_mb, 1, 1 << 20,
          "MiB of request bodies received at once, all connections together; more get 503",
          kLimits);
  add_int(app, "--max-profile-mb", c.max_profile_mb, 1, 4096,
          "Largest uploaded profile once decompressed, in MiB (a gzip bomb stops here)", kLimits);
  add_int(app, "--active-window", c.active_window_s, 1, 86400,
          "Seconds since its last heartbeat during which a host counts as active: target "
          "selectors and the profiling status views see it, and its inventory",
          kLimits);
  add_int(app, "--long-poll-max", c.long_poll_max_s, 0, 600,
          "Seconds a heartbeat may be held until its host has a new command (0: answer at once)",
          kLimits);
  add_int(app, "--merge-max-stacks", c.merge_max_stacks, 1, 1 << 26,
          "Distinct stacks a merged flamegraph keeps (its memory); the samples of stacks beyond "
          "them are shown as one",
          kLimits);
  add_int(app, "--merge-max-mb", c.merge_max_mb, 0, 1 << 20,
          "No longer used: merged flamegraphs read rollups, whatever the number of profiles",
          kLimits);
  add_int(app, "--minute-rollup-days", c.minute_rollup_days, 0, 36500,
          "Days a minute's rollup of the profiles is kept (0: for ever); a view of older times "
          "reads whole hours",
          kStorage);
  add_int(app, "--hour-rollup-days", c.hour_rollup_days, 0, 36500,
          "Days an hour's rollup is kept (0: for ever); older times are read by whole days",
          kStorage);
  add_int(app, "--day-rollup-days", c.day_rollup_days, 0, 36500,
          "Days a day's rollup is kept (0: for ever); nothing older can be viewed", kStorage);
  add_int(app, "--rollup-max-stacks", c.rollup_max_stacks, 1, 1 << 26,
          "Distinct stacks one rollup bucket keeps (its memory and disk); the samples of stacks "
          "beyond them are counted as one",
          kLimits);
  add_int(app, "--svg-max-frames", c.svg_max_frames, 100, 10'000'000,
          "Frames a flamegraph draws at most (and 16 MB): past them the narrowest are left out, "
          "shown as one box per frame that lost some",
          kLimits);
  add_int(app, "--svg-cache-mb", c.svg_cache_mb, 0, 1 << 16,
          "Memory for per-profile flamegraphs kept as drawn, least recently used dropped first "
          "(0: none)",
          kLimits);
  add_int(app, "--threads", c.threads, 0, 256,
          "Worker threads (0: one per core; with --database, four per core and at least 8)",
          kLimits);
}

}  // namespace

Result<void> validate(const ServerConfig& c) {
  auto invalid = [](std::string message) { return Error::invalid_argument(std::move(message)); };
  if (!c.insecure_http && (c.tls_cert.empty() || c.tls_key.empty())) {
    return invalid(
        "TLS needs --tls-cert and --tls-key (scripts/gen-certs makes a test pair); plain HTTP "
        "only with --insecure-http");
  }
  if (c.bind_hostname_to_certificate && c.tls_client_ca.empty()) {
    return invalid("--bind-hostname-to-certificate needs --tls-client-ca (mutual TLS)");
  }
  if (c.insecure_http && !c.tls_client_ca.empty()) {
    return invalid("--tls-client-ca needs TLS: drop --insecure-http");
  }
  if (!c.database.empty() && !c.database.starts_with("postgresql://") &&
      !c.database.starts_with("postgres://") && c.database.find('=') == std::string::npos) {
    return invalid(
        "--database takes a PostgreSQL URL (postgresql://user@host/dbname) or libpq's "
        "'key=value' settings");
  }
  if (c.long_poll_max_s >= c.idle_timeout_s) {
    return invalid("--long-poll-max must be shorter than --idle-timeout");
  }
  if (c.tokens_file.empty()) {
    return invalid("--tokens-file is required: every endpoint but the health checks needs a token");
  }
  // 0 keeps for ever: the longest.
  auto kept_longer = [](int finer, int coarser) {
    return coarser == 0 || (finer != 0 && finer <= coarser);
  };
  if (!kept_longer(c.minute_rollup_days, c.hour_rollup_days) ||
      !kept_longer(c.hour_rollup_days, c.day_rollup_days)) {
    return invalid(
        "rollups are kept longer the coarser they are: --minute-rollup-days <= "
        "--hour-rollup-days <= --day-rollup-days (0: for ever)");
  }
  return ok();
}

std::variant<ServerConfig, ExitRequest> parse_server_args(int argc, const char* const* argv) {
  ServerConfig config;
  CLI::App app("Dormant's control server: profiling requests, heartbeats, commands, profiles.",
               "dormant-server");
  app.get_formatter()->column_width(36);
  define_options(app, config);
  if (auto exit = parse_command_line(app, argc, argv)) return *exit;
  if (config.log_level == "warning") config.log_level = "warn";
  if (auto valid = validate(config); !valid) return usage_error(app, valid.error().message());
  return config;
}

}  // namespace dormant::config
