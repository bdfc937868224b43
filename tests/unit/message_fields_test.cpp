#include "wire/message_fields.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire/command_config.h"
#include "wire/plain_heartbeat.h"
#include "wire/profiling_request.h"
#include "wire/protocol.h"

namespace dormant::wire {
namespace {

using nlohmann::json;

// A message of the test's own, with a table of each kind of field.
struct Part {
  int size = 0;
  std::string label;

  friend bool operator==(const Part&, const Part&) = default;
};

struct Sample {
  int count = 0;
  std::optional<std::string> note;
  std::optional<std::string> kind;
  CommandType type = CommandType::kStart;
  std::vector<Part> parts;
  double seconds = 0;

  friend bool operator==(const Sample&, const Sample&) = default;
};

const Fields<Part>& fields_of(std::type_identity<Part>) {
  static const Fields<Part> kFields = {
      integer<&Part::size, 1, 10>("size").required(),
      text<&Part::label>("label").spelled_also("partLabel"),
  };
  return kFields;
}

const Fields<Sample>& fields_of(std::type_identity<Sample>) {
  static const Fields<Sample> kFields = {
      field("count", &Sample::count, integer_in(0, 100)).required(),
      text<&Sample::note>("note"),
      text<&Sample::kind>("kind").omitted_when_null(),
      field("type", &Sample::type, read_enum<CommandType>),
      list_of_messages("parts", &Sample::parts, 2),
      field("seconds", &Sample::seconds, number_in(0, 60))
          .written_by([](const Sample& sample) -> std::optional<json> {
            if (sample.seconds == 0) return std::nullopt;
            return static_cast<int>(sample.seconds);
          }),
  };
  return kFields;
}

Result<Sample> read_sample(const json& body) { return read_body<Sample>(body, "sample"); }

std::set<std::string> keys_of(const json& body) {
  std::set<std::string> keys;
  for (const auto& member : body.items()) keys.insert(member.key());
  return keys;
}

HeartbeatRequest minimal_heartbeat() {
  HeartbeatRequest beat;
  beat.ip_address = "10.0.0.1";
  beat.hostname = "h";
  beat.service_name = "s";
  return beat;
}

template <typename Message>
std::set<std::string> names_in_table() {
  std::set<std::string> names;
  for (const Field<Message>& field : fields_of_message<Message>()) names.emplace(field.name);
  return names;
}

TEST(MessageFields, ATableReadsItsMembersByNameOrAliasAndWritesThemBack) {
  auto sample = read_sample(json::parse(R"({"count": 3, "note": "n", "type": "stop",
      "parts": [{"size": 2, "partLabel": "a"}, {"size": 10, "label": "b"}], "seconds": 7.5})"));
  ASSERT_TRUE(sample.ok()) << sample.error().message();
  EXPECT_EQ(*sample,
            (Sample{3, "n", std::nullopt, CommandType::kStop, {{2, "a"}, {10, "b"}}, 7.5}));
  // The alias is read, the name written; the optional left out when null is; the writer of
  // `seconds` is the table's.
  EXPECT_EQ(write_fields(*sample), json::parse(R"({"count": 3, "note": "n", "type": "stop",
      "parts": [{"size": 2, "label": "a"}, {"size": 10, "label": "b"}], "seconds": 7})"));
  Sample empty;
  EXPECT_EQ(write_fields(empty), json::parse(R"({"count": 0, "note": null, "type": "start",
      "parts": []})"));
}

TEST(MessageFields, EveryWrongMemberIsNamedOnceReadAsTheTableSays) {
  auto sample = read_sample(json::parse(R"({"note": 5, "type": "go", "kind": "k",
      "parts": [{"size": 11, "partLabel": 1}], "seconds": 61})"));
  ASSERT_FALSE(sample.ok());
  std::string message = sample.error().message();
  for (const char* named :
       {"count: required", "note: must be a string", "type: must be one of",
        "parts[0].size: 11 is not between 1 and 10", "parts[0].partLabel: must be a string",
        "seconds: 61 is not between 0 and 60"}) {
    EXPECT_NE(message.find(named), std::string::npos) << named << " in " << message;
  }
  EXPECT_EQ(message.find("kind"), std::string::npos) << message;
  auto too_many = read_sample(json::parse(R"({"count": 1, "parts": [{"size": 1}, {"size": 1},
      {"size": 1}]})"));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().message(), "parts: must have at most 2 items");
}

// The fast reader stores what a table marks as text or integer, and only that.
TEST(MessageFields, TheFastReaderStoresTheMembersTheTableMarksAndRangeChecksIntegers) {
  const Fields<ReportedProcess>& process = fields_of_message<ReportedProcess>();
  ASSERT_EQ(process.size(), 2u);
  ReportedProcess read;
  ASSERT_NE(process[0].store_integer, nullptr);
  EXPECT_TRUE(process[0].store_integer(read, 42));
  EXPECT_FALSE(process[0].store_integer(read, 0)) << "pids start at 1, as the document reads them";
  EXPECT_FALSE(process[0].store_integer(read, int64_t{kMaxPid} + 1));
  ASSERT_NE(process[1].store_text, nullptr);
  process[1].store_text(read, "nginx");
  EXPECT_EQ(read, (ReportedProcess{42, "nginx"}));

  // Each text member a container's table marks is taken by the fast reader from a heartbeat.
  ReportedContainer full{.container_id = "c1",
                         .container_name = "app",
                         .runtime = "containerd",
                         .pod_namespace = "shop",
                         .pod_name = "web-1",
                         .workload_name = "web",
                         .workload_kind = "Deployment",
                         .processes = {{7, "java"}}};
  HeartbeatRequest beat = minimal_heartbeat();
  beat.containers = {full};
  auto plain = read_plain_heartbeat(heartbeat_body_text(beat));
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->containers, beat.containers);
  size_t texts = 0;
  for (const auto& field : fields_of_message<ReportedContainer>())
    texts += field.store_text != nullptr;
  EXPECT_EQ(texts, 7u) << "container_name and its six optional texts";
}

// One table per message: what the writer writes of a message with every member set is what its
// table names, no more.
TEST(MessageFields, EachMessageWritesTheMembersItsTableNames) {
  HeartbeatRequest beat = minimal_heartbeat();
  beat.agent_health = {{"rss", 1}};
  std::set<std::string> beat_names = names_in_table<HeartbeatRequest>();
  beat_names.erase("containers_digest");  // in place of the list, when one is known
  EXPECT_EQ(keys_of(to_json(beat)), beat_names);
  beat.containers_digest = "d";
  EXPECT_TRUE(to_json(beat).contains("containers_digest"));
  EXPECT_FALSE(to_json(beat).contains("containers"));

  HeartbeatResponse answer;
  answer.command_id = "0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11";
  answer.profiling_command = ProfilingCommand{};
  answer.containers_digest = "d";
  EXPECT_EQ(keys_of(to_json(answer)), names_in_table<HeartbeatResponse>());
  EXPECT_EQ(keys_of(to_json(CommandCompletion{})), names_in_table<CommandCompletion>());
  EXPECT_EQ(keys_of(to_json(ProfileUpload{})), names_in_table<ProfileUpload>());
  EXPECT_EQ(keys_of(to_json(ProfilingRequest{})), names_in_table<ProfilingRequest>());
  ProfilingResponse response;
  response.plan = json::array();
  response.hosts_never_seen = std::vector<std::string>{"web-09"};
  EXPECT_EQ(keys_of(to_json(response)), names_in_table<ProfilingResponse>());
  EXPECT_EQ(keys_of(write_fields(CommandConfig{})), names_in_table<CommandConfig>());
}

TEST(MessageFields, AProfilingResponseReadsBackWhatItWrites) {
  ProfilingResponse response{true,
                             "ok",
                             "0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11",
                             {"9f6a1d2c-8b3e-4c5d-a6e7-f8091a2b3c4d"},
                             "2026-08-05T10:01:00"};
  response.plan = json::parse(R"([{"hostname": "h", "action": "start", "pids": null}])");
  auto read = parse_profiling_response(to_json(response));
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(*read, response);
  auto refused = parse_profiling_response(json::parse(R"({"success": true, "plan": {}})"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(), "plan: must be a list");
}

}  // namespace
}  // namespace dormant::wire
