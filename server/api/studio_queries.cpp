#include "server/api/studio_queries.h"

#include <algorithm>
#include <array>
#include <utility>

#include "common/iso_time.h"
#include "server/api/api_requests.h"

namespace dormant::server::api {
namespace {

// Studio's four, then ours (its UI never sends them).
constexpr std::array<std::pair<std::string_view, storage::Label>, 6> kLabels = {{
    {"HostName", storage::Label::kHostName},
    {"ContainerName", storage::Label::kContainerName},
    {"ContainerEnvName", storage::Label::kContainerEnvName},
    {"InstanceType", storage::Label::kInstanceType},
    {"PodName", storage::Label::kPodName},
    {"Namespace", storage::Label::kNamespace},
}};

// The UI's filters hold a handful of rules of host, container and deployment names; bounds for
// any other client.
constexpr size_t kMaxRules = 64;
constexpr size_t kMaxValueBytes = 1024;

Result<storage::LabelRule> studio_rule(const nlohmann::json& rule) {
  if (!rule.is_object() || rule.size() != 1) {
    return Error::invalid_argument("filter: a rule is {\"HostName\": {\"$eq\": \"value\"}}");
  }
  const std::string& key = rule.begin().key();
  const nlohmann::json& condition = rule.begin().value();
  auto label = studio_label(key);
  if (!label) {
    return Error::invalid_argument("filter: " + key + " is not " + std::string(kStudioLabelNames));
  }
  if (!condition.is_object() || condition.size() != 1) {
    return Error::invalid_argument("filter: " + key + " takes one of {\"$eq\": …}, {\"$neq\": …}");
  }
  const std::string& op = condition.begin().key();
  const nlohmann::json& value = condition.begin().value();
  if (op != "$eq" && op != "$neq") {
    return Error::invalid_argument("filter: " + op + " is not $eq or $neq");
  }
  if (!value.is_string()) return Error::invalid_argument("filter: a value is a string");
  if (value.get_ref<const std::string&>().size() > kMaxValueBytes) {
    return Error::invalid_argument("filter: a value is at most " + std::to_string(kMaxValueBytes) +
                                   " bytes");
  }
  return storage::LabelRule{*label, op == "$eq", value.get<std::string>()};
}

}  // namespace

std::optional<storage::Label> studio_label(std::string_view tag) {
  for (const auto& [name, label] : kLabels) {
    if (name == tag) return label;
  }
  return std::nullopt;
}

std::string studio_time(storage::TimePoint time) { return iso_utc(time) + "Z"; }

bool has_parameter(const Call& call, std::string_view name) {
  return std::any_of(call.query.begin(), call.query.end(),
                     [&](const auto& parameter) { return parameter.first == name; });
}

Result<StudioRange> studio_range(const Call& call) {
  StudioRange range;
  auto problem = [](std::string where, std::string what) {
    return Error::problem(ErrorKind::kInvalidArgument, std::move(where), std::move(what));
  };
  range.service = std::string(call.query_value("serviceName"));
  if (range.service.empty()) return problem("serviceName", "field required");
  for (auto [name, into] : {std::pair{"startTime", &range.start}, {"endTime", &range.end}}) {
    if (call.query_value(name).empty()) return problem(name, "field required");
    auto time = time_parameter(call, name);
    if (!time) return problem(name, "an ISO-8601 time such as 2026-11-28T09:15:00.000Z");
    *into = **time;
  }
  if (range.end < range.start) return problem("endTime", "before startTime");
  return range;
}

Result<std::optional<storage::LabelFilter>> studio_filter(const nlohmann::json& filter) {
  const nlohmann::json* rules = &filter;
  if (filter.is_object() && filter.contains("filter")) rules = &filter["filter"];
  if (rules->is_null() || (rules->is_object() && rules->empty())) {
    return std::optional<storage::LabelFilter>();
  }
  if (!rules->is_object() || rules->size() != 1) {
    return Error::invalid_argument("filter: one of {\"$and\": […]}, {\"$or\": […]}");
  }
  const std::string& op = rules->begin().key();
  const nlohmann::json& list = rules->begin().value();
  if ((op != "$and" && op != "$or") || !list.is_array()) {
    return Error::invalid_argument("filter: one of {\"$and\": […]}, {\"$or\": […]}");
  }
  if (list.size() > kMaxRules) {
    return Error::invalid_argument("filter: at most " + std::to_string(kMaxRules) + " rules");
  }
  storage::LabelFilter parsed;
  parsed.any = op == "$or";
  for (const nlohmann::json& rule : list) {
    auto read = studio_rule(rule);
    if (!read) return std::move(read).take_error();
    parsed.rules.push_back(std::move(*read));
  }
  if (parsed.rules.empty()) return std::optional<storage::LabelFilter>();
  return std::optional<storage::LabelFilter>(std::move(parsed));
}

nlohmann::json studio_filter_json(const storage::LabelFilter& filter) {
  nlohmann::json rules = nlohmann::json::array();
  for (const storage::LabelRule& rule : filter.rules) {
    auto label = std::find_if(kLabels.begin(), kLabels.end(),
                              [&](const auto& known) { return known.second == rule.label; });
    rules.push_back({{std::string(label->first), {{rule.equal ? "$eq" : "$neq", rule.value}}}});
  }
  return {{filter.any ? "$or" : "$and", std::move(rules)}};
}

Result<std::optional<storage::LabelFilter>> studio_filter_parameter(const Call& call) {
  std::string_view text = call.query_value("filter");
  if (text.empty()) return std::optional<storage::LabelFilter>();
  auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Error::invalid_argument("filter: not JSON");
  return studio_filter(json);
}

}  // namespace dormant::server::api
