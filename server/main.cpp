// dormant-server: the control plane. Reads its configuration, opens the store, serves the API
// until SIGTERM or SIGINT, then lets the requests in flight finish and exits.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <variant>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <boost/asio/ip/address.hpp>

#include "common/logging.h"
#include "common/termination_signals.h"
#include "config/server_config.h"
#include "server/api/api.h"
#include "server/api/rollup_upkeep.h"
#include "server/control/retention.h"
#include "server/http/http_server.h"
#include "server/storage/store.h"

namespace {

constexpr std::chrono::seconds kDrain{10};
constexpr std::chrono::minutes kRetentionPeriod{10};

// Each connection is a descriptor: allow as many as the hard limit lets --max-connections use.
void raise_open_file_limit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
  files.rlim_cur = files.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &files) != 0) {
    spdlog::warn("could not raise the open file limit: {}", std::strerror(errno));
  }
}

// --max-connections within the open file limit, less what the server keeps open besides (the
// database, its journal, profile files, the listening socket, the log): past it, accepts fail.
size_t connections_the_file_limit_allows(size_t wanted) {
  constexpr rlim_t kReserve = 64;
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) return wanted;
  const size_t allowed =
      files.rlim_cur > 2 * kReserve ? files.rlim_cur - kReserve : files.rlim_cur / 2;
  if (wanted <= allowed) return wanted;
  spdlog::warn("--max-connections {} is more than the open file limit ({}) allows: {} it is",
               wanted, files.rlim_cur, allowed);
  return allowed;
}

// What an operator would want to know before anyone else finds it.
void warn_about_exposure(const dormant::config::ServerConfig& config) {
  struct stat tokens {};
  if (::stat(config.tokens_file.c_str(), &tokens) == 0 && (tokens.st_mode & 0044) != 0) {
    spdlog::warn(
        "{} may be read by its group or by others: it holds every token of the fleet "
        "(chmod 600 it)",
        config.tokens_file);
  }
  boost::system::error_code error;
  auto address = boost::asio::ip::make_address(config.listen_address, error);
  if (config.insecure_http && (error || !address.is_loopback())) {
    spdlog::warn(
        "--insecure-http on {}, which is not a loopback address: tokens and profiles "
        "cross the network in the clear",
        config.listen_address);
  }
}

int serve(const dormant::config::ServerConfig& config) {
  using namespace dormant::server;
  // The database, its journal and the profile files are the server's alone, whatever the
  // data directory's mode.
  ::umask(0077);
  raise_open_file_limit();
  warn_about_exposure(config);
  size_t untyped = 0;
  auto tokens = api::Tokens::load(config.tokens_file, &untyped);
  if (!tokens) {
    spdlog::critical("{}", tokens.error().message());
    return 1;
  }
  if (untyped > 0) {
    spdlog::warn(
        "{} of the tokens in {} have no role and may do everything (agent, operator, reader): "
        "give each its role, one 'TOKEN ROLE' per line",
        untyped, config.tokens_file);
  }
  // Requests wait on the database with their thread: on PostgreSQL, whose commits wait for a
  // flush, more threads (and connections) keep the cores busy meanwhile.
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const int threads = config.threads > 0        ? config.threads
                      : config.database.empty() ? cores
                                                : std::max(8, 4 * cores);
  storage::StoreOptions store_options;
  store_options.connections =
      static_cast<size_t>(config.database_connections > 0 ? config.database_connections : threads);
  store_options.connection_wait = std::chrono::milliseconds(config.database_wait_ms);
  store_options.max_profile_bytes = int64_t{config.max_storage_mb} << 20;
  store_options.min_free_bytes = uint64_t(config.min_free_disk_mb) << 20;
  store_options.rollup_retention = {std::chrono::hours(24 * config.minute_rollup_days),
                                    std::chrono::hours(24 * config.hour_rollup_days),
                                    std::chrono::hours(24 * config.day_rollup_days)};
  store_options.rollup_max_stacks = static_cast<size_t>(config.rollup_max_stacks);
  if (config.merge_max_mb != 0) {
    spdlog::warn("--merge-max-mb is no longer used: merged flamegraphs read rollups");
  }
  auto store = config.database.empty()
                   ? storage::Store::open(config.data_dir, store_options)
                   : storage::Store::open_postgres(config.database, store_options);
  if (!store) {
    spdlog::critical("cannot open the store: {}", store.error().message());
    return 1;
  }
  std::optional<control::Retention> retention;
  bool rollups_expire =
      config.minute_rollup_days > 0 || config.hour_rollup_days > 0 || config.day_rollup_days > 0;
  if (config.retention_days > 0 || config.host_expiry_days > 0 || rollups_expire) {
    control::RetentionPolicy policy{std::chrono::hours(24 * config.retention_days),
                                    std::chrono::hours(24 * config.host_expiry_days),
                                    rollups_expire};
    retention.emplace(**store, policy, kRetentionPeriod, store_options.clock);
  }
  api::RollupUpkeep rollup_upkeep(**store);
  http::HttpServerOptions options;
  if (!config.insecure_http) {
    auto tls = http::make_tls_context(
        config.tls_cert, config.tls_key, config.tls_client_ca,
        config.tls_min_version == "1.3" ? http::TlsVersion::k1_3 : http::TlsVersion::k1_2);
    if (!tls) {
      spdlog::critical("TLS: {}", tls.error().message());
      return 1;
    }
    options.tls = *tls;
  }
  options.address = config.listen_address;
  options.port = static_cast<uint16_t>(config.port);
  options.max_body_bytes = static_cast<size_t>(config.max_body_bytes);
  options.max_header_bytes = static_cast<size_t>(config.max_header_bytes);
  options.read_timeout = std::chrono::seconds(config.read_timeout_s);
  options.idle_timeout = std::chrono::seconds(config.idle_timeout_s);
  options.max_connections =
      connections_the_file_limit_allows(static_cast<size_t>(config.max_connections));
  options.max_connections_per_address = static_cast<size_t>(config.max_connections_per_address);
  options.min_body_bytes_per_second = static_cast<size_t>(config.min_body_rate);
  options.max_inflight_body_bytes = static_cast<size_t>(config.max_inflight_body_mb) << 20;
  options.threads = threads;

  api::ServerMetrics metrics;
  api::ApiOptions api_options;
  api_options.long_poll_max = std::chrono::seconds(config.long_poll_max_s);
  api_options.long_poll_limits.max_held = std::max<size_t>(1, options.max_connections / 2);
  api_options.active_window = std::chrono::seconds(config.active_window_s);
  api_options.bind_hostname_to_certificate = config.bind_hostname_to_certificate;
  api_options.merge_max_stacks = static_cast<size_t>(config.merge_max_stacks);
  api_options.max_profile_bytes = static_cast<size_t>(config.max_profile_mb) << 20;
  api_options.concurrent_merges = std::max(1, threads / 2);
  api_options.svg_max_frames = static_cast<size_t>(config.svg_max_frames);
  api_options.svg_cache_bytes = static_cast<size_t>(config.svg_cache_mb) << 20;
  // Flamegraphs are drawn off the threads that serve connections, a few at once: each may take
  // a second and 256 MB.
  api_options.render_threads = std::clamp(threads / 2, 1, 8);
  api_options.render_queue = 4 * api_options.render_threads;
  // What uses the database waits for it on threads of its own: those that serve connections
  // stay free for the rest (the health check above all). Bodies waiting count in the in-flight
  // budget until they are answered, so the queue's memory has that bound too.
  api_options.store_threads = threads;
  api_options.store_queue = 1024;
  api_options.store_wait = std::chrono::milliseconds(config.database_wait_ms);
  api::Api handler(**store, std::move(*tokens), metrics, api_options);
  (*store)->on_commands(
      [&handler](const std::string& host, const std::string& service) {
        handler.long_polls().wake(host, service);
      },
      [&handler] { handler.long_polls().wake_all(); });
  options.admit = [&handler](const http::RequestHeader& header, const http::Client& client) {
    return handler.admit(header, client);
  };
  auto server = http::HttpServer::start(
      options, [&](http::Request request, const http::Client& client,
                   std::shared_ptr<http::Responder> responder, std::any note) {
        handler.handle(std::move(request), client, std::move(responder), note);
      });
  if (!server) {
    spdlog::critical("cannot listen on {}:{}: {}", config.listen_address, config.port,
                     server.error().message());
    return 1;
  }
  // On stdout, for scripts and tests that start the server on port 0.
  std::printf("dormant-server listening on %s://%s:%u\n", config.insecure_http ? "http" : "https",
              config.listen_address.c_str(), static_cast<unsigned>((*server)->port()));
  std::fflush(stdout);
  spdlog::info("serving {} on port {} with {} threads; data in {}",
               config.insecure_http ? "plain HTTP" : "HTTPS", (*server)->port(), options.threads,
               (*store)->location());

  int received = dormant::wait_for_termination();
  spdlog::info("{}: finishing the requests in flight, then exiting",
               received == SIGINT ? "SIGINT" : "SIGTERM");
  (*store)->on_commands({}, {});
  handler.long_polls().wake_all();  // held heartbeats answer now, before the drain
  (*server)->stop(kDrain);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dormant::block_termination_signals();

  auto parsed = dormant::config::parse_server_args(argc, argv);
  if (auto* exit = std::get_if<dormant::config::ExitRequest>(&parsed)) {
    std::fputs(exit->text.c_str(), exit->exit_code == 0 ? stdout : stderr);
    return exit->exit_code;
  }
  const auto& config = std::get<dormant::config::ServerConfig>(parsed);
  dormant::logging::Options log_options;
  log_options.level = dormant::logging::parse_level(config.log_level).value_or(spdlog::level::info);
  dormant::logging::setup(log_options);
  return serve(config);
}
