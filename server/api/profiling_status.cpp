#include "server/api/profiling_status.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "common/text.h"
#include "server/api/wire_mapping.h"

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
bool contains_any(const std::optional<std::string>& value, const std::vector<std::string>& wanted) {
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

// "active" for a process (or, without one, a host or container as a whole) that the host's
// command profiles; "stopped" without a command or outside it; else the command's status.
std::string status_of(const ActiveHost& host, const HostProcess* process,
                      const HostContainer* container, TimePoint now) {
  if (!host.command) return "stopped";
  const Command& command = *host.command;
  if (command.type != storage::CommandType::kStart) {
    return std::string(storage::to_string(command.status));
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

std::string command_type_of(const ActiveHost& host) {
  return host.command ? std::string(storage::to_string(host.command->type)) : "N/A";
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
    bool off = (config->is_string() && config->get<std::string>() == "disabled") ||
               (config->is_object() && (config->value("enabled", true) == false ||
                                        config->value("mode", "") == "disabled"));
    if (!off) on.push_back(name);
  }
  return on.empty() ? "Disabled" : join(on, ", ");
}

// One host, container or process as the views see it.
struct Flat {
  const ActiveHost* host = nullptr;
  const HostContainer* container = nullptr;  // none: a host without inventory
  const HostProcess* process = nullptr;      // none: the container's processes were not read
  int64_t processes = 0;                     // what it adds to a process count
  std::string status;
  std::string command_type;
};

std::vector<Flat> flatten(const storage::WorkloadSnapshot& snapshot, const StatusFilters& filters,
                          TimePoint now) {
  std::vector<Flat> rows;
  std::vector<std::vector<const storage::ActiveContainer*>> by_host(snapshot.hosts.size());
  for (const auto& container : snapshot.containers) by_host[container.host].push_back(&container);
  for (size_t i = 0; i < snapshot.hosts.size(); ++i) {
    const ActiveHost& host = snapshot.hosts[i];
    std::string type = command_type_of(host);
    if (by_host[i].empty()) {
      rows.push_back({&host, nullptr, nullptr, 0, status_of(host, nullptr, nullptr, now), type});
      continue;
    }
    for (const storage::ActiveContainer* entry : by_host[i]) {
      const HostContainer& c = entry->container;
      if (c.processes.empty()) {
        rows.push_back(
            {&host, &c, nullptr, entry->process_count, status_of(host, nullptr, &c, now), type});
        continue;
      }
      for (const HostProcess& p : c.processes) {
        rows.push_back({&host, &c, &p, 1, status_of(host, &p, &c, now), type});
      }
    }
  }
  auto text = [](const HostContainer* c, std::optional<std::string> HostContainer::*member) {
    return c ? c->*member : std::nullopt;
  };
  std::erase_if(rows, [&](const Flat& row) {
    const ActiveHost& host = *row.host;
    bool service = service_matches(host.service_name, filters);
    bool keep =
        service && contains_any(host.hostname, filters.hostnames) &&
        contains_any(host.ip_address, filters.ip_addresses) &&
        contains_any(text(row.container, &HostContainer::pod_namespace), filters.namespaces) &&
        contains_any(text(row.container, &HostContainer::pod_name), filters.pod_names) &&
        contains_any(row.container ? std::optional(row.container->container_name) : std::nullopt,
                     filters.container_names) &&
        contains_any(text(row.container, &HostContainer::workload_name), filters.workload_names) &&
        contains_any(row.process ? std::optional(row.process->process_name) : std::nullopt,
                     filters.process_names) &&
        equals_any(row.status, filters.profiling_statuses) &&
        equals_any(row.command_type, filters.command_types) &&
        (filters.pids.empty() ||
         (row.process && std::find(filters.pids.begin(), filters.pids.end(), row.process->pid) !=
                             filters.pids.end()));
    return !keep;
  });
  return rows;
}

std::string part(const std::optional<std::string>& value) { return value.value_or(""); }

// The key of a row's group at `scope`, its members joined with '|' (Studio's row id); nullopt
// when the row has no such group (a host without inventory has no pod).
std::optional<std::string> group_key(const Flat& row, TargetScope scope) {
  const std::string& service = row.host->service_name;
  const HostContainer* c = row.container;
  switch (scope) {
    case TargetScope::kService:
      return service;
    case TargetScope::kHost:
      return service + "|" + row.host->hostname;
    case TargetScope::kNamespace:
      if (!c || !c->pod_namespace) return std::nullopt;
      return service + "|" + *c->pod_namespace;
    case TargetScope::kPod:
      if (!c || !c->pod_name) return std::nullopt;
      return service + "|" + part(c->pod_namespace) + "|" + *c->pod_name;
    case TargetScope::kContainer:
      if (!c) return std::nullopt;
      return service + "|" + row.host->hostname + "|" + part(c->pod_namespace) + "|" +
             part(c->pod_name) + "|" + c->container_name;
    case TargetScope::kProcess:
      if (!row.process) return std::nullopt;
      return service + "|" + row.host->hostname + "|" + std::to_string(row.process->pid);
    case TargetScope::kWorkload:
      break;
  }
  return std::nullopt;
}

struct Group {
  const Flat* latest = nullptr;  // by heartbeat: its descriptive members are the row's
  std::set<std::string> hosts, namespaces, pods, containers;
  std::set<int64_t> pids;
  int64_t processes = 0;
  bool active = false;
};

nlohmann::json optional_text(const std::optional<std::string>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json row_json(const std::string& id, TargetScope scope, const Group& group) {
  const Flat& row = *group.latest;
  const ActiveHost& host = *row.host;
  const HostContainer* c = row.container;
  bool per_host = scope == TargetScope::kHost || scope == TargetScope::kContainer ||
                  scope == TargetScope::kProcess;
  bool in_pod = scope == TargetScope::kPod || scope == TargetScope::kContainer ||
                scope == TargetScope::kProcess;
  auto member = [&](std::optional<std::string> HostContainer::*field) {
    return c ? optional_text(c->*field) : nlohmann::json(nullptr);
  };
  const std::optional<Command>& command = host.command;
  nlohmann::json frequency = nullptr;
  std::string mode = "Ad Hoc";
  if (command && command->type == storage::CommandType::kStart) {
    frequency = command->combined_config.value("frequency", nlohmann::json(nullptr));
    if (command->combined_config.value("continuous", false)) mode = "Continuous";
  }
  return {
      {"id", id},
      {"scope", storage::to_string(scope)},
      {"serviceName", host.service_name},
      {"namespace", scope == TargetScope::kService || scope == TargetScope::kHost
                        ? nlohmann::json(nullptr)
                        : member(&HostContainer::pod_namespace)},
      {"hostname", per_host ? nlohmann::json(host.hostname) : nlohmann::json(nullptr)},
      {"ipAddress", per_host ? nlohmann::json(host.ip_address) : nlohmann::json(nullptr)},
      {"podName", in_pod ? member(&HostContainer::pod_name) : nlohmann::json(nullptr)},
      {"containerName", scope == TargetScope::kContainer || scope == TargetScope::kProcess
                            ? (c ? nlohmann::json(c->container_name) : nlohmann::json(nullptr))
                            : nlohmann::json(nullptr)},
      {"workloadName", in_pod ? member(&HostContainer::workload_name) : nlohmann::json(nullptr)},
      {"workloadKind", in_pod ? member(&HostContainer::workload_kind) : nlohmann::json(nullptr)},
      {"processName", scope == TargetScope::kProcess && row.process
                          ? nlohmann::json(row.process->process_name)
                          : nlohmann::json(nullptr)},
      {"pid", scope == TargetScope::kProcess && row.process ? nlohmann::json(row.process->pid)
                                                            : nlohmann::json(nullptr)},
      {"pids", group.pids},
      {"activeHosts", group.hosts.size()},
      {"hostCount", group.hosts.size()},
      {"namespaceCount", group.namespaces.size()},
      {"podCount", group.pods.size()},
      {"containerCount", group.containers.size()},
      {"processCount", group.processes},
      {"commandType", row.command_type},
      {"profilingStatus", group.active ? "active" : row.status},
      {"profilingMode", mode},
      {"frequency", frequency},
      {"profilerSummary", profiler_summary(command)},
      {"heartbeatTimestamp", iso_time(host.last_heartbeat_at)},
      {"agentVersion", optional_text(host.agent_version)},
      {"runMode", optional_text(host.run_mode)},
  };
}

void add_to(Group& group, const Flat& row) {
  const ActiveHost& host = *row.host;
  if (!group.latest || host.last_heartbeat_at > group.latest->host->last_heartbeat_at) {
    group.latest = &row;
  }
  group.hosts.insert(host.service_name + "|" + host.hostname);
  if (const HostContainer* c = row.container) {
    if (c->pod_namespace) group.namespaces.insert(*c->pod_namespace);
    if (c->pod_name) group.pods.insert(part(c->pod_namespace) + "|" + *c->pod_name);
    group.containers.insert(host.hostname + "|" + part(c->pod_namespace) + "|" + part(c->pod_name) +
                            "|" + c->container_name);
  }
  if (row.process) group.pids.insert(row.process->pid);
  group.processes += row.processes;
  group.active = group.active || row.status == "active";
}

}  // namespace

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

Result<TargetScope> parse_status_scope(std::string_view text) {
  std::optional<TargetScope> scope = storage::parse_target_scope(text);
  if (scope && *scope != TargetScope::kWorkload) return *scope;
  return Error::problem(ErrorKind::kInvalidArgument, "scope",
                        "must be one of service, namespace, host, pod, container, process");
}

bool scope_needs_processes(TargetScope scope) {
  return scope == TargetScope::kPod || scope == TargetScope::kContainer ||
         scope == TargetScope::kProcess;
}

nlohmann::json workload_status(const storage::WorkloadSnapshot& snapshot, TargetScope scope,
                               const StatusFilters& filters, const Page& page, TimePoint now) {
  std::vector<Flat> rows = flatten(snapshot, filters, now);
  std::map<std::string, Group> groups;
  std::set<std::string> services, namespaces, hosts, pods, containers, hostnames;
  int64_t processes = 0;
  for (const Flat& row : rows) {
    if (auto key = group_key(row, scope)) add_to(groups[*key], row);
    services.insert(row.host->service_name);
    hostnames.insert(row.host->hostname);
    for (auto [set, tab] :
         {std::pair{&namespaces, TargetScope::kNamespace}, std::pair{&hosts, TargetScope::kHost},
          std::pair{&pods, TargetScope::kPod}, std::pair{&containers, TargetScope::kContainer}}) {
      if (auto key = group_key(row, tab)) set->insert(*key);
    }
    processes += row.processes;
  }
  nlohmann::json list = nlohmann::json::array();
  int64_t first = page.number * page.size;
  int64_t index = 0;
  for (const auto& [id, group] : groups) {
    if (index >= first && index < first + page.size) list.push_back(row_json(id, scope, group));
    ++index;
  }
  return {{"scope", storage::to_string(scope)},
          {"rows", std::move(list)},
          {"tabCounts",
           {{"service", services.size()},
            {"namespace", namespaces.size()},
            {"host", hosts.size()},
            {"pod", pods.size()},
            {"container", containers.size()},
            {"process", processes}}},
          {"activeHosts", hostnames.size()},
          {"totalCount", groups.size()},
          {"page", page.number},
          {"pageSize", page.size}};
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
    std::string status =
        host.command ? std::string(storage::to_string(host.command->status)) : "stopped";
    std::string type = command_type_of(host);
    nlohmann::json pids = nlohmann::json::array();
    if (host.command) {
      pids = host.command->combined_config.value("pids", nlohmann::json::array());
    }
    bool service = service_matches(host.service_name, filters);
    bool any_pid = filters.pids.empty() || std::any_of(pids.begin(), pids.end(), [&](auto& pid) {
                     return std::find(filters.pids.begin(), filters.pids.end(),
                                      pid.template get<int64_t>()) != filters.pids.end();
                   });
    if (!service || !contains_any(host.hostname, filters.hostnames) ||
        !contains_any(host.ip_address, filters.ip_addresses) ||
        !equals_any(status, filters.profiling_statuses) ||
        !equals_any(type, filters.command_types) || !any_pid) {
      continue;
    }
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
