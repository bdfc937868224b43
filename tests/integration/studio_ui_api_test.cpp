// Performance Studio's web UI's calls to a real dormant-server, on SQLite and on PostgreSQL: each
// answer holds what the UI reads to render (the shapes of its contract), computed from uploads
// and heartbeats sent as agents send them; the traps (204 where the UI reads it as "none", never
// an error from /api/services); saved filters and snapshots kept; HTTP Basic with a token as its
// password, and requests from other sites refused.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "server_fixture.h"
#include "tests/support/postgres_cluster.h"

#include "common/iso_time.h"
#include "common/text.h"

namespace dormant::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::hours;
using std::chrono::minutes;

constexpr const char* kReaderToken = "reader-token-0123456789";

// `at` minutes after the start of the hour two hours ago, as "…T10:05:00.000Z" (as the UI writes
// times): recent enough for every rollup, on whole minutes.
std::string recent(int at, std::chrono::system_clock::duration shift = {}) {
  static const auto base = std::chrono::floor<hours>(std::chrono::system_clock::now()) - hours(2);
  return iso_utc(std::chrono::floor<std::chrono::seconds>(base + minutes(at) + shift)) + ".000Z";
}

// "serviceName=…&startTime=…&endTime=…", as the UI's query-string writes the common three.
std::string common_three(const std::string& service, const std::string& start,
                         const std::string& end) {
  return "endTime=" + url_encoded(end) + "&serviceName=" + url_encoded(service) +
         "&startTime=" + url_encoded(start);
}

std::string filter_of(const json& rules) {
  return "&filter=" + url_encoded(json{{"id", ""}, {"filter", rules}}.dump());
}

struct Figures {
  double cpu = 0;
  double memory = 0;
  int processors = 2;
  std::string instance_type;
};

struct Answer : FullReply {
  json json_body() const { return json::parse(body, nullptr, false); }
};

class StudioUiApiTest : public ServerFixture, public ::testing::WithParamInterface<std::string> {
 protected:
  StudioUiApiTest() : ServerFixture("dormant-studio-ui-it-") {}

  void SetUp() override {
    ServerFixture::SetUp();
    std::ofstream(root_ / "tokens") << kToken << " operator\n"
                                    << kToken << " agent\n"
                                    << kReaderToken << " reader\n";
    std::vector<std::string> args;
    if (GetParam() == "postgres") {
      if (std::string why = PostgresCluster::unavailable_reason(); !why.empty()) {
        GTEST_SKIP() << why;
      }
      auto cluster = PostgresCluster::start();
      ASSERT_TRUE(cluster.ok()) << cluster.error().message();
      cluster_ = std::move(*cluster);
      auto url = cluster_->create_database();
      ASSERT_TRUE(url.ok()) << url.error().message();
      args = {"--database", *url};
    }
    start(args);
  }

  void TearDown() override {
    ServerFixture::TearDown();
    cluster_.reset();
  }

  void upload(const std::string& service, const std::string& hostname, const std::string& stacks,
              const std::string& start, const std::string& end, const Figures& figures) {
    std::string collapsed = collapsed_profile(hostname, stacks);
    json header = json::parse(collapsed.substr(1, collapsed.find('\n') - 1));
    header["metadata"]["processors"] = figures.processors;
    if (!figures.instance_type.empty()) {
      header["metadata"]["cloud_info"] = {{"instance_type", "zones/us-1/" + figures.instance_type}};
    }
    collapsed = "# " + header.dump() + collapsed.substr(collapsed.find('\n'));
    json body = upload_body(hostname, collapsed);
    body["start_time"] = start.substr(0, 19);
    body["end_time"] = end.substr(0, 19);
    body["cpu_avg"] = figures.cpu;
    body["mem_avg"] = figures.memory;
    HttpReply reply = server_->post_upload(service, body, kToken);
    ASSERT_EQ(reply.status, 200) << reply.body;
  }

  void beat(const std::string& hostname, const std::string& service, const std::string& version,
            const json& containers = json::array()) {
    json body = {{"hostname", hostname},
                 {"service_name", service},
                 {"ip_address", "10.0.0.7"},
                 {"status", "active"},
                 {"agent_version", version},
                 {"received_command_ids", json::array()},
                 {"executed_command_ids", json::array()},
                 {"containers", containers}};
    HttpReply reply = server_->post_json("/api/metrics/heartbeat", body);
    ASSERT_EQ(reply.status, 200) << reply.body;
  }

  // A call as the UI's fetch makes it: `extra` curl arguments (method, headers, body), no token
  // unless they carry one.
  Answer call(const std::string& path, std::vector<std::string> extra = {},
              bool with_token = true) {
    fs::path headers = root_ / "headers";
    fs::path body = root_ / "body";
    std::vector<std::string> args = {"-D", headers.string(), "-o", body.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(server_->url(path));
    HttpReply reply = server_->curl(args, with_token);
    return {full_reply(reply.status, headers, body)};
  }

  json ok_json(const std::string& path) {
    Answer answer = call(path);
    EXPECT_EQ(answer.status, 200) << path << ": " << answer.body;
    json body = answer.json_body();
    EXPECT_FALSE(body.is_discarded()) << path << ": " << answer.body;
    return body;
  }

  Answer send_json(const std::string& method, const std::string& path, const json& body,
                   std::vector<std::string> headers = {}) {
    std::vector<std::string> args = {
        "-X", method, "-H", "Content-Type: application/json", "--data-binary", body.dump()};
    for (const std::string& header : headers) {
      args.push_back("-H");
      args.push_back(header);
    }
    return call(path, args);
  }

  std::unique_ptr<PostgresCluster> cluster_;
};

// An ISO-8601 time in UTC, as the UI reads it ("…Z").
bool utc_time(const json& value) {
  return value.is_string() && value.get<std::string>().ends_with("Z") &&
         parse_iso_time(value.get<std::string>()).has_value();
}

TEST_P(StudioUiApiTest, ServicesAndOverviewDescribeTheFleetAndNeverErrWhenEmpty) {
  Answer none = call("/api/services");
  EXPECT_EQ(none.status, 204) << none.body;  // the UI reads [] and says "No services installed"
  EXPECT_EQ(ok_json("/api/overview")["services"], 0);
  EXPECT_EQ(ok_json("/api/overview/services"), json::array());

  json pod = {{"container_name", "checkout_web-7d9f-x2k4_shop"},
              {"pod_name", "web-7d9f-x2k4"},
              {"namespace", "shop"},
              {"processes", json::array()}};
  beat("web-01", "shop", "1.100.0", json::array({pod}));
  beat("web-02", "shop", "1.56.0");
  beat("batch-01", "batch", "1.60.2");
  upload("shop", "web-01", "0;;python;main;work 40", recent(0), recent(1), {12, 30, 8, "m5.large"});
  beat("web-01", "shop", "1.100.0", json::array({pod}));  // heard from twice: it counts
  beat("web-02", "shop", "1.56.0");

  json services = ok_json("/api/services");
  ASSERT_EQ(services.size(), 2u) << services;
  EXPECT_EQ(services[0]["name"], "batch");  // by name: the first is the default selection
  EXPECT_EQ(services[0]["hasData"], false);
  EXPECT_EQ(services[0]["envType"], "instances");
  EXPECT_EQ(services[1]["name"], "shop");
  EXPECT_EQ(services[1]["hasData"], true);
  EXPECT_EQ(services[1]["envType"], "k8s");
  for (const json& service : services) {
    EXPECT_TRUE(utc_time(service["createDate"])) << service;
    EXPECT_TRUE(service["serviceId"].is_number_integer()) << service;
  }

  json overview = ok_json("/api/overview");
  EXPECT_EQ(overview["services"], 2);
  EXPECT_GE(overview["instances"].get<int>(), 1) << overview;

  json rows = ok_json("/api/overview/services");
  ASSERT_EQ(rows.size(), 2u) << rows;
  const json& shop = rows[1];
  EXPECT_EQ(shop["serviceName"], "shop");
  EXPECT_EQ(shop["agentVersionLowest"], "1.56.0");  // as numbers: 56 before 100
  EXPECT_EQ(shop["envType"], "k8s");
  EXPECT_GE(shop["nodes"].get<int>(), 1) << shop;
  EXPECT_GE(shop["cores"].get<int>(), 1) << shop;
  EXPECT_TRUE(utc_time(shop["createDate"]) && utc_time(shop["lastUpdated"])) << shop;
}

TEST_P(StudioUiApiTest, TheMetricsBarComesFromEachUploadsFigures) {
  upload("shop", "web-01", "0;;python;main;work 40", recent(0), recent(1), {10, 20, 4, "m5.large"});
  upload("shop", "web-02", "0;;python;main;work 40", recent(0), recent(1), {30, 60, 4, "m5.large"});
  upload("shop", "web-03", "0;;python;main;work 40", recent(0), recent(1),
         {50, 40, 8, "c5.xlarge"});
  const std::string range = common_three("shop", recent(0), recent(10));

  json summary = ok_json("/api/metrics/summary?" + range);
  EXPECT_DOUBLE_EQ(summary["avg_cpu"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(summary["max_cpu"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(summary["avg_memory"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(summary["max_memory"].get<double>(), 60);
  EXPECT_DOUBLE_EQ(summary["percentile_memory"].get<double>(), 56);  // p90 of 20, 40, 60
  EXPECT_EQ(summary["uniq_hostnames"], 3);

  json one_host = ok_json("/api/metrics/summary?" + range +
                          filter_of({{"$and", {{{"HostName", {{"$eq", "web-01"}}}}}}}));
  EXPECT_DOUBLE_EQ(one_host["avg_cpu"].get<double>(), 10);
  EXPECT_EQ(one_host["uniq_hostnames"], 1);
  std::string deployment = filter_of({{"$and", {{{"ContainerEnvName", {{"$eq", "web_shop"}}}}}}});
  EXPECT_EQ(call("/api/metrics/summary?" + range + deployment).status, 204);
  EXPECT_EQ(call("/api/metrics/summary?" + common_three("nothing", recent(0), recent(10))).status,
            204);

  json types = ok_json("/api/metrics/instance_type_count?" + range);
  EXPECT_EQ(types, json::parse(R"([{"instance_type":"m5.large","instance_count":2},
                                   {"instance_type":"c5.xlarge","instance_count":1}])"));

  // Three hosts for the minute they profiled: 3 nodes and 16 cores over it, or over the whole
  // ten minutes, 0.3 and 1.6, rounded up.
  json busy = ok_json("/api/metrics/nodes_cores/summary?" + range + "&ignoreZeros=true");
  EXPECT_EQ(busy, json::parse(R"({"avg_nodes":3,"avg_cores":16})"));
  json spread = ok_json("/api/metrics/nodes_cores/summary?" + range + "&ignoreZeros=false");
  EXPECT_EQ(spread, json::parse(R"({"avg_nodes":1,"avg_cores":2})"));

  // A week before: what the trend compares with.
  upload("shop", "web-01", "0;;python;main;work 40", recent(0, -hours(24 * 7)),
         recent(1, -hours(24 * 7)), {20, 10, 4, "m5.large"});
  json trend = ok_json("/api/metrics/cpu_trend?" + range);
  EXPECT_DOUBLE_EQ(trend["avg_cpu"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(trend["compared_avg_cpu"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(trend["compared_max_memory"].get<double>(), 10);
  json nothing_then = ok_json("/api/metrics/cpu_trend?" + range + deployment);
  EXPECT_DOUBLE_EQ(nothing_then["avg_cpu"].get<double>(), 0);  // numbers, never a 204 (NaN)

  json graph = ok_json("/api/metrics/graph?" + range + "&requested_interval=1%20minute");
  ASSERT_EQ(graph.size(), 1u) << graph;
  EXPECT_EQ(graph[0]["time"], recent(0).substr(0, 19) + "Z");
  EXPECT_DOUBLE_EQ(graph[0]["avg_cpu"].get<double>(), 30);
  EXPECT_EQ(call("/api/metrics/graph?" + range + "&requested_interval=1%20minutes").status, 422);

  json nodes =
      ok_json("/api/metrics/graph/nodes_and_cores?" + range + "&requested_interval=1%20minutes");
  ASSERT_EQ(nodes.size(), 1u) << nodes;
  EXPECT_EQ(nodes[0]["max_nodes"], 3);
  EXPECT_EQ(nodes[0]["max_cores"], 16);
  EXPECT_DOUBLE_EQ(nodes[0]["avg_nodes"].get<double>(), 3);
  std::string container = filter_of({{"$and", {{{"ContainerName", {{"$eq", "web"}}}}}}});
  EXPECT_EQ(call("/api/metrics/graph/nodes_and_cores?" + range + container).status, 204);
  EXPECT_EQ(
      call("/api/metrics/graph/nodes_and_cores?" + range + "&requested_interval=1%20minute").status,
      422);
  EXPECT_EQ(call("/api/metrics/summary?serviceName=shop").status, 422);  // the common three
  // A series is at most 10,000 points: what it costs has a bound.
  std::string ten_days = common_three("shop", recent(0, -hours(24 * 10)), recent(0));
  EXPECT_EQ(call("/api/metrics/graph?" + ten_days + "&requested_interval=1%20minute").status, 422);
  EXPECT_EQ(call("/api/metrics/samples?" + ten_days + "&requested_interval=1%20minute").status,
            422);
  EXPECT_EQ(call("/api/metrics/graph?" + ten_days + "&requested_interval=15%20minute").status, 200);
}

TEST_P(StudioUiApiTest, SamplesAndAFunctionsShareAreCountedPerSlot) {
  upload("shop", "web-01", "0;;python;main;work 30\n0;;python;main;wait 10", recent(0), recent(1),
         {});
  upload("shop", "web-02", "0;;python;main;work 10\n0;;python;main;other 30", recent(5), recent(6),
         {});
  const std::string range = common_three("shop", recent(0), recent(10));

  json samples = ok_json("/api/metrics/samples?" + range + "&requested_interval=1%20minute");
  EXPECT_EQ(samples, json::parse(R"([{"time":")" + recent(5).substr(0, 19) +
                                 R"(Z","samples":40},{"time":")" + recent(0).substr(0, 19) +
                                 R"(Z","samples":40}])"));
  json filtered = ok_json("/api/metrics/samples?" + range + "&requested_interval=1%20minute" +
                          filter_of({{"$and", {{{"HostName", {{"$neq", "web-01"}}}}}}}));
  ASSERT_EQ(filtered.size(), 1u) << filtered;

  json share = ok_json("/api/metrics/function_cpu?" + range + "&functionName=work");
  ASSERT_EQ(share.size(), 2u) << share;  // newest first, a fraction of all samples
  EXPECT_EQ(share[0]["time"], recent(5).substr(0, 19) + "Z");
  EXPECT_DOUBLE_EQ(share[0]["cpu_percentage"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(share[1]["cpu_percentage"].get<double>(), 0.75);
  EXPECT_EQ(ok_json("/api/metrics/function_cpu?" + range + "&functionName=absent"), json::array());
  EXPECT_EQ(call("/api/metrics/function_cpu?" + range).status, 422);
}

TEST_P(StudioUiApiTest, TheFilterPanelListsValuesBySamplesAndKeepsSavedFilters) {
  upload("shop", "web-01", "0;;python;main;work 40", recent(0), recent(1), {1, 1, 2, "m5.large"});
  upload("shop", "web-02", "0;;python;main;work 10", recent(0), recent(1), {1, 1, 2, "m5.large"});
  const std::string range = common_three("shop", recent(0), recent(10));
  EXPECT_EQ(ok_json("/api/v1/filters/tags/HostName?" + range),
            json::parse(R"([{"name":"web-01","samples":"40"},{"name":"web-02","samples":"10"}])"));
  EXPECT_EQ(ok_json("/api/v1/filters/tags/InstanceType?" + range),
            json::parse(R"([{"name":"m5.large","samples":"50"}])"));
  EXPECT_EQ(call("/api/v1/filters/tags/ContainerName?" + range).status, 204);  // none: disabled
  EXPECT_EQ(call("/api/v1/filters/tags/Color?" + range).status, 422);

  const std::string saved = "/api/v1/filters/service/shop";
  EXPECT_EQ(ok_json(saved), json::array());
  json rules = {{"$and", {{{"HostName", {{"$eq", "web-01"}}}}}}};
  Answer made = send_json("POST", saved, {{"id", ""}, {"filter", rules}});
  ASSERT_EQ(made.status, 201) << made.body;
  ASSERT_TRUE(made.json_body().is_number_integer()) << made.body;  // the bare id
  int64_t id = made.json_body().get<int64_t>();
  EXPECT_EQ(ok_json(saved), json::array({{{"id", id}, {"filter", rules}}}));

  json other = {
      {"$or", {{{"HostName", {{"$eq", "web-02"}}}}, {{"InstanceType", {{"$neq", "x"}}}}}}};
  Answer replaced = send_json("PUT", "/api/v1/filters", {{"id", id}, {"filter", other}});
  EXPECT_EQ(replaced.status, 201) << replaced.body;
  EXPECT_EQ(replaced.body, "null");
  EXPECT_EQ(ok_json(saved)[0]["filter"], other);
  EXPECT_EQ(
      send_json("PUT", "/api/v1/filters", {{"id", std::to_string(id)}, {"filter", rules}}).status,
      201);  // its id as text, too
  EXPECT_EQ(send_json("PUT", "/api/v1/filters", {{"id", id + 100}, {"filter", rules}}).status, 404);
  json bad = {{"$and", {{{"HostName", {{"$gt", "a"}}}}}}};
  EXPECT_EQ(send_json("POST", saved, {{"id", ""}, {"filter", bad}}).status, 422);
  EXPECT_EQ(ok_json("/api/v1/filters/service/other"), json::array());

  Answer deleted = call("/api/v1/filters/" + std::to_string(id), {"-X", "DELETE"});
  EXPECT_EQ(deleted.status, 204) << deleted.body;
  EXPECT_EQ(call("/api/v1/filters/" + std::to_string(id), {"-X", "DELETE"}).status, 404);
  EXPECT_EQ(ok_json(saved), json::array());
}

TEST_P(StudioUiApiTest, SnapshotsKeepTheirMarksAndAnUnknownOneIsAllNull) {
  json frames = json::parse(R"([{"level":2,"start":0,"duration":1200},
                                {"level":3,"start":100,"duration":50}])");
  json filter = {{"id", ""}, {"filter", {{"$and", {{{"HostName", {{"$eq", "web-01"}}}}}}}}};
  Answer made = send_json("POST", "/api/snapshots",
                          {{"frames", frames},
                           {"startTime", recent(0)},
                           {"endTime", recent(60)},
                           {"serviceName", "shop"},
                           {"filter", filter}});
  ASSERT_EQ(made.status, 201) << made.body;
  ASSERT_TRUE(made.json_body().is_number_integer()) << made.body;
  json kept = ok_json("/api/snapshots/" + made.body);
  EXPECT_EQ(kept["frames"], frames);
  EXPECT_EQ(kept["filter"], filter);
  EXPECT_EQ(kept["startTime"], recent(0).substr(0, 19) + "Z");
  EXPECT_EQ(ok_json("/api/snapshots/999999"),
            json::parse(R"({"startTime":null,"endTime":null,"frames":null,"filter":null})"));
  json too_many = json::array();
  for (int i = 0; i <= 1000; ++i) too_many.push_back({{"level", 1}, {"start", i}, {"duration", 1}});
  EXPECT_EQ(send_json("POST", "/api/snapshots",
                      {{"frames", too_many},
                       {"startTime", recent(0)},
                       {"endTime", recent(60)},
                       {"serviceName", "shop"}})
                .status,
            422);
  // Nested past the bounds of every message (a deep id in its filter), a name or a value of over
  // a KiB: each refused, the server still up.
  std::string deep = std::string(200, '[') + std::string(200, ']');
  Answer nested =
      call("/api/snapshots",
           {"-X", "POST", "-H", "Content-Type: application/json", "--data-binary",
            R"({"frames":[],"startTime":")" + recent(0) + R"(","endTime":")" + recent(60) +
                R"(","serviceName":"shop","filter":{"id":)" + deep + R"(,"filter":{}}})"});
  EXPECT_EQ(nested.status, 422) << nested.body;
  EXPECT_EQ(send_json("POST", "/api/snapshots",
                      {{"frames", json::array()},
                       {"startTime", recent(0)},
                       {"endTime", recent(60)},
                       {"serviceName", std::string(1025, 's')}})
                .status,
            422);
  EXPECT_EQ(send_json("POST", "/api/v1/filters/service/" + std::string(1025, 's'),
                      {{"id", ""}, {"filter", {{"$and", {{{"HostName", {{"$eq", "a"}}}}}}}}})
                .status,
            422);
  EXPECT_EQ(send_json("POST", "/api/v1/filters/service/shop",
                      {{"id", ""},
                       {"filter", {{"$and", {{{"HostName", {{"$eq", std::string(1025, 'v')}}}}}}}}})
                .status,
            422);
  EXPECT_EQ(call("/api/services").status, 204);  // still serving
  json rules = json::array();
  for (int i = 0; i <= 64; ++i) rules.push_back({{"HostName", {{"$neq", std::to_string(i)}}}});
  EXPECT_EQ(call("/api/metrics/summary?" + common_three("shop", recent(0), recent(10)) +
                 filter_of({{"$and", rules}}))
                .status,
            400);
  EXPECT_EQ(send_json("POST", "/api/snapshots",
                      {{"frames", {{{"level", "two"}}}},
                       {"startTime", recent(0)},
                       {"endTime", recent(60)},
                       {"serviceName", "shop"}})
                .status,
            422);
}

TEST_P(StudioUiApiTest, ReportViewsHaveNothingAndTheInstallKeyIsNoToken) {
  const std::string range = common_three("shop", recent(0), recent(10));
  EXPECT_EQ(call("/api/metrics/html_metadata?" + range).status, 400);  // no host picked
  EXPECT_EQ(call("/api/metrics/html_metadata?" + range +
                 filter_of({{"$and", {{{"HostName", {{"$eq", "web-01"}}}}}}}))
                .status,
            404);
  EXPECT_EQ(call("/api/perfspect/download_report?" + range + "&hostname=web-01").status, 404);
  EXPECT_EQ(ok_json("/api/metrics/adhoc_flamegraphs?" + range), json::array());
  EXPECT_EQ(call("/api/metrics/adhoc_flamegraph_content?serviceName=shop&filename=x.html").status,
            404);
  json key = ok_json("/api/api_key");
  ASSERT_TRUE(key["apiKey"].is_string()) << key;
  EXPECT_EQ(key["apiKey"].get<std::string>().find(kToken), std::string::npos);
}

TEST_P(StudioUiApiTest, TheSvgDownloadIsAFileNamedByItsRange) {
  upload("shop", "web-01", "0;;python;main;work 40", recent(0), recent(1), {});
  Answer svg = call("/api/flamegraph/download_svg/?" + common_three("shop", recent(0), recent(60)));
  ASSERT_EQ(svg.status, 200) << svg.body;
  EXPECT_EQ(svg.headers["content-type"], "application/octet-stream");
  EXPECT_EQ(svg.headers["content-disposition"], "attachment; filename=shop_hourly.svg");
  EXPECT_NE(svg.body.find("<svg"), std::string::npos);
  EXPECT_NE(svg.body.find("work"), std::string::npos);
  Answer custom =
      call("/api/flamegraph/download_svg/?" + common_three("shop", recent(0), recent(7)));
  EXPECT_EQ(custom.headers["content-disposition"], "attachment; filename=shop_custom.svg");
  // Its title says what the filter kept, for each of the UI's labels.
  json rules = {{"$or",
                 {{{"ContainerEnvName", {{"$eq", "web_shop"}}}},
                  {{"InstanceType", {{"$neq", "m5.large"}}}},
                  {{"HostName", {{"$eq", "web-01"}}}}}}};
  Answer filtered = call("/api/flamegraph/download_svg/?" +
                         common_three("shop", recent(0), recent(60)) + filter_of(rules));
  ASSERT_EQ(filtered.status, 200) << filtered.body;
  EXPECT_NE(filtered.body.find(
                "shop in deployment web_shop or not in instance type m5.large or on web-01"),
            std::string::npos)
      << filtered.body.substr(0, 2000);
}

TEST_P(StudioUiApiTest, HttpBasicCarriesATokenAndOtherSitesMayNotChangeAnything) {
  const std::string path = "/api/v1/filters/service/shop";
  Answer anonymous = call(path, {}, /*with_token=*/false);
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_NE(anonymous.headers["www-authenticate"].find("Basic realm="), std::string::npos)
      << anonymous.headers["www-authenticate"];
  EXPECT_NE(anonymous.headers["www-authenticate"].find("Bearer"), std::string::npos);
  EXPECT_EQ(call(path, {"-u", std::string("anyone:") + kReaderToken}, false).status, 200);
  EXPECT_EQ(call(path, {"-u", "anyone:not-a-token"}, false).status, 401);
  // A page that sends a Bearer token itself (our console) gets no browser login dialog.
  Answer wrong_bearer = call(path, {"-H", "Authorization: Bearer not-a-token"}, false);
  EXPECT_EQ(wrong_bearer.status, 401);
  EXPECT_EQ(wrong_bearer.headers["www-authenticate"], "Bearer realm=\"dormant\"");
  // A reader's token over Basic may not profile: the roles are the token's.
  Answer bulk = call("/api/metrics/profile_request/bulk",
                     {"-u", std::string("ui:") + kReaderToken, "-X", "POST", "-H",
                      "Content-Type: application/json", "--data-binary", "{}"},
                     false);
  EXPECT_EQ(bulk.status, 403) << bulk.body;

  json body = {{"id", ""}, {"filter", {{"$and", {{{"HostName", {{"$eq", "a"}}}}}}}}};
  auto post_with = [&](std::vector<std::string> headers) {
    std::vector<std::string> args = {
        "-u", std::string("ui:") + kReaderToken, "-X", "POST", "--data-binary", body.dump()};
    for (const std::string& header : headers) {
      args.push_back("-H");
      args.push_back(header);
    }
    return call(path, args, false);
  };
  EXPECT_EQ(post_with({"Content-Type: application/json"}).status, 201);
  EXPECT_EQ(post_with({"Content-Type: text/plain"}).status, 403);  // a form's type: no preflight
  EXPECT_EQ(post_with({"Content-Type: application/json", "Sec-Fetch-Site: cross-site"}).status,
            403);
  EXPECT_EQ(
      post_with({"Content-Type: application/json", "Origin: https://elsewhere.example"}).status,
      403);
  std::string own = "Origin: " + server_->url("");
  EXPECT_EQ(
      post_with({"Content-Type: application/json", own, "Sec-Fetch-Site: same-origin"}).status,
      201);
  // With a Bearer token too (an auth proxy adds one to whatever the browser sends).
  EXPECT_EQ(send_json("POST", path, body, {"Origin: https://elsewhere.example"}).status, 403);
  EXPECT_EQ(call(path).headers["content-security-policy"],
            "default-src 'none'; frame-ancestors 'none'");
}

INSTANTIATE_TEST_SUITE_P(Databases, StudioUiApiTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dormant::testing
