#include "server/api/studio_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "server/api/studio_queries.h"
#include "server/storage/records.h"

namespace dormant::server::api {
namespace {

using nlohmann::json;
using storage::HostSlotMetrics;
using storage::Label;

constexpr int64_t kSecondMs = 1000;
constexpr int64_t kMinuteMs = 60 * kSecondMs;
constexpr int64_t kHourMs = 60 * kMinuteMs;
constexpr int64_t kDayMs = 24 * kHourMs;
constexpr int64_t kWeekMs = 7 * kDayMs;

// Two decimals: what the UI shows of a percentage, without the float noise of a mean.
double rounded(double value) { return std::round(value * 100) / 100; }

// The q-th quantile of `values`, interpolated between the nearest ranks.
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  double rank = q * static_cast<double>(values.size() - 1);
  size_t below = static_cast<size_t>(std::floor(rank));
  size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (rank - static_cast<double>(below));
}

struct Usage {
  int64_t cpu_values = 0;
  double cpu_sum = 0;
  double cpu_max = 0;
  std::map<std::string, double> memory_max_by_host;
  std::set<std::string> hosts;

  void add(const HostSlotMetrics& row) {
    hosts.insert(row.hostname);
    if (row.cpu_values > 0) {
      cpu_max = cpu_values > 0 ? std::max(cpu_max, row.cpu_max) : row.cpu_max;
      cpu_values += row.cpu_values;
      cpu_sum += row.cpu_sum;
    }
    if (row.memory_values > 0) {
      auto [held, added] = memory_max_by_host.try_emplace(row.hostname, row.memory_max);
      if (!added) held->second = std::max(held->second, row.memory_max);
    }
  }

  json figures() const {
    json out = json::object();
    if (cpu_values > 0) {
      out["avg_cpu"] = rounded(cpu_sum / static_cast<double>(cpu_values));
      out["max_cpu"] = rounded(cpu_max);
    }
    if (!memory_max_by_host.empty()) {
      std::vector<double> maxima;
      for (const auto& host : memory_max_by_host) maxima.push_back(host.second);
      double sum = 0;
      for (double value : maxima) sum += value;
      out["avg_memory"] = rounded(sum / static_cast<double>(maxima.size()));
      out["max_memory"] = rounded(*std::max_element(maxima.begin(), maxima.end()));
      out["percentile_memory"] = rounded(quantile(maxima, 0.9));
    }
    return out;
  }
};

Usage usage_of(const HostSlots& rows) {
  Usage usage;
  for (const HostSlotMetrics& row : rows) usage.add(row);
  return usage;
}

// Rows by slot, newest slot first.
std::map<int64_t, std::vector<const HostSlotMetrics*>, std::greater<>> by_slot(
    const HostSlots& rows) {
  std::map<int64_t, std::vector<const HostSlotMetrics*>, std::greater<>> slots;
  for (const HostSlotMetrics& row : rows) slots[row.slot_ms].push_back(&row);
  return slots;
}

}  // namespace

bool UploadSelection::matches(const HostSlotMetrics& row) const {
  if (none) return false;
  return !filter || filter->matches(storage::LabelKey{row.hostname, "", row.instance_type});
}

HostSlots UploadSelection::picked(HostSlots rows) const {
  std::erase_if(rows, [&](const HostSlotMetrics& row) { return !matches(row); });
  return rows;
}

UploadSelection upload_selection(const std::optional<storage::LabelFilter>& filter,
                                 std::initializer_list<Label> none_on) {
  UploadSelection selection;
  if (!filter) return selection;
  storage::LabelFilter of_hosts;
  of_hosts.any = filter->any;
  for (const storage::LabelRule& rule : filter->rules) {
    if (rule.label == Label::kHostName || rule.label == Label::kInstanceType) {
      of_hosts.rules.push_back(rule);
    } else if (rule.equal &&
               std::find(none_on.begin(), none_on.end(), rule.label) != none_on.end()) {
      selection.none = true;
    }
  }
  if (!of_hosts.rules.empty()) selection.filter = std::move(of_hosts);
  return selection;
}

std::optional<json> usage_summary(const HostSlots& rows) {
  if (rows.empty()) return std::nullopt;
  Usage usage = usage_of(rows);
  json out = usage.figures();
  out["uniq_hostnames"] = usage.hosts.size();
  return out;
}

json usage_by_slot(const HostSlots& rows) {
  json out = json::array();
  for (const auto& [slot, members] : by_slot(rows)) {
    Usage usage;
    for (const HostSlotMetrics* row : members) usage.add(*row);
    json point = usage.figures();
    point["time"] = studio_time_ms(slot);
    out.push_back(std::move(point));
  }
  return out;
}

json usage_trend(const HostSlots& now, const HostSlots& compared) {
  json current = usage_of(now).figures();
  json before = usage_of(compared).figures();
  json out = json::object();
  for (const char* name : {"avg_cpu", "max_cpu", "avg_memory", "max_memory"}) {
    out[name] = current.value(name, 0.0);
    out[std::string("compared_") + name] = before.value(name, 0.0);
  }
  return out;
}

int64_t trend_shift_ms(int64_t range_ms) {
  int64_t weeks = std::max<int64_t>(1, (range_ms + kWeekMs - 1) / kWeekMs);
  return weeks * kWeekMs;
}

std::optional<json> nodes_and_cores(const HostSlots& rows, int64_t range_ms, bool ignore_zeros) {
  if (rows.empty()) return std::nullopt;
  double profiled_ms = 0;
  double core_ms = 0;
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  for (const HostSlotMetrics& row : rows) {
    profiled_ms += static_cast<double>(row.profiled_ms);
    core_ms += static_cast<double>(row.profiled_ms) * static_cast<double>(row.processors);
    first = std::min(first, row.first_start_ms);
    last = std::max(last, row.last_end_ms);
  }
  double over = static_cast<double>(ignore_zeros ? std::min(last - first, range_ms) : range_ms);
  if (over <= 0) over = 1;
  return json{{"avg_nodes", as_count(std::ceil(profiled_ms / over))},
              {"avg_cores", as_count(std::ceil(core_ms / over))}};
}

json nodes_and_cores_by_slot(const HostSlots& rows, int64_t slot_ms) {
  json out = json::array();
  const double width = static_cast<double>(std::max<int64_t>(1, slot_ms));
  for (const auto& [slot, members] : by_slot(rows)) {
    double profiled_ms = 0;
    double core_ms = 0;
    std::map<std::string, int64_t> cores_by_host;
    for (const HostSlotMetrics* row : members) {
      profiled_ms += static_cast<double>(row->profiled_ms);
      core_ms += static_cast<double>(row->profiled_ms) * static_cast<double>(row->processors);
      int64_t& cores = cores_by_host[row->hostname];
      cores = std::max(cores, row->processors);
    }
    int64_t max_cores = 0;
    for (const auto& host : cores_by_host) max_cores += host.second;
    out.push_back({{"time", studio_time_ms(slot)},
                   {"avg_nodes", rounded(profiled_ms / width)},
                   {"max_nodes", cores_by_host.size()},
                   {"avg_cores", rounded(core_ms / width)},
                   {"max_cores", max_cores}});
  }
  return out;
}

json instance_type_counts(const HostSlots& rows) {
  std::map<std::string, std::set<std::string>> hosts_by_type;
  for (const HostSlotMetrics& row : rows) {
    if (!row.instance_type.empty()) hosts_by_type[row.instance_type].insert(row.hostname);
  }
  std::vector<std::pair<std::string, size_t>> counts;
  for (const auto& [type, hosts] : hosts_by_type) counts.emplace_back(type, hosts.size());
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  json out = json::array();
  for (const auto& [type, count] : counts) {
    out.push_back({{"instance_type", type}, {"instance_count", count}});
  }
  return out;
}

int64_t automatic_slot_ms(int64_t range_ms, int64_t at_least_ms) {
  int64_t slot = kDayMs;
  if (range_ms <= 30 * kMinuteMs) {
    slot = 15 * kSecondMs;
  } else if (range_ms <= kHourMs) {
    slot = 30 * kSecondMs;
  } else if (range_ms <= kDayMs) {
    slot = 15 * kMinuteMs;
  } else if (range_ms <= kWeekMs) {
    slot = 2 * kHourMs;
  } else if (range_ms <= 2 * kWeekMs) {
    slot = 6 * kHourMs;
  }
  return std::max(slot, at_least_ms);
}

Result<std::optional<int64_t>> requested_slot_ms(std::string_view text, bool plural) {
  if (text.empty()) return std::optional<int64_t>();
  const std::string s = plural ? "s" : "";
  const std::pair<std::string, int64_t> known[] = {
      {"1 minute" + s, kMinuteMs},       {"5 minute" + s, 5 * kMinuteMs},
      {"15 minute" + s, 15 * kMinuteMs}, {"1 hour" + s, kHourMs},
      {"6 hour" + s, 6 * kHourMs},
  };
  for (const auto& [name, ms] : known) {
    if (text == name) return std::optional<int64_t>(ms);
  }
  return Error::invalid_argument("requested_interval: one of 1 minute" + s + ", 5 minute" + s +
                                 ", 15 minute" + s + ", 1 hour" + s + ", 6 hour" + s);
}

Result<int64_t> series_slot_ms(std::string_view requested, bool plural, int64_t range_ms) {
  auto slot = requested_slot_ms(requested, plural);
  if (!slot) return std::move(slot).take_error();
  int64_t ms = slot->value_or(automatic_slot_ms(range_ms, kMinuteMs));
  if (range_ms / ms >= kMaxSlots) {
    return Error::problem(ErrorKind::kInvalidArgument, "requested_interval",
                          "at most " + std::to_string(kMaxSlots) +
                              " intervals in a range: a wider interval or a shorter range");
  }
  return ms;
}

}  // namespace dormant::server::api
