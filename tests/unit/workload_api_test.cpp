// Workload-level profiling through the API, in process with a real store: what Performance
// Studio's workload API promises its users (scopes, selections, tabs, subscriptions) and our own
// cases.
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "server/api/api.h"

namespace dormant::server::api {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;
using nlohmann::json;
using namespace std::chrono_literals;

class WorkloadApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dormant-workload-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    storage::StoreOptions options;
    options.clock = [this] { return now_; };
    auto store = storage::Store::open(dir_ / "data", options);
    ASSERT_TRUE(store.ok()) << store.error().message();
    store_ = std::move(*store);
    api_ = std::make_unique<Api>(
        *store_, Tokens::of(std::vector<std::pair<std::string_view, Roles>>{{"k", kAllRoles}}),
        metrics_);
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  struct Reply {
    int status;
    json body;
  };
  Reply call(bhttp::verb method, const std::string& target, const std::string& body = "") {
    http::Request request(method, target, 11);
    request.set(bhttp::field::authorization, "Bearer k");
    request.body() = body;
    request.prepare_payload();
    http::Response response =
        api_->handle(request, http::Client{"127.0.0.1:1", {}, "127.0.0.1", nullptr});
    return {static_cast<int>(response.result_int()),
            json::parse(response.body(), nullptr, /*allow_exceptions=*/false)};
  }
  Reply post(const std::string& target, const json& body) {
    return call(bhttp::verb::post, target, body.dump());
  }
  Reply get(const std::string& target) { return call(bhttp::verb::get, target); }

  // A heartbeat from `hostname` with these containers, or those it sent last, as an agent sends
  // its inventory in every heartbeat (null: the last ones); its answer.
  json beat(const std::string& hostname, json containers = nullptr,
            const std::string& service = "web") {
    json& inventory = inventories_[hostname];
    if (!containers.is_null()) inventory = std::move(containers);
    if (inventory.is_null()) inventory = json::array();
    json body = {{"ip_address", "10.0.0.1"},
                 {"hostname", hostname},
                 {"service_name", service},
                 {"containers", inventory}};
    Reply reply = post("/api/metrics/heartbeat", body);
    EXPECT_EQ(reply.status, 200) << reply.body;
    return reply.body;
  }
  static json container(const std::string& name, const std::string& ns, const std::string& pod,
                        const std::string& workload, json processes) {
    return {{"container_id", name + "-" + pod},
            {"container_name", name},
            {"namespace", ns},
            {"pod_name", pod},
            {"workload_name", workload},
            {"processes", std::move(processes)}};
  }
  static json process(int pid, const std::string& name) {
    return {{"pid", pid}, {"process_name", name}};
  }

  Reply profile(json request) {
    request.emplace("service_name", "web");
    request.emplace("request_type", "start");
    return post("/api/metrics/profile_request", request);
  }

  std::map<std::string, json> inventories_;
  fs::path dir_;
  storage::TimePoint now_ = storage::from_unix_ms(1'800'000'000'000);
  ServerMetrics metrics_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Api> api_;
};

// A host-scope start reaches its host on the next heartbeat.
TEST_F(WorkloadApiTest, HostScopeStartReachesTheHost) {
  beat("h1");
  Reply reply = profile({{"target_scope", "host"}, {"target_hosts", {{"h1", json::array()}}}});
  ASSERT_EQ(reply.status, 200) << reply.body.dump();
  json answer = beat("h1");
  EXPECT_EQ(answer["profiling_command"]["command_type"], "start");
}

// A service-scope start commands every active host of the service.
TEST_F(WorkloadApiTest, ServiceScopeStartCommandsEveryActiveHost) {
  beat("h1");
  beat("h2");
  beat("other", json::array(), "db");
  Reply reply =
      profile({{"target_scope", "service"}, {"target_entities", {{{"serviceName", "web"}}}}});
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.body["command_ids"].size(), 2u);
  for (const char* host : {"h1", "h2"}) {
    json answer = beat(host);
    EXPECT_EQ(answer["profiling_command"]["command_type"], "start") << host;
    EXPECT_FALSE(answer["profiling_command"]["combined_config"].contains("pids"));
    EXPECT_EQ(answer["profiling_command"]["combined_config"]["target_scope"], "service");
  }
  EXPECT_TRUE(beat("other", json::array(), "db")["profiling_command"].is_null());
}

// Process, container and pod selections become per-host pid lists.
TEST_F(WorkloadApiTest, SelectionsBecomeThePidsOfTheirHosts) {
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(4242, "java")}),
              container("side", "shop", "cart-0", "cart", {process(4243, "envoy")}),
              container("app", "shop", "pay-1", "pay", {process(5000, "java")})});
  // Each selection from a host that profiles nothing: starts for one host merge.
  auto pids_after = [&](json request) {
    Reply reply = profile(std::move(request));
    EXPECT_EQ(reply.status, 200) << reply.body;
    json pids = beat("h1")["profiling_command"]["combined_config"]["pids"];
    profile(
        {{"request_type", "stop"}, {"stop_level", "host"}, {"target_hosts", {{"h1", nullptr}}}});
    beat("h1");
    return pids;
  };
  EXPECT_EQ(pids_after({{"target_scope", "process"},
                        {"target_entities", {{{"hostname", "h1"}, {"pid", 4242}}}}}),
            json({4242}));
  EXPECT_EQ(pids_after({{"target_scope", "container"},
                        {"target_entities", {{{"podName", "cart-0"}, {"containerName", "side"}}}}}),
            json({4243}));
  EXPECT_EQ(pids_after({{"target_scope", "pod"}, {"target_entities", {{{"pod_name", "cart-0"}}}}}),
            json({4242, 4243}));
  EXPECT_EQ(
      pids_after({{"target_scope", "workload"}, {"target_entities", {{{"workloadName", "pay"}}}}}),
      json({5000}));
  EXPECT_EQ(
      pids_after({{"target_scope", "pod"}, {"target_entities", {{{"id", "web|shop|pay-1"}}}}}),
      json({5000}));
}

// Issue 43: a bare host's processes, which an agent of ours lists as an entry without container,
// are rows of the process scope and can be targeted; they are no container row and make no
// host a host of containers.
TEST_F(WorkloadApiTest, ProcessesOutsideContainersAreProcessesOfTheirHostNotAContainer) {
  json outside = {{"container_id", ""},
                  {"container_name", ""},
                  {"processes", {process(1, "systemd"), process(777, "postgres")}}};
  beat("bare", {outside});
  json docker = {{"container_id", "c0ffee"},
                 {"container_name", "app"},
                 {"processes", {process(4242, "java")}}};
  beat("h1", {docker, outside});

  Reply processes = get("/api/metrics/profiling/workload_status?scope=process&hostname=bare");
  ASSERT_EQ(processes.status, 200) << processes.body;
  std::set<int> pids;
  for (const json& row : processes.body["rows"]) {
    pids.insert(row["pid"].get<int>());
    EXPECT_TRUE(row["containerName"].is_null()) << row;
  }
  EXPECT_EQ(pids, (std::set<int>{1, 777}));
  Reply containers = get("/api/metrics/profiling/workload_status?scope=container");
  ASSERT_EQ(containers.status, 200) << containers.body;
  ASSERT_EQ(containers.body["rows"].size(), 1u) << containers.body;
  EXPECT_EQ(containers.body["rows"][0]["containerName"], "app");
  EXPECT_EQ(containers.body["tabCounts"]["container"], 1);

  Reply started = profile(
      {{"target_scope", "process"}, {"target_entities", {{{"hostname", "bare"}, {"pid", 777}}}}});
  ASSERT_EQ(started.status, 200) << started.body;
  EXPECT_EQ(beat("bare")["profiling_command"]["combined_config"]["pids"], json({777}));

  Reply services = get("/api/services");
  ASSERT_EQ(services.status, 200) << services.body;
  EXPECT_EQ(services.body[0]["envType"], "containers") << "h1 has a container";
  beat("h1", {outside});
  EXPECT_EQ(get("/api/services").body[0]["envType"], "instances");
}

// A selection that picks nothing is 422 and creates no command.
TEST_F(WorkloadApiTest, NothingResolvedIs422AndNoCommand) {
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(4242, "java")})});
  Reply reply = profile({{"target_scope", "process"}, {"target_entities", {{{"pid", 999999}}}}});
  EXPECT_EQ(reply.status, 422);
  EXPECT_EQ(reply.body["detail"][0]["loc"], json({"body", "target_entities"}));
  EXPECT_EQ(reply.body["detail"][0]["msg"],
            "No active targets were resolved for scope 'process' in service 'web'");
  EXPECT_TRUE(beat("h1")["profiling_command"].is_null());
}

TEST_F(WorkloadApiTest, AHostSilentPastTheActiveWindowIsNotResolved) {
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(1, "java")})});
  now_ += 121s;
  Reply reply =
      profile({{"target_scope", "namespace"}, {"target_entities", {{{"namespace", "shop"}}}}});
  EXPECT_EQ(reply.status, 422) << reply.body;
}

TEST_F(WorkloadApiTest, StopsBySelector) {
  beat("h1",
       {container("app", "shop", "cart-0", "cart", {process(10, "java"), process(11, "gc")})});
  ASSERT_EQ(profile({{"target_hosts", {{"h1", nullptr}}}}).status, 200);
  beat("h1");
  // A process-level stop of a pod's pids; a service-scope stop stops its hosts whole.
  Reply pod_stop = profile({{"request_type", "stop"},
                            {"target_scope", "pod"},
                            {"target_entities", {{{"podName", "cart-0"}}}}});
  ASSERT_EQ(pod_stop.status, 200) << pod_stop.body;
  json stop = beat("h1")["profiling_command"];
  EXPECT_EQ(stop["command_type"], "stop");
  EXPECT_EQ(stop["combined_config"]["pids"], json({10, 11}));
  Reply service_stop = profile({{"request_type", "stop"},
                                {"target_scope", "service"},
                                {"target_entities", {{{"serviceName", "web"}}}}});
  ASSERT_EQ(service_stop.status, 200) << service_stop.body;
  EXPECT_EQ(beat("h1")["profiling_command"]["combined_config"]["stop_level"], "host");
}

// Studio's validation errors: every bad field, each with its loc.
TEST_F(WorkloadApiTest, ValidationNamesEveryBadFieldInDetail) {
  Reply reply = post("/api/metrics/profile_request", {{"service_name", "web"},
                                                      {"request_type", "begin"},
                                                      {"duration", 0},
                                                      {"target_scope", "HOST"},
                                                      {"target_hosts", {{"h1", {1, -2}}}}});
  ASSERT_EQ(reply.status, 422) << reply.body;
  json locs = json::array();
  for (const json& problem : reply.body["detail"]) locs.push_back(problem["loc"]);
  EXPECT_EQ(locs, json({{"body", "request_type"},
                        {"body", "duration"},
                        {"body", "target_hosts", "h1", 1},
                        {"body", "target_scope"}}));
  EXPECT_EQ(reply.body["detail"][0]["type"], "value_error");
  EXPECT_NE(reply.body["message"].get<std::string>().find("request_type"), std::string::npos);

  Reply malformed = call(bhttp::verb::post, "/api/metrics/profile_request", "{\"service_name\":");
  EXPECT_EQ(malformed.status, 422);
  EXPECT_EQ(malformed.body["detail"][0]["loc"][0], "body");
  EXPECT_NE(malformed.body["detail"][0]["msg"].get<std::string>().find("not valid JSON"),
            std::string::npos);
}

// Command ids are opaque, as in Studio.
TEST_F(WorkloadApiTest, ANonUuidLastCommandIdIsAccepted) {
  Reply reply = post("/api/metrics/heartbeat", {{"ip_address", "10.0.0.1"},
                                                {"hostname", "h1"},
                                                {"service_name", "web"},
                                                {"last_command_id", "studio-cmd-7"},
                                                {"received_command_ids", {"studio-cmd-7"}}});
  EXPECT_EQ(reply.status, 200) << reply.body;
}

// A host's heartbeat makes it a host row while it is fresh.
TEST_F(WorkloadApiTest, AHeartbeatMakesAHostRow) {
  beat("h1", {container("app", "team-a", "pod-1", "checkout", {process(1, "java")})});
  Reply reply =
      get("/api/metrics/profiling/workload_status?scope=host&service_name=web&exact_match=true");
  ASSERT_EQ(reply.status, 200) << reply.body;
  ASSERT_EQ(reply.body["rows"].size(), 1u) << reply.body;
  EXPECT_EQ(reply.body["rows"][0]["serviceName"], "web");
  EXPECT_EQ(reply.body["rows"][0]["hostname"], "h1");
  EXPECT_EQ(reply.body["rows"][0]["id"], "web|h1");
  EXPECT_EQ(reply.body["rows"][0]["profilingStatus"], "stopped");
  EXPECT_EQ(reply.body["rows"][0]["commandType"], "N/A");
}

// TabCounts count each scope's groups; activeHosts the hosts.
TEST_F(WorkloadApiTest, TabCountsCountEveryScope) {
  beat("h1",
       {container("app", "team-a", "pod-1", "checkout", {process(1, "java"), process(2, "gc")})});
  Reply reply = get("/api/metrics/profiling/workload_status?scope=service");
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body["tabCounts"], json({{"service", 1},
                                           {"namespace", 1},
                                           {"host", 1},
                                           {"pod", 1},
                                           {"container", 1},
                                           {"process", 2}}));
  EXPECT_EQ(reply.body["activeHosts"], 1);
}

// One row per service, with its hosts counted.
TEST_F(WorkloadApiTest, OneServiceRowForManyHosts) {
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(1, "java")})});
  beat("h2", {container("app", "shop", "cart-1", "cart", {process(1, "java"), process(2, "x")})});
  Reply reply = get("/api/metrics/profiling/workload_status?scope=service");
  ASSERT_EQ(reply.body["rows"].size(), 1u) << reply.body;
  const json& row = reply.body["rows"][0];
  EXPECT_EQ(row["hostCount"], 2);
  EXPECT_EQ(row["podCount"], 2);
  EXPECT_EQ(row["containerCount"], 2);
  EXPECT_EQ(row["processCount"], 3);
  EXPECT_EQ(row["namespaceCount"], 1);
}

// Distinct counts over many namespaces and pods: a pod that two hosts list is one pod, the same
// names in another service are other namespaces and pods.
TEST_F(WorkloadApiTest, CountsAreExactOverManyNamespacesAndPods) {
  json containers = json::array();
  for (int i = 0; i < 40; ++i) {
    containers.push_back(container("c" + std::to_string(i), "ns-" + std::to_string(i % 20),
                                   "pod-" + std::to_string(i % 30), "w",
                                   {process(100 + i, "java")}));
  }
  beat("h1", containers);
  beat("h2", containers);
  beat("h3", containers, "db");
  Reply reply = get("/api/metrics/profiling/workload_status?scope=namespace&page_size=100");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.body["tabCounts"], json({{"service", 2},
                                           {"namespace", 40},
                                           {"host", 3},
                                           {"pod", 80},
                                           {"container", 120},
                                           {"process", 120}}));
  ASSERT_EQ(reply.body["rows"].size(), 40u);
  const json& ns3 = reply.body["rows"][33];  // db's 20; web's ns-0, ns-1, ns-10 … ns-19, ns-2
  EXPECT_EQ(ns3["id"], "web|ns-3");
  EXPECT_EQ(ns3["podCount"], 2) << "pod-3 and pod-23";
  EXPECT_EQ(ns3["containerCount"], 4);
  EXPECT_EQ(ns3["hostCount"], 2);
  Reply pods = get("/api/metrics/profiling/workload_status?scope=pod&page_size=100");
  EXPECT_EQ(pods.body["totalCount"], 80);
}

// A host silent for longer than the window is in no tab.
TEST_F(WorkloadApiTest, AStaleHostIsInNoTab) {
  beat("old", {container("app", "shop", "cart-0", "cart", {process(1, "java")})});
  now_ += 300s;
  beat("new");
  Reply reply = get("/api/metrics/profiling/workload_status?scope=host");
  ASSERT_EQ(reply.body["rows"].size(), 1u) << reply.body;
  EXPECT_EQ(reply.body["rows"][0]["hostname"], "new");
  EXPECT_EQ(reply.body["tabCounts"]["pod"], 0);
  EXPECT_EQ(reply.body["tabCounts"]["process"], 0);
}

// A legacy heartbeat (no inventory) is a host and a service, nothing narrower, and a
// host-scope start reaches it.
TEST_F(WorkloadApiTest, ALegacyHeartbeatStillWorks) {
  ASSERT_EQ(post("/api/metrics/heartbeat", {{"ip_address", "10.0.0.9"},
                                            {"hostname", "legacy"},
                                            {"service_name", "web"},
                                            {"namespace", "own-ns"},
                                            {"pod_name", "agent-pod"}})
                .status,
            200);
  Reply reply = get("/api/metrics/profiling/workload_status?scope=host");
  ASSERT_EQ(reply.body["rows"].size(), 1u);
  EXPECT_EQ(reply.body["tabCounts"]["namespace"], 0) << "the agent's own pod is not inventory";
  EXPECT_EQ(reply.body["tabCounts"]["pod"], 0);
  EXPECT_EQ(reply.body["tabCounts"]["container"], 0);
  ASSERT_EQ(profile({{"target_hosts", {{"legacy", nullptr}}}}).status, 200);
  EXPECT_EQ(beat("legacy")["profiling_command"]["command_type"], "start");
}

// Missing fields leave their scopes out and invent nothing.
TEST_F(WorkloadApiTest, PartialInventoryInventsNoRelationship) {
  json partial = {
      {"container_name", "lone"}, {"namespace", "team-x"}, {"processes", {process(5, "sh")}}};
  beat("h1", json::array({partial}));
  Reply reply = get("/api/metrics/profiling/workload_status?scope=pod");
  EXPECT_TRUE(reply.body["rows"].empty());
  EXPECT_EQ(reply.body["tabCounts"], json({{"service", 1},
                                           {"namespace", 1},
                                           {"host", 1},
                                           {"pod", 0},
                                           {"container", 1},
                                           {"process", 1}}));
}

TEST_F(WorkloadApiTest, RowsOfEachScopeShowWhatIsProfiled) {
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(10, "java"), process(11, "gc")}),
              container("app", "shop", "pay-0", "pay", {process(20, "java")})});
  ASSERT_EQ(profile({{"continuous", true},
                     {"target_scope", "pod"},
                     {"target_entities", {{{"podName", "cart-0"}}}}})
                .status,
            200);
  beat("h1");
  Reply pods = get("/api/metrics/profiling/workload_status?scope=pod");
  ASSERT_EQ(pods.body["rows"].size(), 2u) << pods.body;
  EXPECT_EQ(pods.body["rows"][0]["podName"], "cart-0");
  EXPECT_EQ(pods.body["rows"][0]["profilingStatus"], "active");
  EXPECT_EQ(pods.body["rows"][0]["pids"], json({10, 11}));
  EXPECT_EQ(pods.body["rows"][0]["profilingMode"], "Continuous");
  EXPECT_EQ(pods.body["rows"][0]["workloadName"], "cart");
  EXPECT_EQ(pods.body["rows"][1]["podName"], "pay-0");
  EXPECT_EQ(pods.body["rows"][1]["profilingStatus"], "stopped");

  Reply processes =
      get("/api/metrics/profiling/workload_status?scope=process&profiling_status=ACTIVE");
  ASSERT_EQ(processes.body["rows"].size(), 2u) << processes.body;
  EXPECT_EQ(processes.body["rows"][0]["id"], "web|h1|10");
  EXPECT_EQ(processes.body["rows"][0]["processName"], "java");
  EXPECT_EQ(processes.body["tabCounts"]["process"], 2) << "the filter applies to the counts";

  Reply named = get("/api/metrics/profiling/workload_status?scope=container&process_name=JAV");
  EXPECT_EQ(named.body["rows"].size(), 2u);
  EXPECT_EQ(named.body["rows"][0]["processCount"], 1);

  Reply page = get("/api/metrics/profiling/workload_status?scope=process&page=1&page_size=2");
  EXPECT_EQ(page.body["rows"].size(), 1u);
  EXPECT_EQ(page.body["totalCount"], 3);

  Reply bad = get("/api/metrics/profiling/workload_status?scope=galaxy");
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(bad.body["detail"][0]["loc"], json({"query", "scope"}));
}

// A dry run says what each host would get, and changes nothing.
TEST_F(WorkloadApiTest, ADryRunListsWhatEachHostWouldGet) {
  beat("h1",
       {container("app", "shop", "cart-0", "cart", {process(10, "java"), process(11, "gc")})});
  beat("h2", {container("app", "shop", "cart-1", "cart", {process(20, "java")})});
  ASSERT_EQ(profile({{"target_hosts", {{"h2", nullptr}}}}).status, 200);
  Reply dry = profile({{"dry_run", true},
                       {"target_scope", "namespace"},
                       {"target_entities", {{{"namespace", "shop"}}}}});
  ASSERT_EQ(dry.status, 200) << dry.body;
  EXPECT_EQ(dry.body["plan"], json::parse(R"([
    {"hostname": "h1", "action": "new", "pids": [10, 11]},
    {"hostname": "h2", "action": "merged", "pids": null}])"))
      << "h2's start profiles the whole host already";
  EXPECT_TRUE(dry.body["command_ids"].empty());
  EXPECT_TRUE(beat("h1")["profiling_command"].is_null()) << "a dry run creates no command";
  EXPECT_FALSE(profile({{"target_hosts", {{"h1", nullptr}}}}).body.contains("plan"));
}

// Without a command that lists pids, processes are read only for the hosts a page shows.
TEST_F(WorkloadApiTest, PagesOfPodsAndProcessesListTheirPids) {
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(10, "java"), process(9, "gc")}),
              container("app", "shop", "pay-0", "pay", {process(20, "java")})});
  beat("h2", {container("app", "ops", "job-0", "job", {process(7, "python3")})});
  Reply pods = get("/api/metrics/profiling/workload_status?scope=pod&page=1&page_size=1");
  ASSERT_EQ(pods.body["rows"].size(), 1u) << pods.body;
  EXPECT_EQ(pods.body["rows"][0]["id"], "web|shop|cart-0");
  EXPECT_EQ(pods.body["rows"][0]["pids"], json({9, 10}));
  EXPECT_EQ(pods.body["rows"][0]["processCount"], 2);
  EXPECT_EQ(pods.body["totalCount"], 3);

  Reply containers = get("/api/metrics/profiling/workload_status?scope=container&page_size=1");
  EXPECT_EQ(containers.body["rows"][0]["id"], "web|h1|shop|cart-0|app");
  EXPECT_EQ(containers.body["rows"][0]["pids"], json({9, 10}));

  std::vector<std::string> ids;
  for (int page = 0; page < 3; ++page) {
    Reply processes = get("/api/metrics/profiling/workload_status?scope=process&page_size=2&page=" +
                          std::to_string(page));
    EXPECT_EQ(processes.body["totalCount"], 4);
    for (const json& row : processes.body["rows"]) ids.push_back(row["id"]);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"web|h1|9", "web|h1|10", "web|h1|20", "web|h2|7"}))
      << "by host, then pid as a number";
  Reply past = get("/api/metrics/profiling/workload_status?scope=process&page=9&page_size=2");
  EXPECT_TRUE(past.body["rows"].empty());
}

TEST_F(WorkloadApiTest, HostStatusListsActiveHostsWithTheirCommands) {
  beat("h1");
  beat("h2");
  beat("gone");
  now_ += 200s;
  beat("h1");
  beat("h2");
  ASSERT_EQ(profile({{"target_hosts", {{"h1", {7, 8}}}}}).status, 200);
  Reply all = get("/api/metrics/profiling/host_status?service_name=we");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(all.body["active_count"], 2);
  EXPECT_EQ(all.body["total_count"], 3);
  EXPECT_EQ(all.body["hosts"][0]["hostname"], "h1");
  EXPECT_EQ(all.body["hosts"][0]["pids"], json({7, 8}));
  EXPECT_EQ(all.body["hosts"][0]["profiling_status"], "pending");
  EXPECT_EQ(all.body["hosts"][1]["command_type"], "N/A");
  EXPECT_EQ(all.body["hosts"][1]["profiling_status"], "stopped");
  Reply by_pid = get("/api/metrics/profiling/host_status?pids=8&command_type=start");
  ASSERT_EQ(by_pid.body["hosts"].size(), 1u);
  Reply stopped =
      get("/api/metrics/profiling/"
          "host_status?profiling_status=stopped&service_name=web&exact_match=true");
  ASSERT_EQ(stopped.body["hosts"].size(), 1u);
  EXPECT_EQ(stopped.body["hosts"][0]["hostname"], "h2");
}

// In a bulk, perf events a target host does not support refuse the batch, naming the host
// and what it lacks; a single request goes to the agent (it records the event, perf's software
// fallback for cycles, or fails saying why), as in Studio.
TEST_F(WorkloadApiTest, UnsupportedPerfEventsAre422NamingTheHost) {
  post("/api/metrics/heartbeat", {{"ip_address", "10.0.0.1"},
                                  {"hostname", "h1"},
                                  {"service_name", "web"},
                                  {"perf_supported_events", {"cycles"}}});
  beat("h2");  // reports none
  json perf = {
      {"profiler_configs",
       {{"perf", {{"mode", "enabled_restricted"}, {"events", {"cpu-cycles", "instructions"}}}}}}};
  json cycles_only = {{"profiler_configs", {{"perf", {{"events", {"cpu/cycles/"}}}}}}};
  json disabled = {{"profiler_configs", {{"perf", {{"mode", "disabled"}, {"events", {"x"}}}}}}};
  auto start = [](const std::string& host, const json& args) {
    return json{{"service_name", "web"},
                {"request_type", "start"},
                {"target_hosts", {{host, nullptr}}},
                {"additional_args", args}};
  };
  Reply lacking = post("/api/metrics/profile_request/bulk",
                       {{"requests", {start("h1", cycles_only), start("h1", perf)}}});
  ASSERT_EQ(lacking.status, 422) << lacking.body;
  EXPECT_EQ(lacking.body["detail"][0]["msg"],
            "perf events not supported by 1 target host(s): h1: missing instructions");
  EXPECT_EQ(lacking.body["detail"][0]["loc"],
            json({"body", "requests", 1, "additional_args", "profiler_configs", "perf", "events"}));
  Reply none_reported = post("/api/metrics/profile_request/bulk",
                             {{"requests", {start("h1", cycles_only), start("h2", cycles_only)}}});
  ASSERT_EQ(none_reported.status, 422) << none_reported.body;
  EXPECT_NE(none_reported.body["message"].get<std::string>().find("h2: missing cycles"),
            std::string::npos);
  EXPECT_TRUE(beat("h2")["profiling_command"].is_null()) << "nothing of the batch was submitted";

  Reply fine = post("/api/metrics/profile_request/bulk",
                    {{"requests", {start("h1", cycles_only), start("h2", disabled)}}});
  ASSERT_EQ(fine.status, 200) << fine.body;
  EXPECT_EQ(fine.body["successful_count"], 2);
  EXPECT_EQ(profile({{"target_hosts", {{"h2", nullptr}}}, {"additional_args", perf}}).status, 200)
      << "a single request is the agent's to refuse";
}

TEST_F(WorkloadApiTest, BulkSubmitsEachRequestAndReportsEach) {
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(10, "java")})});
  json requests = {
      {{"service_name", "web"}, {"request_type", "start"}, {"target_hosts", {{"h1", nullptr}}}},
      {{"service_name", "web"},
       {"request_type", "start"},
       {"target_scope", "pod"},
       {"target_entities", {{{"podName", "nope"}}}}},
      {{"service_name", "web"}, {"request_type", "launch"}}};
  Reply dry =
      post("/api/metrics/profile_request/bulk", {{"requests", requests}, {"dry_run", true}});
  ASSERT_EQ(dry.status, 200) << dry.body;
  EXPECT_EQ(dry.body["total_submitted"], 3);
  EXPECT_EQ(dry.body["successful_count"], 1);
  EXPECT_EQ(dry.body["failed_count"], 2);
  EXPECT_TRUE(dry.body["results"][0]["response"]["request_id"].is_null()) << "a dry run";
  EXPECT_TRUE(beat("h1")["profiling_command"].is_null());

  Reply real = post("/api/metrics/profile_request/bulk", {{"requests", requests}});
  ASSERT_EQ(real.status, 200) << real.body;
  const json& results = real.body["results"];
  EXPECT_EQ(results[0]["index"], 0);
  EXPECT_EQ(results[0]["success"], true);
  EXPECT_EQ(results[0]["service_name"], "web");
  EXPECT_EQ(results[0]["response"]["command_ids"].size(), 1u);
  EXPECT_EQ(results[1]["success"], false);
  EXPECT_NE(results[1]["error"].get<std::string>().find("No active targets"), std::string::npos);
  EXPECT_NE(results[2]["error"].get<std::string>().find("request_type"), std::string::npos);
  EXPECT_EQ(beat("h1")["profiling_command"]["command_type"], "start");

  EXPECT_EQ(post("/api/metrics/profile_request/bulk", {{"requests", json::array()}}).status, 422);
  EXPECT_EQ(post("/api/metrics/profile_request/bulk", {{"dry_run", true}}).status, 422);
  json many = json::array();
  for (int i = 0; i < 1001; ++i) many.push_back(requests[0]);
  EXPECT_EQ(post("/api/metrics/profile_request/bulk", {{"requests", many}}).status, 422);
}

json service_subscription(const std::string& type) {
  return {{"request_type", type},
          {"continuous", true},
          {"target_scope", "service"},
          {"stop_level", "host"},
          {"target_entities", {{{"serviceName", "web"}}}}};
}

// A host that comes later under a service subscription is started on its first
// heartbeat, in that heartbeat's answer.
TEST_F(WorkloadApiTest, ALaterHostIsEnrolledOnItsFirstHeartbeat) {
  beat("h1");
  ASSERT_EQ(profile(service_subscription("start")).status, 200);
  EXPECT_EQ(beat("h1")["profiling_command"]["command_type"], "start");
  json first = beat("h2");
  EXPECT_EQ(first["profiling_command"]["command_type"], "start") << first;
  EXPECT_EQ(first["profiling_command"]["combined_config"]["continuous"], true);
  EXPECT_EQ(beat("h2")["command_id"], first["command_id"]) << "enrolled once";
}

// Without a subscription a new host gets nothing.
TEST_F(WorkloadApiTest, WithoutASubscriptionANewHostGetsNothing) {
  beat("h1");
  ASSERT_EQ(profile({{"target_hosts", {{"h1", nullptr}}}, {"continuous", true}}).status, 200);
  EXPECT_TRUE(beat("h2")["profiling_command"].is_null());
}

// A newer service-scope stop ends the subscription.
TEST_F(WorkloadApiTest, AServiceScopeStopEndsTheSubscription) {
  beat("h1");
  ASSERT_EQ(profile(service_subscription("start")).status, 200);
  ASSERT_EQ(profile(service_subscription("stop")).status, 200);
  json answer = beat("h2");
  EXPECT_TRUE(answer["profiling_command"].is_null()) << answer;
  EXPECT_EQ(beat("h1")["profiling_command"]["command_type"], "stop");
  json listed = get("/api/subscriptions").body["subscriptions"];
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["active"], false);
  EXPECT_FALSE(listed[0]["ended_by"].is_null());
}

// A host's own command stands under a subscription: auto-enrollment leaves it alone.
TEST_F(WorkloadApiTest, AnExplicitCommandIsNotOverwritten) {
  beat("h1");
  ASSERT_EQ(profile({{"target_hosts", {{"h1", {42}}}}, {"continuous", true}}).status, 200);
  json own = beat("h1");
  // h1 goes quiet past the active window: the subscription made now does not reach it.
  now_ += 150s;
  beat("h2");
  ASSERT_EQ(profile(service_subscription("start")).status, 200);
  json back = beat("h1");
  EXPECT_EQ(back["command_id"], own["command_id"]) << back;
  EXPECT_EQ(back["profiling_command"]["combined_config"]["pids"], json({42}));
  EXPECT_EQ(beat("h1")["command_id"], own["command_id"]);
}

// Beyond Studio: a pod-scope subscription follows the pods of a workload as they move between
// three hosts over 20 heartbeats: at every moment each pod's processes are profiled on the host
// that runs them, and nothing else is.
TEST_F(WorkloadApiTest, ASubscriptionFollowsPodsAsTheyMove) {
  const std::vector<std::string> hosts = {"h1", "h2", "h3"};
  for (const std::string& host : hosts) beat(host, json::array());
  ASSERT_EQ(profile({{"continuous", true},
                     {"target_scope", "workload"},
                     {"target_entities", {{{"namespace", "shop"}, {"workloadName", "cart"}}}}})
                .status,
            422)
      << "no cart pod yet: nothing to resolve";
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(100, "java")})});
  ASSERT_EQ(profile({{"continuous", true},
                     {"target_scope", "workload"},
                     {"target_entities", {{{"namespace", "shop"}, {"workloadName", "cart"}}}}})
                .status,
            200);
  std::mt19937 random(7);
  int next_pid = 1000;
  for (int round = 0; round < 20; ++round) {
    // Three cart pods and a pay pod, each on a host drawn at random, with new pids.
    std::map<std::string, json> inventory;
    std::map<std::string, std::set<int>> expected;
    for (const std::string& host : hosts) inventory[host] = json::array();
    for (int pod = 0; pod < 4; ++pod) {
      const std::string& host = hosts[random() % hosts.size()];
      bool cart = pod < 3;
      int pid = next_pid++;
      inventory[host].push_back(
          container("app", "shop", (cart ? "cart-" : "pay-") + std::to_string(pod),
                    cart ? "cart" : "pay", {process(pid, "java"), process(pid + 500, "gc")}));
      if (cart) expected[host].insert({pid, pid + 500});
    }
    for (const std::string& host : hosts) {
      json command = beat(host, inventory[host])["profiling_command"];
      std::set<int> profiled;
      bool whole_host = false;
      if (command.is_object() && command["command_type"] == "start") {
        const json& config = command["combined_config"];
        if (config.contains("pids")) {
          for (const json& pid : config["pids"]) profiled.insert(pid.get<int>());
        } else {
          whole_host = true;
        }
      }
      EXPECT_FALSE(whole_host) << "round " << round << " " << host;
      EXPECT_EQ(profiled, expected[host]) << "round " << round << " " << host << ": " << command;
    }
  }
  json listed = get("/api/subscriptions").body["subscriptions"];
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["target_scope"], "workload");
  EXPECT_EQ(listed[0]["target_entities"],
            json({{{"namespace", "shop"}, {"workloadName", "cart"}}}));
  EXPECT_EQ(listed[0]["covers"]["pid_count"], 6);
}

// Beyond Studio: a host stopped by name is opted out of the subscription for good; the others
// go on.
TEST_F(WorkloadApiTest, AHostStoppedByNameIsOptedOutOfTheSubscription) {
  beat("h1", {container("app", "shop", "cart-0", "cart", {process(10, "java")})});
  beat("h2", {container("app", "shop", "cart-1", "cart", {process(20, "java")})});
  ASSERT_EQ(profile({{"continuous", true},
                     {"target_scope", "pod"},
                     {"target_entities", {{{"podName", "cart-0"}}, {{"podName", "cart-1"}}}}})
                .status,
            200);
  EXPECT_EQ(beat("h1")["profiling_command"]["command_type"], "start");
  ASSERT_EQ(
      profile(
          {{"request_type", "stop"}, {"stop_level", "host"}, {"target_hosts", {{"h1", nullptr}}}})
          .status,
      200);
  EXPECT_EQ(beat("h1")["profiling_command"]["command_type"], "stop");
  // New processes in its pod: still left alone.
  json moved = beat("h1", {container("app", "shop", "cart-0", "cart",
                                     {process(10, "java"), process(11, "java")})});
  EXPECT_EQ(moved["profiling_command"]["command_type"], "stop") << moved;
  json other = beat("h2", {container("app", "shop", "cart-1", "cart",
                                     {process(20, "java"), process(21, "java")})});
  EXPECT_EQ(other["profiling_command"]["combined_config"]["pids"], json({20, 21}));
  json listed = get("/api/subscriptions").body["subscriptions"];
  EXPECT_EQ(listed[0]["opted_out_hosts"], json({"h1"}));
  EXPECT_EQ(listed[0]["covers"]["hosts"], json({{"h2", {20, 21}}}));
}

}  // namespace
}  // namespace dormant::server::api
