#include "agent/config_reload.h"

#include "agent/run_arguments.h"
#include "common/logging.h"
#include "common/text.h"
#include "heartbeat/https_client.h"

namespace dormant::agent {
namespace {

// The settings that differ between the two configurations, other than the reloadable ones.
std::vector<std::string> changed_for_restart(const config::AgentConfig& running,
                                             const config::AgentConfig& next) {
  nlohmann::json before = run_arguments(running);
  nlohmann::json after = run_arguments(next);
  before["heartbeat_interval"] = running.heartbeat_interval_s;
  after["heartbeat_interval"] = next.heartbeat_interval_s;
  before["state_dir"] = running.state_dir;
  after["state_dir"] = next.state_dir;
  before["spool_max_mb"] = running.spool_max_mb;
  after["spool_max_mb"] = next.spool_max_mb;
  before["spool_max_files"] = running.spool_max_files;
  after["spool_max_files"] = next.spool_max_files;
  before["inventory_interval"] = running.inventory_interval_s;
  after["inventory_interval"] = next.inventory_interval_s;
  before["workload_labels"] = {running.workload_name_labels, running.workload_kind_labels};
  after["workload_labels"] = {next.workload_name_labels, next.workload_kind_labels};
  std::vector<std::string> changed;
  for (const auto& [name, value] : after.items()) {
    if (before.value(name, nlohmann::json()) != value) changed.push_back(name);
  }
  return changed;
}

}  // namespace

Result<ReloadedSettings> reloaded_settings(const config::AgentConfig& running,
                                           const ConfigReading& reading) {
  if (const auto* refused = std::get_if<config::ExitRequest>(&reading)) {
    return Error::invalid_argument(std::string(trim(refused->text)));
  }
  const auto& next = std::get<config::AgentConfig>(reading);
  ReloadedSettings settings;
  auto level = logging::parse_level(next.log_level);
  if (!level) return std::move(level).take_error();
  settings.log_level = *level;
  if (next.token.empty()) return Error::invalid_argument("no token: --token-file or --token");
  settings.token = next.token;
  auto tls = heartbeat::make_client_tls(
      {!next.no_verify, next.tls_ca_bundle, next.tls_client_cert, next.tls_client_key});
  if (!tls) return std::move(tls).take_error();
  settings.tls = std::move(*tls);
  settings.need_restart = changed_for_restart(running, next);
  return settings;
}

}  // namespace dormant::agent
