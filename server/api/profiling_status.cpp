#include "server/api/profiling_status.h"

#include <algorithm>
#include <cctype>

#include "common/text.h"
#include "server/api/wire_mapping.h"
#include "wire/command_config.h"

namespace dormant::server::api {
namespace {

using storage::ActiveHost;
using storage::Command;
using storage::HostContainer;
using storage::HostProcess;
using storage::TargetScope;
using storage::TimePoint;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Any of `wanted` is part of `value`, in any case; no `wanted`: yes.
bool contains_any(std::optional<std::string_view> value, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return true;
  if (!value) return false;
  std::string text = lower(*value);
  return std::any_of(wanted.begin(), wanted.end(), [&](const std::string& part) {
    return text.find(lower(part)) != std::string::npos;
  });
}

bool equals_any(std::string_view value, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return true;
  std::string text = lower(value);
  return std::any_of(wanted.begin(), wanted.end(),
                     [&](const std::string& one) { return lower(one) == text; });
}

std::optional<std::string_view> view(const std::optional<std::string>& text) {
  return text ? std::optional<std::string_view>(*text) : std::nullopt;
}

bool service_matches(const std::string& service, const StatusFilters& filters) {
  if (filters.services.empty()) return true;
  if (!filters.exact_match) return contains_any(service, filters.services);
  return std::find(filters.services.begin(), filters.services.end(), service) !=
         filters.services.end();
}

// A start the host is running: not failed, and not a one-shot whose duration has run out since
// the agent reported it started.
bool profiling_now(const Command& command, TimePoint now) {
  if (command.type != storage::CommandType::kStart) return false;
  if (command.status == storage::CommandStatus::kFailed) return false;
  if (command.status != storage::CommandStatus::kCompleted) return true;
  const nlohmann::json& config = command.combined_config;
  if (config.value("continuous", false)) return true;
  auto duration = std::chrono::seconds(config.value("duration", int64_t{0}));
  return command.completed_at && *command.completed_at + duration > now;
}

}  // namespace

std::string_view profiling_status_of(const ActiveHost& host, const HostProcess* process,
                                     const HostContainer* container, TimePoint now) {
  if (!host.command) return "stopped";
  const Command& command = *host.command;
  if (command.type != storage::CommandType::kStart) {
    return storage::to_string(command.status);
  }
  if (!profiling_now(command, now)) {
    return command.status == storage::CommandStatus::kFailed ? "failed" : "stopped";
  }
  auto pids = command.combined_config.find("pids");
  if (pids == command.combined_config.end()) return "active";
  auto listed = [&](int64_t pid) {
    return std::find(pids->begin(), pids->end(), nlohmann::json(pid)) != pids->end();
  };
  if (process) return listed(process->pid) ? "active" : "stopped";
  if (container) {
    for (const HostProcess& each : container->processes) {
      if (listed(each.pid)) return "active";
    }
  }
  return "stopped";
}

std::string_view command_type_of(const ActiveHost& host) {
  return host.command ? storage::to_string(host.command->type) : "N/A";
}

// "Default" without profiler_configs; else the profilers they leave on, by Studio's names.
std::string profiler_summary(const std::optional<Command>& command) {
  if (!command) return "Default";
  auto configs = command->combined_config.find("profiler_configs");
  if (configs == command->combined_config.end() || !configs->is_object() || configs->empty()) {
    return "Default";
  }
  static const std::vector<std::pair<std::string, std::string>> kNames = {
      {"perf", "Perf"},         {"async_profiler", "Java"},
      {"pyperf", "Pyperf"},     {"pyspy", "Pyspy"},
      {"rbspy", "Rbspy"},       {"phpspy", "PHPspy"},
      {"dotnet_trace", ".NET"}, {"nodejs_perf", "NodeJS"},
      {"ebpf", "eBPF"},         {"gpu", "GPU"}};
  std::vector<std::string> on;
  for (const auto& [key, name] : kNames) {
    auto config = configs->find(key);
    if (config == configs->end()) continue;
    if (!wire::turns_profiler_off(*config)) on.push_back(name);
  }
  return on.empty() ? "Disabled" : join(on, ", ");
}

Result<StatusFilters> parse_status_filters(const Query& query) {
  StatusFilters filters;
  const std::vector<std::pair<std::string_view, std::vector<std::string>*>> lists = {
      {"service_name", &filters.services},
      {"hostname", &filters.hostnames},
      {"ip_address", &filters.ip_addresses},
      {"namespace", &filters.namespaces},
      {"pod_name", &filters.pod_names},
      {"container_name", &filters.container_names},
      {"workload_name", &filters.workload_names},
      {"process_name", &filters.process_names},
      {"profiling_status", &filters.profiling_statuses},
      {"command_type", &filters.command_types}};
  for (const auto& [name, value] : query) {
    if (name == "exact_match") {
      std::string text = lower(value);
      if (text != "true" && text != "false" && text != "1" && text != "0") {
        return Error::problem(ErrorKind::kInvalidArgument, "exact_match", "must be true or false");
      }
      filters.exact_match = text == "true" || text == "1";
      continue;
    }
    if (name == "pids") {
      for (std::string_view each : split(value, ',')) {
        each = trim(each);  // Studio reads them with int(), which takes spaces around
        auto pid = parse_integer(each);
        if (!pid || *pid <= 0) {
          return Error::problem(ErrorKind::kInvalidArgument, "pids",
                                "'" + std::string(each) + "' is not a pid");
        }
        filters.pids.push_back(*pid);
      }
      continue;
    }
    for (const auto& [list_name, list] : lists) {
      if (name == list_name && !value.empty()) list->push_back(value);
    }
  }
  return filters;
}

bool StatusFilters::admits_host(const ActiveHost& host) const {
  return service_matches(host.service_name, *this) && contains_any(host.hostname, hostnames) &&
         contains_any(host.ip_address, ip_addresses) &&
         equals_any(command_type_of(host), command_types);
}

bool StatusFilters::admits_container(const HostContainer* container) const {
  if (!container) {
    return namespaces.empty() && pod_names.empty() && container_names.empty() &&
           workload_names.empty();
  }
  return contains_any(view(container->pod_namespace), namespaces) &&
         contains_any(view(container->pod_name), pod_names) &&
         contains_any(container->container_name, container_names) &&
         contains_any(view(container->workload_name), workload_names);
}

bool StatusFilters::admits_process(const HostProcess* process) const {
  if (!process) return !on_processes();
  return contains_any(process->process_name, process_names) &&
         (pids.empty() || std::find(pids.begin(), pids.end(), process->pid) != pids.end());
}

bool StatusFilters::admits_status(std::string_view status) const {
  return equals_any(status, profiling_statuses);
}

Result<TargetScope> parse_status_scope(std::string_view text) {
  std::optional<TargetScope> scope = storage::parse_target_scope(text);
  if (scope && *scope != TargetScope::kWorkload) return *scope;
  return Error::problem(ErrorKind::kInvalidArgument, "scope",
                        "must be one of service, namespace, host, pod, container, process");
}

nlohmann::json host_status(const storage::WorkloadSnapshot& snapshot,
                           const StatusFilters& filters) {
  int64_t known = 0;
  for (const auto& [service, count] : snapshot.hosts_by_service) {
    if (service_matches(service, filters)) known += count;
  }
  nlohmann::json hosts = nlohmann::json::array();
  int64_t id = 0;
  for (const ActiveHost& host : snapshot.hosts) {
    ++id;
    std::string_view status = host.command ? storage::to_string(host.command->status) : "stopped";
    std::string_view type = command_type_of(host);
    nlohmann::json pids = nlohmann::json::array();
    if (host.command) {
      pids = host.command->combined_config.value("pids", nlohmann::json::array());
    }
    bool any_pid = filters.pids.empty() || std::any_of(pids.begin(), pids.end(), [&](auto& pid) {
                     return std::find(filters.pids.begin(), filters.pids.end(),
                                      pid.template get<int64_t>()) != filters.pids.end();
                   });
    if (!filters.admits_host(host) || !filters.admits_status(status) || !any_pid) continue;
    hosts.push_back({{"id", id},
                     {"service_name", host.service_name},
                     {"hostname", host.hostname},
                     {"ip_address", host.ip_address},
                     {"pids", pids},
                     {"command_type", type},
                     {"profiling_status", status},
                     {"heartbeat_timestamp", iso_time(host.last_heartbeat_at)}});
  }
  size_t active = hosts.size();
  return {{"hosts", std::move(hosts)}, {"active_count", active}, {"total_count", known}};
}

}  // namespace dormant::server::api
