// Performance Studio's metrics answers from uploads summed by host and slot: the meanings its UI
// shows (means, maxima, the 90th percentile of hosts' memory, nodes and cores over a range).
#include "server/api/studio_metrics.h"

#include <gtest/gtest.h>

#include "server/api/studio_services.h"

namespace dormant::server::api {
namespace {

using nlohmann::json;
using storage::HostSlotMetrics;
using storage::Label;

HostSlotMetrics host(std::string name, double cpu, double memory, int64_t processors = 4,
                     int64_t slot_ms = 0, std::string type = "") {
  HostSlotMetrics row;
  row.slot_ms = slot_ms;
  row.hostname = std::move(name);
  row.instance_type = std::move(type);
  row.uploads = 1;
  row.cpu_values = 1;
  row.cpu_sum = row.cpu_max = cpu;
  row.memory_values = 1;
  row.memory_sum = row.memory_max = memory;
  row.profiled_ms = 60'000;
  row.first_start_ms = slot_ms;
  row.last_end_ms = slot_ms + 60'000;
  row.processors = processors;
  return row;
}

TEST(StudioMetrics, SummaryLeavesOutWhatNoUploadMeasured) {
  EXPECT_EQ(usage_summary({}), std::nullopt);
  HostSlotMetrics silent = host("a", 0, 0);
  silent.cpu_values = silent.memory_values = 0;
  EXPECT_EQ(usage_summary({silent}), json({{"uniq_hostnames", 1}}));
  json both = *usage_summary({host("a", 10, 20), host("b", 30.333, 60)});
  EXPECT_DOUBLE_EQ(both["avg_cpu"].get<double>(), 20.17);  // two decimals
  EXPECT_DOUBLE_EQ(both["percentile_memory"].get<double>(), 56);
}

TEST(StudioMetrics, ATrendIsAllNumbersEvenWithNothingToCompare) {
  json trend = usage_trend({host("a", 10, 20)}, {});
  EXPECT_EQ(trend.size(), 8u);
  EXPECT_DOUBLE_EQ(trend["compared_avg_cpu"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(trend["max_memory"].get<double>(), 20);
  EXPECT_EQ(trend_shift_ms(3'600'000), 7 * 86'400'000LL);
  EXPECT_EQ(trend_shift_ms(8 * 86'400'000LL), 14 * 86'400'000LL);  // never overlapping
}

TEST(StudioMetrics, NodesAndCoresFollowProfiledTime) {
  // Two 4-core hosts for a minute of a ten-minute range.
  HostSlots rows = {host("a", 1, 1), host("b", 1, 1)};
  EXPECT_EQ(*nodes_and_cores(rows, 600'000, true), json({{"avg_nodes", 2}, {"avg_cores", 8}}));
  EXPECT_EQ(*nodes_and_cores(rows, 600'000, false), json({{"avg_nodes", 1}, {"avg_cores", 1}}));
  json slots =
      nodes_and_cores_by_slot({host("a", 1, 1, 4, 0), host("b", 1, 1, 8, 120'000)}, 60'000);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0]["time"], "1970-01-01T00:02:00Z");  // newest first
  EXPECT_EQ(slots[0]["max_cores"], 8);
  EXPECT_DOUBLE_EQ(slots[1]["avg_nodes"].get<double>(), 1);
}

TEST(StudioMetrics, AContainerRuleSaysNothingOfAHostsFigures) {
  storage::LabelFilter filter;
  filter.rules = {{Label::kHostName, true, "a"}, {Label::kContainerName, true, "web"}};
  UploadSelection selection = upload_selection(filter, {Label::kContainerEnvName});
  EXPECT_FALSE(selection.none);
  EXPECT_EQ(selection.picked({host("a", 1, 1), host("b", 1, 1)}).size(), 1u);
  filter.rules.push_back({Label::kContainerEnvName, true, "web_shop"});
  EXPECT_TRUE(upload_selection(filter, {Label::kContainerEnvName}).none);
  filter.rules.back().equal = false;  // $neq: nothing to say
  EXPECT_FALSE(upload_selection(filter, {Label::kContainerEnvName}).none);
}

TEST(StudioMetrics, InstanceTypesCountHostsMostFirst) {
  json counts = instance_type_counts({host("a", 1, 1, 4, 0, "m5"), host("a", 1, 1, 4, 60'000, "m5"),
                                      host("b", 1, 1, 4, 0, "c5"), host("c", 1, 1, 4, 0, "c5"),
                                      host("d", 1, 1, 4, 0, "")});
  EXPECT_EQ(counts, json::parse(R"([{"instance_type":"c5","instance_count":2},
                                    {"instance_type":"m5","instance_count":1}])"));
}

TEST(StudioMetrics, SlotsAreStudiosAndIntervalsItsWords) {
  EXPECT_EQ(automatic_slot_ms(30 * 60'000, 0), 15'000);
  EXPECT_EQ(automatic_slot_ms(30 * 60'000, 60'000), 60'000);
  EXPECT_EQ(automatic_slot_ms(86'400'000, 0), 15 * 60'000);
  EXPECT_EQ(automatic_slot_ms(3 * 86'400'000LL, 0), 2 * 3'600'000);
  EXPECT_EQ(automatic_slot_ms(30 * 86'400'000LL, 0), 86'400'000);
  EXPECT_EQ(*requested_slot_ms("5 minute", false), 300'000);
  EXPECT_EQ(*requested_slot_ms("6 hours", true), 6 * 3'600'000);
  EXPECT_EQ(*requested_slot_ms("", true), std::nullopt);
  EXPECT_FALSE(requested_slot_ms("5 minutes", false).ok());
  EXPECT_FALSE(requested_slot_ms("2 minute", false).ok());
  EXPECT_EQ(*series_slot_ms("", false, 86'400'000), 15 * 60'000);
  EXPECT_EQ(*series_slot_ms("1 minute", false, 9'999 * 60'000LL), 60'000);
  EXPECT_FALSE(series_slot_ms("1 minute", false, 10'000 * 60'000LL).ok());
}

TEST(StudioServices, VersionsCompareAsNumbers) {
  EXPECT_TRUE(version_before("1.56.0", "1.100.0"));
  EXPECT_FALSE(version_before("1.100.0", "1.56.0"));
  EXPECT_TRUE(version_before("1.5", "1.5.1"));
  EXPECT_FALSE(version_before("garbage", "garbage"));
}

TEST(StudioServices, AServiceIsKubernetesWhereAnyHostRunsPods) {
  storage::ServiceHost pods{"shop", "a", 0, 1000, "1.0", 4, true, true};
  storage::ServiceHost plain{"shop", "b", 0, 1000, "1.0", 4, false, false};
  storage::ServiceHost docker{"batch", "c", 0, 1000, "1.0", 4, true, false};
  json list = service_list({pods, plain, docker}, {{"shop", 10, 20}});
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["envType"], "containers");
  EXPECT_EQ(list[0]["hasData"], false);
  EXPECT_EQ(list[1]["envType"], "k8s");
  EXPECT_EQ(list[1]["createDate"], "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace dormant::server::api
