#include "server/api/studio_services.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/text.h"
#include "server/api/studio_metrics.h"
#include "server/api/studio_queries.h"
#include "server/storage/records.h"

namespace dormant::server::api {
namespace {

using nlohmann::json;
using storage::ServiceHost;

constexpr int64_t kDayMs = 24 * 3600 * 1000;

struct ServiceFacts {
  std::vector<const ServiceHost*> hosts;
  std::optional<storage::ServiceDataSpan> data;
};

std::map<std::string, ServiceFacts> by_service(const ServiceHosts& hosts,
                                               const ServiceSpans& spans) {
  std::map<std::string, ServiceFacts> services;
  for (const ServiceHost& host : hosts) services[host.service].hosts.push_back(&host);
  for (const storage::ServiceDataSpan& span : spans) services[span.service].data = span;
  return services;
}

// Kubernetes where any host runs pods, containers where any runs containers, else instances.
std::string env_type(const ServiceFacts& facts) {
  bool containers = false;
  for (const ServiceHost* host : facts.hosts) {
    if (host->has_pods) return "k8s";
    containers = containers || host->has_containers;
  }
  return containers ? "containers" : "instances";
}

// A host's heard-from time within [from_ms, to_ms): its first to its last heartbeat.
double alive_ms(const ServiceHost& host, int64_t from_ms, int64_t to_ms) {
  int64_t start = std::max(host.first_seen_ms, from_ms);
  int64_t end = std::min(host.last_seen_ms, to_ms);
  return static_cast<double>(std::max<int64_t>(0, end - start));
}

std::vector<int64_t> version_numbers(const std::string& version) {
  std::vector<int64_t> numbers;
  for (std::string_view part : split(version, '.')) {
    numbers.push_back(parse_integer(part).value_or(0));
  }
  return numbers;
}

}  // namespace

bool version_before(const std::string& a, const std::string& b) {
  return version_numbers(a) < version_numbers(b);
}

json service_list(const ServiceHosts& hosts, const ServiceSpans& spans) {
  json out = json::array();
  int64_t id = 0;
  for (const auto& [name, facts] : by_service(hosts, spans)) {
    int64_t created = facts.data ? facts.data->first_ms : INT64_MAX;
    for (const ServiceHost* host : facts.hosts) created = std::min(created, host->first_seen_ms);
    out.push_back({{"name", name},
                   {"hasData", facts.data.has_value()},
                   {"envType", env_type(facts)},
                   {"createDate", studio_time_ms(created)},
                   {"serviceId", ++id}});
  }
  return out;
}

json fleet_overview(const ServiceHosts& hosts, const ServiceSpans& spans, int64_t now_ms) {
  std::set<std::string> services;
  for (const storage::ServiceDataSpan& span : spans) {
    if (span.last_ms >= now_ms - kDayMs) services.insert(span.service);
  }
  double alive = 0;
  double cores = 0;
  for (const ServiceHost& host : hosts) {
    services.insert(host.service);
    double ms = alive_ms(host, now_ms - kDayMs, now_ms);
    alive += ms;
    cores += ms * static_cast<double>(host.processors);
  }
  return {{"services", services.size()},
          {"instances", as_count(std::ceil(alive / kDayMs))},
          {"cores", as_count(std::round(cores / kDayMs))}};
}

json service_overviews(const ServiceHosts& hosts, const ServiceSpans& spans) {
  json out = json::array();
  int64_t id = 0;
  for (const auto& [name, facts] : by_service(hosts, spans)) {
    ++id;
    if (facts.hosts.empty()) continue;  // no agent heard from: nothing to count
    int64_t created = INT64_MAX;
    int64_t last = INT64_MIN;
    std::optional<std::string> lowest;
    for (const ServiceHost* host : facts.hosts) {
      created = std::min(created, host->first_seen_ms);
      last = std::max(last, host->last_seen_ms);
      if (host->agent_version && (!lowest || version_before(*host->agent_version, *lowest))) {
        lowest = host->agent_version;
      }
    }
    double alive = 0;
    double cores = 0;
    for (const ServiceHost* host : facts.hosts) {
      double ms = alive_ms(*host, last - kDayMs, last);
      alive += ms;
      cores += ms * static_cast<double>(host->processors);
    }
    out.push_back({{"serviceName", name},
                   {"createDate", studio_time_ms(created)},
                   {"lastUpdated", studio_time_ms(last)},
                   {"nodes", as_count(std::ceil(alive / kDayMs))},
                   {"cores", as_count(std::ceil(cores / kDayMs))},
                   {"agentVersionLowest", lowest.value_or("")},
                   {"envType", env_type(facts)},
                   {"serviceId", id}});
  }
  return out;
}

}  // namespace dormant::server::api
