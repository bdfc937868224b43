#include "wire/protocol.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/uuid.h"
#include "wire/command_config.h"
#include "wire/ids.h"
#include "wire/json_fields.h"
#include "wire/profiling_request.h"

namespace dormant::wire {
namespace {

using nlohmann::json;

constexpr const char* kCommandId = "0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11";
constexpr const char* kOtherId = "9F6A1D2C-8B3E-4C5D-A6E7-F8091A2B3C4D";

template <typename T>
std::string error_of(const Result<T>& result) {
  return result.ok() ? "(accepted)" : result.error().message();
}

json deep_array(int levels) {
  json value = json::array();
  for (int i = 1; i < levels; ++i) value = json::array({std::move(value)});
  return value;
}

// Characters that a message may contain and still be logged and sent back in JSON safely.
bool is_printable_ascii(const std::string& text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Identifiers

TEST(Ids, UuidCanonicalFormEitherCase) {
  EXPECT_TRUE(is_uuid(kCommandId));
  EXPECT_TRUE(is_uuid(kOtherId));
  EXPECT_FALSE(is_uuid(""));
  EXPECT_FALSE(is_uuid("abc"));
  EXPECT_FALSE(is_uuid("0b5e7c5a3f7e4a439a2c6f0d2c1b9e11"));        // no dashes
  EXPECT_FALSE(is_uuid("{0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11}"));  // braces
  EXPECT_FALSE(is_uuid("0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e1g"));    // not hex
  EXPECT_FALSE(is_uuid("0b5e7c5a-3f7e4-a43-9a2c-6f0d2c1b9e11"));    // dash misplaced
  EXPECT_FALSE(is_uuid(std::string_view("0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e1\0", 36)));
}

TEST(Ids, IpAddressV4AndV6) {
  EXPECT_TRUE(is_ip_address("10.0.0.1"));
  EXPECT_TRUE(is_ip_address("127.0.0.1"));
  EXPECT_TRUE(is_ip_address("::1"));
  EXPECT_TRUE(is_ip_address("2001:db8::8a2e:370:7334"));
  EXPECT_TRUE(is_ip_address("::ffff:10.0.0.1"));
  EXPECT_FALSE(is_ip_address(""));
  EXPECT_FALSE(is_ip_address("10.0.0"));
  EXPECT_FALSE(is_ip_address("10.0.0.256"));
  EXPECT_FALSE(is_ip_address("10.0.0.0/8"));
  EXPECT_FALSE(is_ip_address("fe80::1%eth0"));
  EXPECT_FALSE(is_ip_address("web-01.example.com"));
  EXPECT_FALSE(is_ip_address(std::string_view("10.0.0.1\0junk", 13)));
  EXPECT_FALSE(is_ip_address(std::string(100, '1')));
}

TEST(Ids, RandomUuidIsVersion4) {
  std::string first = random_uuid();
  std::string second = random_uuid();
  EXPECT_TRUE(is_uuid(first)) << first;
  EXPECT_NE(first, second);
  EXPECT_EQ(first[14], '4');
  EXPECT_NE(std::string("89ab").find(first[19]), std::string::npos) << first;
  for (char c : first) EXPECT_FALSE(c >= 'A' && c <= 'F') << first;
}

// ---------------------------------------------------------------------------------------------
// JSON helpers

TEST(JsonFields, QuotedTextIsEscapedAndShortened) {
  EXPECT_EQ(single_quoted("abc"), "'abc'");
  EXPECT_EQ(single_quoted("it's \\ \"x\""), "'it\\'s \\\\ \"x\"'");
  EXPECT_EQ(single_quoted(std::string_view("a\0b\n\t", 5)), "'a\\x00b\\n\\t'");
  EXPECT_EQ(single_quoted("h\xc3\xa9"), "'h\\xc3\\xa9'");
  EXPECT_EQ(single_quoted(std::string(100, 'x')), "'" + std::string(64, 'x') + "'... (100 bytes)");
}

TEST(JsonFields, ParsesTextWithoutThrowing) {
  auto parsed = parse_json_text(R"({"a": [1, 2]})", "body");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ((*parsed)["a"][1], 2);
  EXPECT_EQ(error_of(parse_json_text("{\"a\": tru}", "heartbeat")),
            "heartbeat: not valid JSON (error at byte 10)");
  EXPECT_FALSE(parse_json_text("", "body").ok());
  // nlohmann reports a number beyond a double as out_of_range, not as a parse error.
  EXPECT_EQ(error_of(parse_json_text(R"({"duration": 1e999})", "profile_request")),
            "profile_request: not valid JSON (a number too large for a double, such as 1e999)");
  EXPECT_FALSE(parse_json_text("5e1924", "body").ok());
  EXPECT_FALSE(parse_json_text("{\"a\": \"\xff\"}", "body").ok());  // invalid UTF-8
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  auto nested = parse_json_text(deep, "body");
  ASSERT_TRUE(nested.ok());
  json body = json::object();
  body["a"] = std::move(*nested);  // moved: a copy would recurse 100000 deep
  EXPECT_EQ(error_of(check_body(body, "body")), "body: nested deeper than 64 levels");
}

// ---------------------------------------------------------------------------------------------
// Heartbeat request (docs/protocol.md, "Heartbeat")

// What the stock gProfiler agent sends, with the workload inventory.
json stock_heartbeat() {
  return json::parse(R"({
    "ip_address": "10.1.2.3", "hostname": "web-01", "service_name": "web",
    "last_command_id": null, "status": "active", "timestamp": "2026-08-05T10:11:12.123456",
    "received_command_ids": [], "executed_command_ids": [],
    "perf_supported_events": ["cycles", "instructions"],
    "agent_version": "1.53.1", "run_mode": "k8s", "namespace": "prod", "pod_name": "gprofiler-x1",
    "containers": [{"container_id": "abc", "container_name": "nginx", "runtime": "containerd",
                    "namespace": "prod", "pod_name": "web-7d9f", "workload_name": "web",
                    "workload_kind": "k8s",
                    "processes": [{"pid": 12, "process_name": "nginx"}]}]
  })");
}

HeartbeatRequest full_heartbeat() {
  HeartbeatRequest request;
  request.ip_address = "2001:db8::1";
  request.hostname = "web-01";
  request.service_name = "web";
  request.last_command_id = kCommandId;
  request.status = HostStatus::kIdle;
  request.timestamp = "2026-08-05T10:11:12";
  request.received_command_ids = {kCommandId, kOtherId};
  request.executed_command_ids = {kCommandId};
  request.perf_supported_events = {"cycles"};
  request.agent_version = "0.1.0";
  request.run_mode = "standalone_executable";
  request.pod_namespace = "prod";
  request.pod_name = "web-7d9f";
  request.containers = {{.container_id = "abc", .container_name = "nginx"}};
  request.agent_health = {{"idle_audit", {{"open_fds", 7}}}, {"upload_failures", 2}};
  request.extra = {{"future_field", {1, 2, 3}}};
  return request;
}

TEST(HeartbeatRequest, StockAgentBodyParses) {
  auto parsed = parse_heartbeat_request(stock_heartbeat());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->ip_address, "10.1.2.3");
  EXPECT_EQ(parsed->hostname, "web-01");
  EXPECT_EQ(parsed->service_name, "web");
  EXPECT_FALSE(parsed->last_command_id);
  EXPECT_EQ(parsed->status, HostStatus::kActive);
  EXPECT_EQ(parsed->timestamp, "2026-08-05T10:11:12.123456");
  EXPECT_EQ(parsed->perf_supported_events, (std::vector<std::string>{"cycles", "instructions"}));
  EXPECT_EQ(parsed->agent_version, "1.53.1");
  EXPECT_EQ(parsed->run_mode, "k8s");
  EXPECT_EQ(parsed->pod_namespace, "prod");
  EXPECT_EQ(parsed->pod_name, "gprofiler-x1");
  EXPECT_EQ(to_json(parsed->containers), stock_heartbeat()["containers"]);
  EXPECT_TRUE(parsed->extra.empty());
}

TEST(HeartbeatRequest, EveryFieldRoundTrips) {
  HeartbeatRequest request = full_heartbeat();
  json body = to_json(request);
  EXPECT_EQ(body["namespace"], "prod");
  EXPECT_EQ(body["status"], "idle");
  EXPECT_EQ(body["future_field"], json({1, 2, 3}));  // unknown fields go back on top
  auto parsed = parse_heartbeat_request(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(*parsed, request);
}

// Ours: a digest in place of the list. Sent alone, it is read; beside a list, the list wins.
TEST(HeartbeatRequest, AContainersDigestGoesInPlaceOfTheList) {
  HeartbeatRequest request = full_heartbeat();
  request.containers_digest = std::string(64, 'a');
  request.containers_text = std::make_shared<const std::string>("[]");
  json body = json::parse(heartbeat_body_text(request));
  EXPECT_FALSE(body.contains("containers"));
  EXPECT_EQ(body["containers_digest"], request.containers_digest);
  auto parsed = parse_heartbeat_request(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->containers_digest, request.containers_digest);
  EXPECT_TRUE(parsed->containers.empty());
  EXPECT_FALSE(parsed->extra.contains("containers_digest"));

  body["containers"] = json::array();
  auto both = parse_heartbeat_request(body);
  ASSERT_TRUE(both.ok());
  EXPECT_FALSE(both->containers_digest);

  body.erase("containers");
  for (const json& bad : {json(7), json(""), json(std::string(300, 'a'))}) {
    body["containers_digest"] = bad;
    auto refused = parse_heartbeat_request(body);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().message().find("containers_digest"), std::string::npos);
  }
}

TEST(HeartbeatRequest, CommandIdsAreOpaqueAsInStudio) {
  json body = stock_heartbeat();
  body["last_command_id"] = "cmd-42";
  body["received_command_ids"] = {"cmd-41", "cmd-42"};
  body["executed_command_ids"] = {"41"};
  auto parsed = parse_heartbeat_request(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->last_command_id, "cmd-42");
  EXPECT_EQ(parsed->received_command_ids, (std::vector<std::string>{"cmd-41", "cmd-42"}));
}

TEST(HeartbeatRequest, ContainersTakeCamelCaseAndAreKeptInSnakeCase) {
  json body = stock_heartbeat();
  body["containers"] = json::parse(R"([
    {"containerId": "c1", "containerName": "app", "runtime": "cri-o", "namespace": "shop",
     "podName": "cart-0", "workloadName": "cart", "workloadKind": "StatefulSet",
     "processes": [{"pid": 7, "processName": "java"}]},
    {"container_name": "bare", "pod_name": null}])");
  auto parsed = parse_heartbeat_request(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  std::vector<ReportedContainer> expected = {{.container_id = "c1",
                                              .container_name = "app",
                                              .runtime = "cri-o",
                                              .pod_namespace = "shop",
                                              .pod_name = "cart-0",
                                              .workload_name = "cart",
                                              .workload_kind = "StatefulSet",
                                              .processes = {{7, "java"}}},
                                             {.container_name = "bare"}};
  EXPECT_EQ(parsed->containers, expected);
  EXPECT_EQ(to_json(parsed->containers), json::parse(R"([
    {"container_id": "c1", "container_name": "app", "runtime": "cri-o", "namespace": "shop",
     "pod_name": "cart-0", "workload_name": "cart", "workload_kind": "StatefulSet",
     "processes": [{"pid": 7, "process_name": "java"}]},
    {"container_name": "bare", "processes": []}])"));
}

TEST(HeartbeatRequest, EveryBadContainerFieldIsNamed) {
  json body = stock_heartbeat();
  body["containers"] = json::parse(R"([
    {"container_name": 5, "processes": [{"pid": 0, "process_name": "x"}, {"pid": 3}]},
    "nope"])");
  auto parsed = parse_heartbeat_request(body);
  ASSERT_FALSE(parsed.ok());
  std::vector<Error::Problem> expected = {
      {"containers[0].container_name", "must be a string"},
      {"containers[0].processes[0].pid", "0 is not between 1 and 4194304"},
  };
  // The list stops at its first bad item; the item's own fields are all named.
  ASSERT_GE(parsed.error().problems().size(), 2u);
  EXPECT_EQ(parsed.error().problems()[0], expected[0]);
  EXPECT_EQ(parsed.error().problems()[1].where, expected[1].where);
}

TEST(HeartbeatRequest, DefaultsForAMinimalBody) {
  auto parsed = parse_heartbeat_request(
      {{"ip_address", "127.0.0.1"}, {"hostname", "h"}, {"service_name", "s"}});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  HeartbeatRequest expected;
  expected.ip_address = "127.0.0.1";
  expected.hostname = "h";
  expected.service_name = "s";
  EXPECT_EQ(*parsed, expected);
  EXPECT_EQ(parsed->status, HostStatus::kActive);
  EXPECT_TRUE(parsed->containers.empty());
}

TEST(HeartbeatRequest, WritesOptionalsAsNullAndLeavesOutEmptyHealth) {
  HeartbeatRequest request;
  request.ip_address = "10.0.0.1";
  request.hostname = "h";
  request.service_name = "s";
  json body = to_json(request);
  EXPECT_TRUE(body["last_command_id"].is_null());
  EXPECT_TRUE(body["timestamp"].is_null());
  EXPECT_TRUE(body["namespace"].is_null());
  EXPECT_EQ(body["status"], "active");
  EXPECT_EQ(body["received_command_ids"], json::array());
  EXPECT_FALSE(body.contains("agent_health"));
}

TEST(HeartbeatRequest, KeepsUnknownFieldsInExtra) {
  json body = stock_heartbeat();
  body["kernel"] = "6.1";
  body["gpu"] = {{"count", 8}};
  auto parsed = parse_heartbeat_request(body);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->extra, json({{"kernel", "6.1"}, {"gpu", {{"count", 8}}}}));
}

struct FieldCase {
  std::string field;
  json value;
  std::string message;
};

void expect_heartbeat_error(const FieldCase& c) {
  json body = stock_heartbeat();
  if (c.value.is_discarded()) {
    body.erase(c.field);
  } else {
    body[c.field] = c.value;
  }
  EXPECT_EQ(error_of(parse_heartbeat_request(body)), c.message) << c.field << " = " << c.value;
}

const json kAbsent = json::value_t::discarded;

TEST(HeartbeatRequest, ValidationErrorsNameTheField) {
  std::vector<FieldCase> cases = {
      {"ip_address", "10.0.0", "ip_address: '10.0.0' is not an IP address"},
      {"ip_address", kAbsent, "ip_address: required"},
      {"ip_address", 10, "ip_address: must be a string"},
      {"hostname", kAbsent, "hostname: required"},
      {"hostname", nullptr, "hostname: required"},
      {"hostname", json::array(), "hostname: must be a string"},
      {"hostname", "", "hostname: must not be empty"},
      {"hostname", "web\n01", "hostname: 'web\\n01' contains a control character"},
      {"service_name", kAbsent, "service_name: required"},
      {"last_command_id", "", "last_command_id: must not be empty"},
      {"status", "busy", "status: must be one of active, idle, error, offline"},
      {"status", 1, "status: must be one of active, idle, error, offline"},
      {"timestamp", 1700000000, "timestamp: must be a string"},
      {"received_command_ids",
       {kCommandId, kOtherId, kCommandId, "a\tb"},
       "received_command_ids[3]: 'a\\tb' contains a control character"},
      {"received_command_ids", kCommandId, "received_command_ids: must be a list"},
      {"executed_command_ids", {nullptr}, "executed_command_ids[0]: must be a string"},
      {"perf_supported_events", {"cycles", 3}, "perf_supported_events[1]: must be a string"},
      {"agent_version", 1.5, "agent_version: must be a string"},
      {"run_mode", true, "run_mode: must be a string"},
      {"namespace", json::object(), "namespace: must be a string"},
      {"pod_name", 0, "pod_name: must be a string"},
      {"containers", json::object(), "containers: must be a list"},
      {"containers", {"nginx"}, "containers[0]: must be an object"},
      {"containers",
       {{{"container_name", "a"}}, {{"container_id", "b"}}},
       "containers[1].container_name: required"},
      {"containers", {{{"container_name", 5}}}, "containers[0].container_name: must be a string"},
      {"agent_health", "ok", "agent_health: must be an object"},
  };
  for (const FieldCase& c : cases) expect_heartbeat_error(c);
}

TEST(HeartbeatRequest, BodyMustBeAnObjectOfBoundedDepth) {
  EXPECT_EQ(error_of(parse_heartbeat_request(json::array())), "heartbeat: must be an object");
  EXPECT_EQ(error_of(parse_heartbeat_request("hello")), "heartbeat: must be an object");
  json body = stock_heartbeat();
  body["junk"] = deep_array(100000);
  EXPECT_EQ(error_of(parse_heartbeat_request(body)), "heartbeat: nested deeper than 64 levels");
  body["junk"] = deep_array(63);
  EXPECT_TRUE(parse_heartbeat_request(body).ok());
}

TEST(HeartbeatRequest, HostileStringsAreQuotedSafely) {
  json body = stock_heartbeat();
  body["ip_address"] = std::string("10.0.0.1\0' OR 1=1 --\xe2\x80\x8b", 23);
  std::string message = error_of(parse_heartbeat_request(body));
  EXPECT_EQ(message,
            "ip_address: '10.0.0.1\\x00\\' OR 1=1 --\\xe2\\x80\\x8b' is not an IP address");
  EXPECT_TRUE(is_printable_ascii(message));
}

// ---------------------------------------------------------------------------------------------
// Heartbeat response (docs/protocol.md, "Heartbeat")

TEST(HeartbeatResponse, StudioCommandParses) {
  auto parsed = parse_heartbeat_response(json::parse(R"({
    "success": true, "message": "Heartbeat received. New profiling command available.",
    "command_id": "0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11",
    "profiling_command": {"command_type": "stop", "combined_config": {"stop_level": "host"}}
  })"));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_TRUE(parsed->success);
  EXPECT_EQ(parsed->message, "Heartbeat received. New profiling command available.");
  EXPECT_EQ(parsed->command_id, kCommandId);
  ASSERT_TRUE(parsed->profiling_command);
  EXPECT_EQ(parsed->profiling_command->command_type, "stop");
  EXPECT_EQ(parsed->profiling_command->combined_config, json({{"stop_level", "host"}}));
}

TEST(HeartbeatResponse, StudioAnswersWithoutACommand) {
  for (
      const char* text : {
          R"({"success": true, "message": "Heartbeat received. No profiling commands.",
               "profiling_command": null, "command_id": null})",
          R"({"success": true, "message": "Heartbeat received, but failed to check for commands."})",
      }) {
    auto parsed = parse_heartbeat_response(json::parse(text));
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    EXPECT_FALSE(parsed->profiling_command) << text;
    EXPECT_FALSE(parsed->command_id) << text;
  }
}

TEST(HeartbeatResponse, CommandOnlyWhenSuccessAndNonEmpty) {
  json command = {{"command_type", "start"}, {"combined_config", json::object()}};
  auto refused = parse_heartbeat_response({{"success", false},
                                           {"message", "no"},
                                           {"command_id", kCommandId},
                                           {"profiling_command", command}});
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->profiling_command);
  // Not looked at when success is false, however malformed.
  EXPECT_TRUE(parse_heartbeat_response({{"success", false}, {"profiling_command", 5}}).ok());
  auto empty = parse_heartbeat_response(
      {{"success", true}, {"command_id", kCommandId}, {"profiling_command", json::object()}});
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->profiling_command);
}

TEST(HeartbeatResponse, CommandTypeDefaultsToStartAndConfigToEmpty) {
  auto parsed =
      parse_heartbeat_response({{"success", true},
                                {"command_id", kCommandId},
                                {"profiling_command", {{"combined_config", {{"duration", 30}}}}}});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->profiling_command->command_type, "start");
  auto bare = parse_heartbeat_response({{"success", true},
                                        {"command_id", kCommandId},
                                        {"profiling_command", {{"command_type", "stop"}}}});
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->profiling_command->combined_config, json::object());
  EXPECT_EQ(bare->message, "");
}

TEST(HeartbeatResponse, UnknownCommandTypeIsKeptForTheAgentToRefuse) {
  auto parsed = parse_heartbeat_response({{"success", true},
                                          {"command_id", kCommandId},
                                          {"profiling_command", {{"command_type", "restart"}}}});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->profiling_command->command_type, "restart");
  EXPECT_EQ(error_of(parse_combined_config(parsed->profiling_command->combined_config,
                                           parsed->profiling_command->command_type)),
            "command_type: must be one of start, stop");
}

TEST(HeartbeatResponse, RoundTripsWithAndWithoutCommand) {
  HeartbeatResponse with_command;
  with_command.message = "Heartbeat received. New profiling command available.";
  with_command.command_id = kCommandId;
  with_command.profiling_command =
      ProfilingCommand{"start", {{"duration", 60}, {"pids", {1, 2}}, {"continuous", true}}};
  auto parsed = parse_heartbeat_response(to_json(with_command));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(*parsed, with_command);

  HeartbeatResponse without;
  without.message = "Heartbeat received. No profiling commands.";
  json body = to_json(without);
  EXPECT_TRUE(body["command_id"].is_null());
  EXPECT_TRUE(body["profiling_command"].is_null());
  EXPECT_FALSE(body.contains("containers_digest"));
  auto parsed_without = parse_heartbeat_response(body);
  ASSERT_TRUE(parsed_without.ok());
  EXPECT_EQ(*parsed_without, without);

  without.containers_digest = std::string(64, 'b');
  auto with_digest = parse_heartbeat_response(to_json(without));
  ASSERT_TRUE(with_digest.ok());
  EXPECT_EQ(*with_digest, without);
}

TEST(HeartbeatResponse, MalformedBodiesAreRefused) {
  json command = {{"command_type", "start"}, {"combined_config", json::object()}};
  struct Case {
    json body;
    std::string message;
  };
  std::vector<Case> cases = {
      {json::array(), "heartbeat response: must be an object"},
      {{{"message", "hi"}}, "success: required"},
      {{{"success", "yes"}}, "success: must be true or false"},
      {{{"success", 1}}, "success: must be true or false"},
      {{{"success", true}, {"message", 5}}, "message: must be a string"},
      {{{"success", true}, {"command_id", "abc"}}, "command_id: 'abc' is not a UUID"},
      {{{"success", true}, {"profiling_command", command}},
       "command_id: required with a profiling_command"},
      {{{"success", true}, {"command_id", kCommandId}, {"profiling_command", "start"}},
       "profiling_command: must be an object"},
      {{{"success", true},
        {"command_id", kCommandId},
        {"profiling_command", {{"command_type", 5}}}},
       "profiling_command.command_type: must be a string"},
      {{{"success", true},
        {"command_id", kCommandId},
        {"profiling_command", {{"combined_config", {1, 2}}}}},
       "profiling_command.combined_config: must be an object"},
      {{{"success", true}, {"command_id", kCommandId}, {"profiling_command", deep_array(500)}},
       "heartbeat response: nested deeper than 64 levels"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(error_of(parse_heartbeat_response(c.body)), c.message) << c.body.dump();
  }
}

// ---------------------------------------------------------------------------------------------
// Command completion (docs/protocol.md, "Command completion")

TEST(CommandCompletion, StockAgentBodyParses) {
  auto parsed = parse_command_completion(json::parse(R"({
    "command_id": "0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11", "hostname": "web-01",
    "status": "completed", "execution_time": 0, "error_message": null, "results_path": null})"));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->command_id, kCommandId);
  EXPECT_EQ(parsed->hostname, "web-01");
  EXPECT_EQ(parsed->status, CompletionStatus::kCompleted);
  EXPECT_EQ(parsed->execution_time, 0);
  EXPECT_FALSE(parsed->error_message);
  EXPECT_FALSE(parsed->results_path);
}

TEST(CommandCompletion, EveryFieldRoundTrips) {
  CommandCompletion completion{kOtherId,
                               "db-7",
                               CompletionStatus::kFailed,
                               12,
                               "perf: permission denied",
                               "/var/lib/dormant/x.col"};
  json body = to_json(completion);
  EXPECT_EQ(body["status"], "failed");
  EXPECT_TRUE(body["execution_time"].is_number_integer());
  auto parsed = parse_command_completion(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(*parsed, completion);
}

TEST(CommandCompletion, ExecutionTimeTakesFloatsAndIsWrittenWhole) {
  json body = to_json(CommandCompletion{kCommandId, "h", CompletionStatus::kCompleted, 0, {}, {}});
  body["execution_time"] = 1.6;
  auto parsed = parse_command_completion(body);
  ASSERT_TRUE(parsed.ok());
  EXPECT_DOUBLE_EQ(parsed->execution_time, 1.6);
  EXPECT_EQ(to_json(*parsed)["execution_time"], 2);
  body.erase("execution_time");
  EXPECT_EQ(parse_command_completion(body)->execution_time, 0);
}

TEST(CommandCompletion, ValidationErrors) {
  json valid = to_json(CommandCompletion{kCommandId, "h", CompletionStatus::kCompleted, 0, {}, {}});
  std::vector<FieldCase> cases = {
      {"command_id", kAbsent, "command_id: required"},
      {"command_id", "", "command_id: must not be empty"},
      {"hostname", kAbsent, "hostname: required"},
      {"status", kAbsent, "status: required"},
      {"status", "done", "status: must be one of completed, failed"},
      {"execution_time", -1, "execution_time: -1 is not between 0 and 31622400"},
      {"execution_time", 1e300, "execution_time: 1e+300 is not between 0 and 31622400"},
      {"execution_time", "5", "execution_time: must be a number"},
      {"error_message", 5, "error_message: must be a string"},
      {"results_path", json::array(), "results_path: must be a string"},
  };
  for (const FieldCase& c : cases) {
    json body = valid;
    if (c.value.is_discarded()) {
      body.erase(c.field);
    } else {
      body[c.field] = c.value;
    }
    EXPECT_EQ(error_of(parse_command_completion(body)), c.message) << c.field;
  }
  EXPECT_EQ(error_of(parse_command_completion(nullptr)), "command completion: must be an object");
}

// ---------------------------------------------------------------------------------------------
// Profile upload (docs/protocol.md, "Profile upload")

TEST(ProfileUpload, EveryFieldRoundTrips) {
  ProfileUpload upload{"2026-08-05T10:00:00",
                       "2026-08-05T10:01:00",
                       "web-01",
                       "# {\"metadata\":{}}\n0;;python;main 3\n",
                       12.5,
                       40.25,
                       1785000000.5,
                       123456789012};
  auto parsed = parse_profile_upload(to_json(upload));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(*parsed, upload);
}

TEST(ProfileUpload, NoGpidIsTheEmptyString) {
  ProfileUpload upload{"a", "b", "h", "# {}\n", 0, 0, 0, std::nullopt};
  json body = to_json(upload);
  EXPECT_EQ(body["gpid"], "");
  auto parsed = parse_profile_upload(body);
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->gpid);
  body.erase("gpid");
  EXPECT_FALSE(parse_profile_upload(body)->gpid);
  body["gpid"] = 7.0;
  EXPECT_EQ(parse_profile_upload(body)->gpid, 7);
}

// gProfiler's agent writes spawn_time as naive UTC text (utcfromtimestamp().isoformat()), and
// Studio answers gpid as a number that an agent may send back as its digits.
TEST(ProfileUpload, TheStockAgentsTextFormsAreRead) {
  json body = to_json(ProfileUpload{"a", "b", "h", "# {}\n", 1, 2, 3, 4});
  body["spawn_time"] = "2026-11-28T00:21:08";
  body["gpid"] = "123";
  auto parsed = parse_profile_upload(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->spawn_time, 1795825268.0);
  EXPECT_EQ(parsed->gpid, 123);
  body["spawn_time"] = "2026-11-28T02:21:08.5+02:00";
  EXPECT_EQ(parse_profile_upload(body)->spawn_time, 1795825268.5);
}

TEST(ProfileUpload, ValidationErrors) {
  json valid = to_json(ProfileUpload{"a", "b", "h", "# {}\n", 1, 2, 3, 4});
  std::vector<FieldCase> cases = {
      {"start_time", kAbsent, "start_time: required"},
      {"end_time", 5, "end_time: must be a string"},
      {"hostname", "", "hostname: must not be empty"},
      {"profile", kAbsent, "profile: required"},
      {"profile", json::array(), "profile: must be a string"},
      {"cpu_avg", "12", "cpu_avg: must be a number"},
      {"mem_avg", -1, "mem_avg: -1 is less than 0"},
      {"spawn_time", true, "spawn_time: must be an ISO-8601 time or a number of seconds"},
      {"spawn_time", "2026-13-01T00:00:00",
       "spawn_time: '2026-13-01T00:00:00' must be an ISO-8601 time or a number of seconds"},
      {"spawn_time", -1, "spawn_time: -1 is less than 0"},
      {"gpid", "12a", "gpid: must be a non-negative integer or \"\""},
      {"gpid", "-3", "gpid: must be a non-negative integer or \"\""},
      {"gpid", "abc", "gpid: must be a non-negative integer or \"\""},
      {"gpid", -1, "gpid: must be a non-negative integer or \"\""},
      {"gpid", 1.5, "gpid: must be a non-negative integer or \"\""},
      {"gpid", 18446744073709551615ULL, "gpid: must be a non-negative integer or \"\""},
  };
  for (const FieldCase& c : cases) {
    json body = valid;
    if (c.value.is_discarded()) {
      body.erase(c.field);
    } else {
      body[c.field] = c.value;
    }
    EXPECT_EQ(error_of(parse_profile_upload(body)), c.message) << c.field;
  }
}

// ---------------------------------------------------------------------------------------------
// Profiling request (docs/protocol.md, "Profiling requests")

TEST(ProfilingRequest, StudioStartExampleParses) {
  auto parsed = parse_profiling_request(json::parse(
      R"({"service_name":"web","request_type":"start","continuous":false,"duration":120,"frequency":11,
      "target_hosts":{"web-01":null,"web-02":[1234]},
      "additional_args":{"profiler_configs":{"async_profiler":{"enabled":true,"time":"wall"}}}})"));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->service_name, "web");
  EXPECT_EQ(parsed->request_type, CommandType::kStart);
  EXPECT_FALSE(parsed->continuous);
  EXPECT_EQ(parsed->duration, 120);
  EXPECT_EQ(parsed->frequency, 11);
  ASSERT_EQ(parsed->target_hosts.size(), 2u);
  EXPECT_FALSE(parsed->target_hosts.at("web-01"));
  EXPECT_EQ(parsed->target_hosts.at("web-02"), std::vector<int>{1234});
  ASSERT_TRUE(parsed->additional_args);
  EXPECT_EQ((*parsed->additional_args)["profiler_configs"]["async_profiler"]["time"], "wall");
}

TEST(ProfilingRequest, StudioStopExampleParses) {
  auto parsed = parse_profiling_request(json::parse(
      R"({"service_name":"web","request_type":"stop","stop_level":"host","target_hosts":{"web-01":null}})"));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->request_type, CommandType::kStop);
  EXPECT_EQ(parsed->stop_level, StopLevel::kHost);
  EXPECT_EQ(parsed->target_hosts.count("web-01"), 1u);
}

TEST(ProfilingRequest, Defaults) {
  auto parsed = parse_profiling_request(
      {{"service_name", "web"}, {"request_type", "start"}, {"target_hosts", {{"h", nullptr}}}});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_FALSE(parsed->continuous);
  EXPECT_EQ(parsed->duration, 60);
  EXPECT_EQ(parsed->frequency, 11);
  EXPECT_EQ(parsed->profiling_mode, ProfilingMode::kCpu);
  EXPECT_EQ(parsed->target_scope, TargetScope::kHost);
  EXPECT_TRUE(parsed->target_entities.empty());
  EXPECT_EQ(parsed->stop_level, StopLevel::kProcess);
  EXPECT_FALSE(parsed->additional_args);
  EXPECT_FALSE(parsed->dry_run);
}

TEST(ProfilingRequest, EveryFieldRoundTrips) {
  ProfilingRequest request;
  request.service_name = "web";
  request.request_type = CommandType::kStart;
  request.continuous = true;
  request.duration = 300;
  request.frequency = 99;
  request.profiling_mode = ProfilingMode::kAllocation;
  request.target_hosts = {{"web-01", std::nullopt}, {"web-02", std::vector<int>{1, 4194304}}};
  request.target_scope = TargetScope::kWorkload;
  request.target_entities = {{{"namespace", "prod"}, {"workload_name", "web"}, {"pid", 7}}};
  request.stop_level = StopLevel::kHost;
  request.additional_args = json{{"max_processes", 5}, {"enable_perfspect", true}};
  request.dry_run = true;
  json body = to_json(request);
  EXPECT_TRUE(body["target_hosts"]["web-01"].is_null());
  auto parsed = parse_profiling_request(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(*parsed, request);
}

TEST(ProfilingRequest, EntitiesAloneAreEnough) {
  auto parsed = parse_profiling_request({{"service_name", "web"},
                                         {"request_type", "start"},
                                         {"target_scope", "service"},
                                         {"target_entities", {{{"service_name", "web"}}}}});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->target_scope, TargetScope::kService);
  EXPECT_TRUE(parsed->target_hosts.empty());
  EXPECT_TRUE(to_json(*parsed)["target_hosts"].is_null());
}

// Studio's UI sends back the row id the status view gave it: service|host|namespace|pod|container,
// longer than one name can be with Kubernetes' names (a pod's may take 253 bytes).
TEST(ProfilingRequest, ARowIdMayHoldFiveNames) {
  const std::string pod(253, 'p');
  const std::string id = "web|node-1|prod|" + pod + "|" + std::string(253, 'c');
  json body = {{"service_name", "web"},
               {"request_type", "start"},
               {"target_scope", "container"},
               {"target_entities", {{{"id", id}}}}};
  auto parsed = parse_profiling_request(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->target_entities[0]["id"], id);
  body["target_entities"][0]["id"] = std::string(5 * 255 + 5, 'x');
  EXPECT_NE(error_of(parse_profiling_request(body)).find("is longer than 1279 bytes"),
            std::string::npos);
  body["target_entities"][0] = {{"pod_name", pod + "ppp"}};
  const std::string too_long = error_of(parse_profiling_request(body));
  EXPECT_NE(too_long.find("is longer than 255 bytes"), std::string::npos)
      << "other members are names: " << too_long;
}

TEST(ProfilingRequest, StopRules) {
  json stop = {{"service_name", "web"}, {"request_type", "stop"}};
  auto with = [&](json extra) {
    json body = stop;
    body.update(extra);
    return error_of(parse_profiling_request(body));
  };
  EXPECT_EQ(with({{"target_hosts", {{"h", nullptr}}}}),
            "stop_level: 'process' needs at least one pid in target_hosts or an entry in "
            "target_entities (say \"stop_level\": \"host\" to stop whole hosts)");
  EXPECT_EQ(with({{"target_hosts", {{"h", json::array()}}}}),
            with({{"target_hosts", {{"h", nullptr}}}}));
  EXPECT_EQ(with({{"target_hosts", {{"h", {42}}}}}), "(accepted)");
  EXPECT_EQ(with({{"target_scope", "pod"}, {"target_entities", {{{"pod_name", "web-1"}}}}}),
            "(accepted)");
  EXPECT_EQ(with({{"target_entities", {{{"pod_name", "web-1"}}}}}),
            "target_entities[0]: selects no host (target_scope host needs one of id, hostname, "
            "ip_address)");
  EXPECT_EQ(with({{"stop_level", "host"},
                  {"target_scope", "process"},
                  {"target_entities", {{{"pid", 0}}, {{"pid", 7}}}}}),
            "target_entities[0].pid: 0 is not between 1 and 4194304");
  EXPECT_EQ(with({{"stop_level", "host"},
                  {"target_scope", "process"},
                  {"target_entities", {{{"processName", "java"}}, {{"pid", 7}}}}}),
            "target_entities[1].pid: a stop with stop_level 'host' takes no pids");
  EXPECT_EQ(with({{"stop_level", "host"}, {"target_hosts", {{"a", nullptr}, {"b", {42}}}}}),
            "target_hosts['b']: a stop with stop_level 'host' takes no pids");
  EXPECT_EQ(with({{"stop_level", "host"}, {"target_hosts", {{"a", json::array()}}}}), "(accepted)");
}

TEST(ProfilingRequest, ValidationErrorsNameTheField) {
  json valid = {
      {"service_name", "web"}, {"request_type", "start"}, {"target_hosts", {{"web-02", {1234}}}}};
  std::vector<FieldCase> cases = {
      {"service_name", kAbsent, "service_name: required"},
      {"service_name", "", "service_name: must not be empty"},
      {"request_type", kAbsent, "request_type: required"},
      {"request_type", "pause", "request_type: must be one of start, stop"},
      {"continuous", "true", "continuous: must be true or false"},
      {"duration", 0, "duration: 0 is not between 1 and 604800"},
      {"duration", -60, "duration: -60 is not between 1 and 604800"},
      {"duration", 604801, "duration: 604801 is not between 1 and 604800"},
      {"duration", 1e308, "duration: 1e+308 is not between 1 and 604800"},
      {"duration", 18446744073709551615ULL,
       "duration: 18446744073709551615 is not between 1 and 604800"},
      {"duration", 1.5, "duration: must be an integer"},
      {"duration", "60", "duration: must be an integer"},
      {"frequency", 0, "frequency: 0 is not between 1 and 1000"},
      {"frequency", 1001, "frequency: 1001 is not between 1 and 1000"},
      {"profiling_mode", "wall", "profiling_mode: must be one of cpu, allocation, none"},
      {"target_hosts", json::object(), "target_hosts: must not be empty"},
      {"target_hosts",
       {"web-01"},
       "target_hosts: must be an object of host name -> list of pids, or null"},
      {"target_hosts",
       {{"web-02", {1234, -5}}},
       "target_hosts['web-02'][1]: -5 is not between 1 and 4194304"},
      {"target_hosts",
       {{"web-02", {0}}},
       "target_hosts['web-02'][0]: 0 is not between 1 and 4194304"},
      {"target_hosts",
       {{"web-02", {4194305}}},
       "target_hosts['web-02'][0]: 4194305 is not between 1 and 4194304"},
      {"target_hosts", {{"web-02", {"1234"}}}, "target_hosts['web-02'][0]: must be an integer"},
      {"target_hosts", {{"web-01", 5}}, "target_hosts['web-01']: must be a list"},
      {"target_hosts", {{"web-01", {{"pid", 1}}}}, "target_hosts['web-01']: must be a list"},
      {"target_hosts", {{"", nullptr}}, "target_hosts['']: must not be empty"},
      {"target_hosts", {{"it's", {1.5}}}, "target_hosts['it\\'s'][0]: must be an integer"},
      {"target_scope", "cluster",
       "target_scope: must be one of host, service, namespace, workload, pod, container, "
       "process"},
      {"target_entities", {{"pod", "x"}}, "target_entities: must be a list"},
      {"target_entities", {"web"}, "target_entities[0]: must be an object"},
      {"target_entities", {{{"pid", 0}}}, "target_entities[0].pid: 0 is not between 1 and 4194304"},
      {"target_entities",
       {{{"pod_name", "a"}}, {{"pod_name", 3}}},
       "target_entities[1].pod_name: must be a string"},
      {"stop_level", "pod", "stop_level: must be one of process, host"},
      {"additional_args", "--flag", "additional_args: must be an object"},
      {"dry_run", 0, "dry_run: must be true or false"},
  };
  for (const FieldCase& c : cases) {
    json body = valid;
    if (c.value.is_discarded()) {
      body.erase(c.field);
    } else {
      body[c.field] = c.value;
    }
    EXPECT_EQ(error_of(parse_profiling_request(body)), c.message) << c.field << " = " << c.value;
  }
}

TEST(ProfilingRequest, TargetsAreRequiredAndBounded) {
  json body = {{"service_name", "web"}, {"request_type", "start"}};
  EXPECT_EQ(error_of(parse_profiling_request(body)), "target_hosts: required, or target_entities");
  body["target_entities"] = json::array();
  EXPECT_EQ(error_of(parse_profiling_request(body)), "target_hosts: required, or target_entities");

  json many = json::object();
  for (int i = 0; i <= 10000; ++i) many["host-" + std::to_string(i)] = nullptr;
  body["target_hosts"] = many;
  EXPECT_EQ(error_of(parse_profiling_request(body)), "target_hosts: must have at most 10000 hosts");
  many.erase("host-0");
  body["target_hosts"] = many;
  EXPECT_TRUE(parse_profiling_request(body).ok());

  std::string long_name(256, 'a');
  body["target_hosts"] = {{long_name, nullptr}};
  EXPECT_EQ(error_of(parse_profiling_request(body)), "target_hosts[" + single_quoted(long_name) +
                                                         "]: " + single_quoted(long_name) +
                                                         " is longer than 255 bytes");
  body["target_hosts"] = {{std::string(255, 'a'), nullptr}};
  EXPECT_TRUE(parse_profiling_request(body).ok());
  body["target_hosts"] = {{std::string("web\0-01", 7), nullptr}};
  EXPECT_EQ(error_of(parse_profiling_request(body)),
            "target_hosts['web\\x00-01']: 'web\\x00-01' contains a control character");
}

// Issue 22, server 3 and 4: free-form objects are repeated in every host list and command, so
// each is at most 64 KiB as JSON.
TEST(ProfilingRequest, AdditionalArgsAreAtMost64KiB) {
  json body = {
      {"service_name", "web"}, {"request_type", "start"}, {"target_hosts", {{"web-01", nullptr}}}};
  body["additional_args"] = {{"x", std::string(64 * 1024 - 100, 'a')}};
  EXPECT_TRUE(parse_profiling_request(body).ok());
  body["additional_args"] = {{"x", std::string(64 * 1024, 'a')}};
  EXPECT_EQ(error_of(parse_profiling_request(body)),
            "additional_args: must be at most 64 KiB as JSON (it has 65544 bytes)");
}

TEST(Heartbeat, AgentHealthAndUnnamedFieldsAreAtMost64KiB) {
  json body = stock_heartbeat();
  body["agent_health"] = {{"note", std::string(70'000, 'h')}};
  EXPECT_NE(error_of(parse_heartbeat_request(body)).find("agent_health: must be at most 64 KiB"),
            std::string::npos);
  body = stock_heartbeat();
  body["junk"] = std::string(40'000, 'j');
  body["more_junk"] = std::string(30'000, 'j');
  EXPECT_NE(error_of(parse_heartbeat_request(body))
                .find("['junk']: the fields this protocol does not name may take at most 64 KiB"),
            std::string::npos)
      << error_of(parse_heartbeat_request(body));
  body.erase("more_junk");
  EXPECT_TRUE(parse_heartbeat_request(body).ok());
}

TEST(ProfilingRequest, HintsForGprofilersOlderFieldNames) {
  // The agent repository's docs show these names; the server model wants others.
  EXPECT_EQ(error_of(parse_profiling_request({{"service_name", "web"},
                                              {"command_type", "start"},
                                              {"target_hosts", {{"h", nullptr}}}})),
            "request_type: required (this API calls it request_type, not command_type)");
  EXPECT_EQ(error_of(parse_profiling_request(
                {{"service_name", "web"}, {"request_type", "start"}, {"target_hostnames", {"h"}}})),
            "target_hosts: required (this API takes target_hosts, an object of host name -> list "
            "of pids or null, not target_hostnames)");
}

TEST(ProfilingResponse, ToJson) {
  ProfilingResponse response{
      true, "Profiling request submitted", kCommandId, {kOtherId}, "2026-08-05T10:01:00"};
  EXPECT_EQ(to_json(response), json::parse(R"({"success": true,
      "message": "Profiling request submitted",
      "request_id": "0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11",
      "command_ids": ["9F6A1D2C-8B3E-4C5D-A6E7-F8091A2B3C4D"],
      "estimated_completion_time": "2026-08-05T10:01:00"})"));
  ProfilingResponse dry_run{true, "Dry run: request is valid", std::nullopt, {}, std::nullopt};
  json body = to_json(dry_run);
  EXPECT_TRUE(body["request_id"].is_null());
  EXPECT_EQ(body["command_ids"], json::array());
  EXPECT_TRUE(body["estimated_completion_time"].is_null());
}

// ---------------------------------------------------------------------------------------------
// combined_config, the agent's side (docs/protocol.md, "A command's combined_config")

// The server reads profiler_configs as sent (to summarise a command, to check perf's events):
// nlohmann's value() threw on {"enabled": "false"}, a 500 for every view of that command.
TEST(CommandConfig, WhatTurnsAProfilerOffIsReadWithoutThrowing) {
  for (json off : {json("disabled"), json({{"mode", "disabled"}}), json({{"enabled", false}}),
                   json({{"enabled", false}, {"mode", 3}})}) {
    EXPECT_TRUE(turns_profiler_off(off)) << off;
  }
  for (json on : {json("enabled"), json(nullptr), json(7), json::array(), json::object(),
                  json({{"enabled", "false"}}), json({{"mode", nullptr}}),
                  json({{"enabled", true}}), json({{"mode", "enabled_restricted"}})}) {
    EXPECT_FALSE(turns_profiler_off(on)) << on;
  }
}

TEST(CommandConfig, DefaultsForAnEmptyStart) {
  auto config = parse_combined_config(json::object(), "start");
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(*config, CommandConfig{});
  EXPECT_EQ(config->command_type, CommandType::kStart);
  EXPECT_FALSE(config->continuous);
  EXPECT_EQ(config->duration, 60);
  EXPECT_EQ(config->frequency, 11);
  EXPECT_EQ(config->profiling_mode, ProfilingMode::kCpu);
  EXPECT_TRUE(config->pids.empty());
  EXPECT_FALSE(config->perf);
  EXPECT_FALSE(config->ebpf);
  EXPECT_TRUE(config->target_hostnames.empty());
}

// A start as Studio builds it: the request's fields, additional_args spread flat, and the keys
// the server injects.
TEST(CommandConfig, StudioStartCommand) {
  json combined = json::parse(R"({
    "command_type": "start", "continuous": true, "duration": 120, "frequency": 49,
    "profiling_mode": "cpu", "pids": [1234, 5678], "target_scope": "host",
    "target_entities": null, "max_processes": 25, "enable_perfspect": true,
    "profiler_configs": {
      "perf": {"mode": "enabled_aggressive", "events": ["cpu-cycles", "cache-misses"]},
      "async_profiler": {"enabled": true, "time": "cpu", "alloc_interval": "2MB"},
      "pyperf": "enabled", "pyspy": "enabled_fallback", "rbspy": "disabled",
      "phpspy": "disabled", "dotnet_trace": "disabled", "nodejs_perf": "enabled"},
    "target_hostnames": ["web-01", "web-02"]})");
  auto config = parse_combined_config(combined, "start");
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_TRUE(config->continuous);
  EXPECT_EQ(config->duration, 120);
  EXPECT_EQ(config->frequency, 49);
  EXPECT_EQ(config->pids, (std::vector<int>{1234, 5678}));
  ASSERT_TRUE(config->perf);
  EXPECT_EQ(config->perf->setting, PerfSetting::kEnabledAggressive);
  EXPECT_EQ(config->perf->events, (std::vector<std::string>{"cycles", "cache-misses"}));
  EXPECT_FALSE(config->ebpf);
  EXPECT_EQ(config->profiler_configs, combined["profiler_configs"]);
  EXPECT_TRUE(config->applies_to("web-02"));
  EXPECT_FALSE(config->applies_to("db-01"));
}

TEST(CommandConfig, StudioStopCommands) {
  auto host = parse_combined_config({{"stop_level", "host"}}, "stop");
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(host->command_type, CommandType::kStop);
  EXPECT_EQ(host->stop_level, StopLevel::kHost);
  auto process = parse_combined_config({{"stop_level", "process"}, {"pids", {42, 43}}}, "stop");
  ASSERT_TRUE(process.ok()) << process.error().message();
  EXPECT_EQ(process->stop_level, StopLevel::kProcess);
  EXPECT_EQ(process->pids, (std::vector<int>{42, 43}));
  auto bare = parse_combined_config(json::object(), "stop");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->stop_level, StopLevel::kHost);
  EXPECT_EQ(error_of(parse_combined_config({{"stop_level", "process"}}, "stop")),
            "pids: a stop with stop_level 'process' needs pids");
  // A start carrying stop_level "process" is Studio's "fewer pids" update, and valid.
  EXPECT_TRUE(parse_combined_config({{"stop_level", "process"}}, "start").ok());
}

TEST(CommandConfig, PerfStringForms) {
  for (auto [text, setting] : {std::pair{"enabled_restricted", PerfSetting::kEnabledRestricted},
                               std::pair{"enabled_aggressive", PerfSetting::kEnabledAggressive},
                               std::pair{"disabled", PerfSetting::kDisabled}}) {
    auto config = parse_combined_config({{"profiler_configs", {{"perf", text}}}}, "start");
    ASSERT_TRUE(config.ok()) << config.error().message();
    ASSERT_TRUE(config->perf);
    EXPECT_EQ(config->perf->setting, setting);
    EXPECT_EQ(config->perf->events, std::vector<std::string>{"cycles"});
  }
}

TEST(CommandConfig, PerfObjectForms) {
  auto perf_of = [](json perf) {
    auto config = parse_combined_config({{"profiler_configs", {{"perf", perf}}}}, "start");
    EXPECT_TRUE(config.ok()) << config.error().message();
    return config.ok() ? config->perf.value_or(PerfConfig{}) : PerfConfig{};
  };
  EXPECT_EQ(perf_of(json::object()), PerfConfig{});
  EXPECT_EQ(perf_of({{"mode", "disabled"}}).setting, PerfSetting::kDisabled);
  EXPECT_EQ(perf_of({{"enabled", false}, {"mode", "enabled_aggressive"}}).setting,
            PerfSetting::kDisabled);
  EXPECT_EQ(perf_of({{"events", {"cpu-cycles", "cycles", "instructions", "instructions"}}}).events,
            (std::vector<std::string>{"cycles", "instructions"}));
  EXPECT_EQ(perf_of({{"events", json::array()}}).events, std::vector<std::string>{"cycles"});
}

TEST(CommandConfig, EbpfForms) {
  auto ebpf_of = [](json ebpf) -> std::optional<EbpfSetting> {
    auto config = parse_combined_config({{"profiler_configs", {{"ebpf", ebpf}}}}, "start");
    EXPECT_TRUE(config.ok()) << config.error().message();
    return config.ok() ? config->ebpf : std::nullopt;
  };
  EXPECT_EQ(ebpf_of("enabled"), EbpfSetting::kEnabled);
  EXPECT_EQ(ebpf_of("disabled"), EbpfSetting::kDisabled);
  EXPECT_EQ(ebpf_of(json::object()), EbpfSetting::kEnabled);
  EXPECT_EQ(ebpf_of({{"enabled", false}}), EbpfSetting::kDisabled);
  EXPECT_EQ(ebpf_of({{"mode", "disabled"}}), EbpfSetting::kDisabled);
}

TEST(CommandConfig, GpuModes) {
  auto gpu_of = [](json gpu) {
    return parse_combined_config({{"profiler_configs", {{"gpu", gpu}}}}, "start");
  };
  EXPECT_EQ(gpu_of("merge")->gpu, GpuMode::kMerge);
  EXPECT_EQ(gpu_of("gpu-only")->gpu, GpuMode::kGpuOnly);
  EXPECT_EQ(gpu_of("cpu-only")->gpu, GpuMode::kCpuOnly);
  EXPECT_EQ(gpu_of("disabled")->gpu, GpuMode::kDisabled);
  EXPECT_FALSE(parse_combined_config(json::object(), "start")->gpu);
  auto bad = gpu_of("everything");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("profiler_configs.gpu"), std::string::npos)
      << bad.error().message();
  EXPECT_FALSE(gpu_of(3).ok());
}

// Keys for what Dormant does not have (gProfiler's runtime profilers and their max_processes,
// Intel PerfSpect) are ignored like any unknown key, whatever they hold.
TEST(CommandConfig, UnknownKeysAreIgnored) {
  auto config = parse_combined_config({{"target_scope", 5},
                                       {"target_entities", "junk"},
                                       {"max_processes", "ten"},
                                       {"enable_perfspect", 1},
                                       {"command_type", "stop"},
                                       {"whatever", {{"x", nullptr}}}},
                                      "start");
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->command_type, CommandType::kStart);
}

TEST(CommandConfig, ValidationErrorsNameTheKey) {
  struct Case {
    json config;
    std::string message;
  };
  std::string perf_settings = "enabled_restricted, enabled_aggressive, disabled";
  std::vector<Case> cases = {
      {json::array(), "combined_config: must be an object"},
      {{{"continuous", "yes"}}, "continuous: must be true or false"},
      {{{"duration", 0}}, "duration: 0 is not between 1 and 86400"},
      {{{"duration", 86401}}, "duration: 86401 is not between 1 and 86400"},
      {{{"duration", 2.5}}, "duration: must be an integer"},
      {{{"frequency", 0}}, "frequency: 0 is not between 1 and 1000"},
      {{{"frequency", 1001}}, "frequency: 1001 is not between 1 and 1000"},
      {{{"frequency", nullptr}, {"duration", "x"}}, "duration: must be an integer"},
      {{{"profiling_mode", "gpu"}}, "profiling_mode: must be one of cpu, allocation, none"},
      {{{"pids", 1234}}, "pids: must be a list"},
      {{{"pids", {1, -3}}}, "pids[1]: -3 is not between 1 and 4194304"},
      {{{"pids", {1e20}}}, "pids[0]: 1e+20 is not between 1 and 4194304"},
      {{{"stop_level", "pod"}}, "stop_level: must be one of process, host"},
      {{{"profiler_configs", "perf"}}, "profiler_configs: must be an object"},
      {{{"profiler_configs", {{"perf", 5}}}},
       "profiler_configs.perf: must be one of " + perf_settings + ", or an object {mode, events}"},
      {{{"profiler_configs", {{"perf", "turbo"}}}},
       "profiler_configs.perf: must be one of " + perf_settings},
      {{{"profiler_configs", {{"perf", {{"mode", "on"}}}}}},
       "profiler_configs.perf.mode: must be one of " + perf_settings},
      {{{"profiler_configs", {{"perf", {{"enabled", "no"}}}}}},
       "profiler_configs.perf.enabled: must be true or false"},
      {{{"profiler_configs", {{"perf", {{"events", "cycles"}}}}}},
       "profiler_configs.perf.events: must be a list"},
      {{{"profiler_configs", {{"perf", {{"events", {"cycles", "bogus"}}}}}}},
       "profiler_configs.perf.events[1]: 'bogus' is not a supported perf event (cycles, "
       "instructions, cache-misses, cache-references, branch-misses, branch-instructions, "
       "stalled-cycles-frontend, stalled-cycles-backend)"},
      {{{"profiler_configs", {{"ebpf", "on"}}}},
       "profiler_configs.ebpf: must be one of enabled, disabled"},
      {{{"profiler_configs", {{"ebpf", 1}}}},
       "profiler_configs.ebpf: must be one of enabled, disabled, or an object {mode}"},
      {{{"profiler_configs", {{"ebpf", {{"enabled", 0}}}}}},
       "profiler_configs.ebpf.enabled: must be true or false"},
      {{{"target_hostnames", "web-01"}}, "target_hostnames: must be a list"},
      {{{"target_hostnames", {"web-01", 7}}}, "target_hostnames[1]: must be a string"},
      {{{"x", deep_array(65)}}, "combined_config: nested deeper than 64 levels"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(error_of(parse_combined_config(c.config, "start")), c.message) << c.config.dump();
  }
  EXPECT_EQ(error_of(parse_combined_config(json::object(), "")),
            "command_type: must be one of start, stop");
  EXPECT_EQ(error_of(parse_combined_config(json::object(), "START")),
            "command_type: must be one of start, stop");
}

TEST(CommandConfig, AppliesToEveryHostWithoutAFilter) {
  CommandConfig config;
  EXPECT_TRUE(config.applies_to("anything"));
  config.target_hostnames = {"a"};
  EXPECT_TRUE(config.applies_to("a"));
  EXPECT_FALSE(config.applies_to("b"));
}

// ---------------------------------------------------------------------------------------------
// Hostile input: every field of every message replaced by junk of every JSON type. Nothing may
// throw; an error names the field (or the body) and stays printable ASCII.

std::vector<json> junk_values() {
  return {nullptr,
          true,
          0,
          -1,
          -9223372036854775807LL - 1,
          18446744073709551615ULL,
          1.5,
          -1e308,
          "",
          std::string("\0\"'\\\n\x7f\xff", 8),
          std::string(100000, 'x'),
          json::array(),
          json::array({nullptr, json::object()}),
          json::object(),
          {{"a", {{"b", {1, {{"c", nullptr}}}}}}},
          deep_array(70),
          deep_array(2000)};
}

struct Message {
  std::string name;  // the body's name in errors
  json valid;
  std::function<Result<void>(const json&)> parse;
};

template <typename T>
Result<void> as_void(Result<T> result) {
  if (!result) return std::move(result).take_error();
  return ok();
}

std::vector<Message> all_messages() {
  CommandCompletion completion{kCommandId, "h", CompletionStatus::kFailed, 3, "e", "p"};
  HeartbeatResponse response{true, "m", kCommandId, ProfilingCommand{"start", {{"duration", 5}}}};
  return {
      {"heartbeat", to_json(full_heartbeat()),
       [](const json& b) { return as_void(parse_heartbeat_request(b)); }},
      {"heartbeat response", to_json(response),
       [](const json& b) { return as_void(parse_heartbeat_response(b)); }},
      {"command completion", to_json(completion),
       [](const json& b) { return as_void(parse_command_completion(b)); }},
      {"profile upload", to_json(ProfileUpload{"a", "b", "h", "p", 1, 2, 3, 4}),
       [](const json& b) { return as_void(parse_profile_upload(b)); }},
      {"profiling request",
       json::parse(R"({"service_name":"web","request_type":"stop","stop_level":"process",
           "target_hosts":{"web-01":[1,2]},"target_entities":[{"pod_name":"p"}],
           "additional_args":{"a":1},"continuous":true,"duration":5,"frequency":7,
           "profiling_mode":"none","target_scope":"pod","dry_run":false})"),
       [](const json& b) { return as_void(parse_profiling_request(b)); }},
      {"combined_config",
       json::parse(R"({"continuous":true,"duration":5,"frequency":7,"profiling_mode":"cpu",
           "pids":[1],"stop_level":"process","max_processes":3,"enable_perfspect":false,
           "profiler_configs":{"perf":{"mode":"disabled","events":["cycles"]},"ebpf":"enabled"},
           "target_hostnames":["h"]})"),
       [](const json& b) { return as_void(parse_combined_config(b, "stop")); }},
  };
}

void expect_safe_error(const Message& message, const json& body, const std::string& field) {
  Result<void> result = ok();
  ASSERT_NO_THROW(result = message.parse(body)) << message.name << "." << field;
  if (result.ok()) return;
  const std::string& text = result.error().message();
  EXPECT_TRUE(is_printable_ascii(text)) << text;
  EXPECT_LT(text.size(), 400u) << text;
  bool names_it = text.find(field) != std::string::npos || text.starts_with(message.name) ||
                  text.starts_with("stop_level") || text.starts_with("target_hosts") ||
                  text.starts_with("pids");
  EXPECT_TRUE(names_it) << message.name << "." << field << ": " << text;
}

TEST(HostileInput, JunkInEveryFieldIsRefusedWithAMessage) {
  for (const Message& message : all_messages()) {
    ASSERT_TRUE(message.parse(message.valid).ok())
        << message.name << ": " << message.parse(message.valid).error().message();
    for (const auto& [field, unused] : message.valid.items()) {
      for (const json& junk : junk_values()) {
        json body = message.valid;
        body[field] = junk;
        expect_safe_error(message, body, field);
      }
      json body = message.valid;
      body.erase(field);
      expect_safe_error(message, body, field);
    }
  }
}

TEST(HostileInput, JunkNestedOneLevelDown) {
  for (const Message& message : all_messages()) {
    for (const auto& [field, value] : message.valid.items()) {
      if (!value.is_structured() || value.empty()) continue;
      for (const json& junk : junk_values()) {
        json body = message.valid;
        if (value.is_array()) {
          body[field][0] = junk;
        } else {
          body[field][body[field].begin().key()] = junk;
        }
        expect_safe_error(message, body, field);
      }
    }
  }
}

TEST(HostileInput, WholeBodiesOfTheWrongType) {
  for (const Message& message : all_messages()) {
    for (const json& junk : junk_values()) {
      Result<void> result = ok();
      ASSERT_NO_THROW(result = message.parse(junk));
      if (junk.is_object()) continue;  // may be a valid (if odd) body
      ASSERT_FALSE(result.ok()) << message.name << ": " << junk.dump().substr(0, 80);
      EXPECT_TRUE(result.error().message().starts_with(message.name) ||
                  result.error().message().find(": required") != std::string::npos)
          << result.error().message();
    }
  }
}

}  // namespace
}  // namespace dormant::wire
