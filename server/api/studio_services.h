// Performance Studio's lists of services (its Profiles page's selector, its Overview page) from
// the hosts the heartbeats know and the services the rollups hold data of.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/storage/studio_records.h"

namespace dormant::server::api {

using ServiceHosts = std::vector<storage::ServiceHost>;
using ServiceSpans = std::vector<storage::ServiceDataSpan>;

// /api/services: every service with hosts in `hosts` or data in `spans`, by name:
// [{"name", "hasData", "envType", "createDate", "serviceId"}]; serviceId is its place in the list.
nlohmann::json service_list(const ServiceHosts& hosts, const ServiceSpans& spans);

// /api/overview over the day before `now_ms`: {"services", "instances", "cores"}: the services
// with hosts heard from or profiles in it; instances and cores weighted by the share of the day
// each host was heard from.
nlohmann::json fleet_overview(const ServiceHosts& hosts, const ServiceSpans& spans, int64_t now_ms);

// /api/overview/services: per service, its nodes and cores over its last day of activity,
// its first and last time seen, the lowest agent version and its kind of deployment.
nlohmann::json service_overviews(const ServiceHosts& hosts, const ServiceSpans& spans);

// Orders "1.56.0" before "1.100.0": the numbers of dotted versions compared as numbers.
bool version_before(const std::string& a, const std::string& b);

}  // namespace dormant::server::api
