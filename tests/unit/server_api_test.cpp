// The API layer in process: time parsing, tokens, metrics, and a few requests through Api::handle
// with a real store in a temporary directory.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/gzip.h"
#include "server/api/api.h"
#include "server/api/api_requests.h"
#include "server/api/long_polls.h"
#include "server/api/merge_slots.h"
#include "server/api/wire_mapping.h"

namespace dormant::server::api {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;
using std::chrono::seconds;

storage::TimePoint utc(int64_t unix_seconds) { return storage::TimePoint(seconds(unix_seconds)); }

TEST(IsoTime, WritesUtcWithMilliseconds) {
  EXPECT_EQ(iso_time(utc(1763805600) + std::chrono::milliseconds(7)), "2025-11-22T10:00:00.007Z");
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "dormant-api-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(Tokens, LoadsTokensSkippingCommentsAndBlanks) {
  TempDir dir;
  std::ofstream(dir.path() / "tokens") << "# production\n\n  first-token \r\nsecond\n#third\n";
  auto tokens = Tokens::load(dir.path() / "tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.error().message();
  EXPECT_EQ(tokens->size(), 2u);
  EXPECT_TRUE(tokens->accepts("first-token"));
  EXPECT_TRUE(tokens->accepts("second"));
  EXPECT_FALSE(tokens->accepts("#third"));
  EXPECT_FALSE(tokens->accepts("first-toke"));
  EXPECT_FALSE(tokens->accepts(""));
}

TEST(Tokens, EachLineGivesItsTokenARoleAndALoneTokenEveryRole) {
  TempDir dir;
  std::ofstream(dir.path() / "tokens") << "host-key agent\nops-key\toperator\nboth agent\n"
                                       << "both  reader\nold-key\n";
  size_t untyped = 0;
  auto tokens = Tokens::load(dir.path() / "tokens", &untyped);
  ASSERT_TRUE(tokens.ok()) << tokens.error().message();
  EXPECT_EQ(tokens->roles_of("host-key"), kAgentRole);
  EXPECT_EQ(tokens->roles_of("ops-key"), kOperatorRole);
  EXPECT_EQ(tokens->roles_of("both"), kAgentRole | kReaderRole);
  EXPECT_EQ(tokens->roles_of("old-key"), kAllRoles);
  EXPECT_EQ(tokens->roles_of("host-key agent"), 0);
  EXPECT_EQ(untyped, 1u);
  EXPECT_EQ(role_names(kAgentRole | kReaderRole), "agent, reader");

  std::ofstream(dir.path() / "bad") << "fine agent\nkey admin\n";
  auto bad = Tokens::load(dir.path() / "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("line 2: unknown role 'admin'"), std::string::npos)
      << bad.error().message();
}

TEST(Tokens, AFileWithoutTokensIsAnError) {
  TempDir dir;
  std::ofstream(dir.path() / "tokens") << "# nothing here\n\n";
  auto tokens = Tokens::load(dir.path() / "tokens");
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.error().message().find("holds no token"), std::string::npos);
  EXPECT_FALSE(Tokens::load(dir.path() / "missing").ok());
}

TEST(MergeSlots, AMergeBeyondTheSlotsIsRefusedUntilOneIsFree) {
  MergeSlots slots(2);
  auto first = slots.try_take();
  std::optional<MergeSlots::Slot> second = slots.try_take();
  EXPECT_TRUE(first && second);
  EXPECT_FALSE(slots.try_take()) << "both slots are taken";
  second.reset();
  auto third = slots.try_take();
  EXPECT_TRUE(third) << "a slot comes back when its merge ends";
  EXPECT_FALSE(slots.try_take());
  std::optional<MergeSlots::Slot> moved = std::move(third);
  third.reset();
  EXPECT_FALSE(slots.try_take()) << "a moved slot is still held";
}

TEST(ServerMetrics, RendersThePrometheusTextFormat) {
  ServerMetrics metrics;
  metrics.count_request("/api/metrics/heartbeat", 200);
  metrics.count_request("/api/metrics/heartbeat", 200);
  metrics.count_request("other", 404);
  metrics.add(Counter::kProfileBytes, 1234);
  std::string text = metrics.render();
  EXPECT_NE(text.find("# TYPE dormant_server_requests_total counter\n"), std::string::npos);
  EXPECT_NE(
      text.find(R"(dormant_server_requests_total{endpoint="/api/metrics/heartbeat",code="200"} 2)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(dormant_server_requests_total{endpoint="other",code="404"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find("dormant_server_profile_bytes_total 1234\n"), std::string::npos);
  EXPECT_EQ(metrics.requests("other", 404), 1u);
}

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = storage::Store::open(dir_.path() / "data");
    ASSERT_TRUE(store.ok()) << store.error().message();
    store_ = std::move(*store);
    api_ = std::make_unique<Api>(
        *store_,
        Tokens::of(std::vector<std::pair<std::string_view, Roles>>{{"t0k3n", kAllRoles},
                                                                   {"agent-key", kAgentRole},
                                                                   {"ops-key", kOperatorRole},
                                                                   {"read-key", kReaderRole}}),
        metrics_);
  }

  http::Response call(bhttp::verb method, const std::string& target, std::string body = "",
                      const std::string& token = "t0k3n") {
    http::Request request(method, target, 11);
    request.set(bhttp::field::authorization, "Bearer " + token);
    request.body() = std::move(body);
    request.prepare_payload();
    return api_->handle(request, http::Client{"127.0.0.1:1", {}, "127.0.0.1", nullptr});
  }

  TempDir dir_;
  ServerMetrics metrics_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Api> api_;
};

// Issue 40: a listing is cut into pages of 16 MiB at most, each with the cursor of the next; the
// pages join up, every command and host once, however they are cut (by bytes or by limit). Each
// page holds the arguments its commands refer to.
TEST_F(ApiTest, ListingsComeInPagesThatJoinUp) {
  for (int i = 0; i < 400; ++i) {  // arguments of some 60 kB, each host its own
    nlohmann::json request = {{"service_name", "web"},
                              {"request_type", "start"},
                              {"continuous", true},
                              {"additional_args", {{"junk", std::string(60000, 'j')}, {"n", i}}},
                              {"target_hosts", {{"host-" + std::to_string(i), nullptr}}}};
    ASSERT_EQ(call(bhttp::verb::post, "/api/metrics/profile_request", request.dump()).result_int(),
              200);
  }
  for (int i = 0; i < 250; ++i) {
    nlohmann::json beat = {{"hostname", "host-" + std::to_string(i)},
                           {"ip_address", "10.0.0.7"},
                           {"service_name", "web"}};
    ASSERT_EQ(call(bhttp::verb::post, "/api/metrics/heartbeat", beat.dump()).result_int(), 200);
  }
  // Pages of `path`, from the cursor each gives, until none: the ids under `field` and `id`.
  auto read_all = [&](const std::string& path, const std::string& field, const std::string& id,
                      const std::string& cursor_name) {
    std::vector<std::string> ids;
    std::string cursor;
    size_t pages = 0;
    do {
      http::Response page =
          call(bhttp::verb::get, path + (cursor.empty() ? "" : "&" + cursor_name + "=" + cursor));
      EXPECT_EQ(page.result_int(), 200) << page.body().substr(0, 200);
      EXPECT_LE(page.body().size(), size_t{16} << 20);
      auto json = nlohmann::json::parse(page.body());
      for (const auto& item : json[field]) {
        ids.push_back(item.at(id).get<std::string>());
        if (item.contains("args_digest")) {
          EXPECT_TRUE(json["additional_args"].contains(item["args_digest"])) << "in its page";
        }
      }
      cursor = json["next"].is_string() ? json["next"].get<std::string>() : "";
      ++pages;
    } while (!cursor.empty() && pages < 1000);
    std::set<std::string> distinct(ids.begin(), ids.end());
    EXPECT_EQ(distinct.size(), ids.size()) << path << ": none twice";
    return std::make_pair(distinct, pages);
  };
  auto [by_bytes, byte_pages] =
      read_all("/api/commands?limit=10000", "commands", "command_id", "before");
  EXPECT_EQ(by_bytes.size(), 400u);
  EXPECT_EQ(byte_pages, 2u) << "400 commands of some 60 kB: over 16 MiB";
  auto [by_limit, limit_pages] =
      read_all("/api/commands?limit=150", "commands", "command_id", "before");
  EXPECT_EQ(by_limit, by_bytes);
  EXPECT_GE(limit_pages, 3u);
  auto [hosts, host_pages] = read_all("/api/hosts?limit=100", "hosts", "hostname", "after");
  EXPECT_EQ(hosts.size(), 250u);
  EXPECT_GE(host_pages, 3u);
  EXPECT_EQ(call(bhttp::verb::get, "/api/hosts?after=zz").result_int(), 400);
  EXPECT_EQ(call(bhttp::verb::get, "/api/commands?before=00").result_int(), 400);
}

// Issue 43: the README's first curl named a host never seen and was answered as any other; the
// request is still taken (as Studio takes it: the agent may come), and the answer names the
// hosts that never sent a heartbeat under the service, in a dry run too.
TEST_F(ApiTest, AnAnswerNamesTheTargetHostsNeverSeen) {
  nlohmann::json beat = {
      {"hostname", "web-01"}, {"ip_address", "10.0.0.7"}, {"service_name", "web"}};
  ASSERT_EQ(call(bhttp::verb::post, "/api/metrics/heartbeat", beat.dump()).result_int(), 200);
  beat["service_name"] = "db";
  beat["hostname"] = "db-01";
  ASSERT_EQ(call(bhttp::verb::post, "/api/metrics/heartbeat", beat.dump()).result_int(), 200);
  nlohmann::json request = {
      {"service_name", "web"},
      {"request_type", "start"},
      {"duration", 30},
      {"target_hosts", {{"web-01", nullptr}, {"web-02", nullptr}, {"db-01", nullptr}}}};
  for (bool dry_run : {true, false}) {
    request["dry_run"] = dry_run;
    http::Response answer = call(bhttp::verb::post, "/api/metrics/profile_request", request.dump());
    ASSERT_EQ(answer.result_int(), 200) << answer.body();
    auto body = nlohmann::json::parse(answer.body());
    EXPECT_EQ(body["hosts_never_seen"], nlohmann::json({"db-01", "web-02"})) << answer.body();
    EXPECT_NE(body["message"].get<std::string>().find(
                  "; never seen: db-01, web-02 (no heartbeat under service 'web': each command "
                  "waits for its host's first)"),
              std::string::npos)
        << answer.body();
  }
  request["target_hosts"] = {{"web-01", nullptr}};
  auto seen = nlohmann::json::parse(
      call(bhttp::verb::post, "/api/metrics/profile_request", request.dump()).body());
  EXPECT_FALSE(seen.contains("hosts_never_seen")) << seen;
}

// Issue 40: one request for 10,000 hosts with 60 kB of arguments made a listing of its commands
// repeat them 10,000 times (624 MB). They are written once a page, under the digest each
// command names; /api/commands/ID gives the command whole.
TEST_F(ApiTest, AListingWritesARequestsArgumentsOnceAPage) {
  nlohmann::json request = {{"service_name", "web"},
                            {"request_type", "start"},
                            {"duration", 30},
                            {"additional_args", {{"junk", std::string(60000, 'j')}}},
                            {"target_hosts", nlohmann::json::object()}};
  for (int i = 0; i < 400; ++i) request["target_hosts"]["host-" + std::to_string(i)] = nullptr;
  ASSERT_EQ(call(bhttp::verb::post, "/api/metrics/profile_request", request.dump()).result_int(),
            200);
  nlohmann::json stop = {{"service_name", "web"},
                         {"request_type", "stop"},
                         {"stop_level", "host"},
                         {"target_hosts", {{"host-0", nullptr}}}};
  http::Response stopped = call(bhttp::verb::post, "/api/metrics/profile_request", stop.dump());
  ASSERT_EQ(stopped.result_int(), 200) << stopped.body();

  http::Response listed = call(bhttp::verb::get, "/api/commands?limit=10000");
  ASSERT_EQ(listed.result_int(), 200);
  EXPECT_LT(listed.body().size(), 400 * 1024u) << "not 400 times 60 kB";
  auto page = nlohmann::json::parse(listed.body());
  ASSERT_EQ(page["commands"].size(), 401u);
  ASSERT_EQ(page["additional_args"].size(), 1u);
  const nlohmann::json& latest = page["commands"][0];
  EXPECT_EQ(latest["command_type"], "stop");
  EXPECT_TRUE(latest["args_digest"].is_null()) << "a stop has none";
  EXPECT_EQ(latest["combined_config"], nlohmann::json({{"stop_level", "host"}}));
  const nlohmann::json& start = page["commands"][1];
  std::string digest = start["args_digest"];
  EXPECT_EQ(page["additional_args"][digest], nlohmann::json({{"junk", std::string(60000, 'j')}}));
  EXPECT_EQ(start["combined_config"]["duration"], 30);
  EXPECT_FALSE(start["combined_config"].contains("junk"));

  http::Response whole =
      call(bhttp::verb::get, "/api/commands/" + start["command_id"].get<std::string>());
  ASSERT_EQ(whole.result_int(), 200);
  auto command = nlohmann::json::parse(whole.body());
  EXPECT_EQ(command["combined_config"]["junk"], std::string(60000, 'j')) << "as the agent gets it";
  EXPECT_EQ(command["args_digest"], digest);
}

// Issue 40: bulk bodies multiplied the 10,000-host cap by their request count, and a request's
// selectors had no cap of their own. A bulk body names 10,000 hosts in all; a request 100
// selectors.
TEST_F(ApiTest, ABulkBodyAndARequestsSelectorsHaveCapsOfTheirOwn) {
  nlohmann::json bulk = {{"requests", nlohmann::json::array()}};
  for (int r = 0; r < 2; ++r) {
    nlohmann::json request = {{"service_name", "web"},
                              {"request_type", "start"},
                              {"duration", 30},
                              {"target_hosts", nlohmann::json::object()}};
    for (int i = 0; i < 6000; ++i) {
      request["target_hosts"]["h-" + std::to_string(r) + "-" + std::to_string(i)] = nullptr;
    }
    bulk["requests"].push_back(request);
  }
  http::Response refused =
      call(bhttp::verb::post, "/api/metrics/profile_request/bulk", bulk.dump());
  EXPECT_EQ(refused.result_int(), 422) << refused.body().substr(0, 300);
  EXPECT_NE(refused.body().find("name 12000 hosts in all"), std::string::npos)
      << refused.body().substr(0, 300);
  EXPECT_EQ(store_->list_commands({std::nullopt, std::nullopt, true, 10, {}}).value().size(), 0u);

  nlohmann::json selected = {{"service_name", "web"},
                             {"request_type", "start"},
                             {"duration", 30},
                             {"target_scope", "container"},
                             {"target_entities", nlohmann::json::array()}};
  for (int i = 0; i < 101; ++i) {
    selected["target_entities"].push_back({{"container_name", "c-" + std::to_string(i)}});
  }
  http::Response too_many =
      call(bhttp::verb::post, "/api/metrics/profile_request", selected.dump());
  EXPECT_GE(too_many.result_int(), 400);
  EXPECT_NE(too_many.body().find("target_entities"), std::string::npos) << too_many.body();
  EXPECT_NE(too_many.body().find("100"), std::string::npos) << too_many.body();
}

// Issue 40: held heartbeats are bounded in all and per address; a place comes back when its poll
// is cancelled, and when one is dropped unarmed (its request failed) as well.
TEST(LongPolls, HeldHeartbeatsAreBoundedInAllAndPerAddress) {
  LongPolls hub(LongPollLimits{3, 2});
  auto first = hub.watch("a", "10.0.0.1");
  auto second = hub.watch("b", "10.0.0.1");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(hub.watch("c", "10.0.0.1"), nullptr) << "2 from one address";
  auto third = hub.watch("c", "10.0.0.2");
  ASSERT_TRUE(third);
  EXPECT_EQ(hub.watch("d", "10.0.0.3"), nullptr) << "3 in all";
  first->cancel();
  auto fourth = hub.watch("e", "10.0.0.1");
  EXPECT_TRUE(fourth != nullptr) << "a cancelled poll's place comes back";
  second.reset();  // dropped without arm() or cancel()
  EXPECT_EQ(hub.held(), 2u);
  EXPECT_TRUE(hub.watch("f", "10.0.0.1") != nullptr) << "so does a dropped one's";
}

// Each role reaches its endpoints and gets 403, saying what is missing, at the others.
TEST_F(ApiTest, ATokenReachesOnlyWhatItsRolesAllow) {
  std::string request = R"({"service_name":"web","request_type":"start","duration":30,)"
                        R"("target_hosts":{"web-01":null}})";
  std::string heartbeat = R"({"hostname":"web-01","ip_address":"10.0.0.1",)"
                          R"("service_name":"web","timestamp":"2026-11-26T10:00:00"})";
  struct Expected {
    std::string token;
    unsigned request, heartbeat, read;
  };
  for (const Expected& expected :
       {Expected{"agent-key", 403, 200, 403}, Expected{"ops-key", 200, 403, 200},
        Expected{"read-key", 403, 403, 200}, Expected{"t0k3n", 200, 200, 200}}) {
    auto asked = call(bhttp::verb::post, "/api/metrics/profile_request", request, expected.token);
    EXPECT_EQ(asked.result_int(), expected.request) << expected.token << ": " << asked.body();
    auto beat = call(bhttp::verb::post, "/api/metrics/heartbeat", heartbeat, expected.token);
    EXPECT_EQ(beat.result_int(), expected.heartbeat) << expected.token << ": " << beat.body();
    auto read = call(bhttp::verb::get, "/api/profiles", "", expected.token);
    EXPECT_EQ(read.result_int(), expected.read) << expected.token << ": " << read.body();
  }
  auto refused = call(bhttp::verb::get, "/api/hosts", "", "agent-key");
  EXPECT_NE(refused.body().find("this token's roles (agent) do not allow this endpoint: it needs "
                                "operator, reader"),
            std::string::npos)
      << refused.body();
  EXPECT_EQ(call(bhttp::verb::get, "/api/hosts", "", "nobody").result_int(), 401u);
}

TEST_F(ApiTest, APlusInTheQueryIsATimeZoneNotASpace) {
  auto reply = call(bhttp::verb::get, "/api/profiles?since=2025-11-22T10:00:00+02:00");
  EXPECT_EQ(reply.result_int(), 200u) << reply.body();
  auto encoded = call(bhttp::verb::get, "/api/profiles?since=2025-11-22T10%3A00%3A00%2B02%3A00");
  EXPECT_EQ(encoded.result_int(), 200u) << encoded.body();
}

// Studio's UI builds its queries with URLSearchParams, which writes a space as '+'; Studio reads
// pids with int(), which takes spaces around them.
TEST_F(ApiTest, APlusElsewhereInTheQueryIsASpaceAsStudioReadsIt) {
  EXPECT_EQ(url_decode("a+b%2B", /*plus_is_space=*/true), "a b+");
  EXPECT_EQ(url_decode("a+b%2B"), "a+b+") << "a path keeps its '+'";
  auto pids = call(bhttp::verb::get, "/api/metrics/profiling/host_status?pids=1234+,+42");
  EXPECT_EQ(pids.result_int(), 200u) << pids.body();
  auto spaced = call(bhttp::verb::get, "/api/profiles?since=2025-11-22+10:00:00+02:00");
  EXPECT_EQ(spaced.result_int(), 200u) << spaced.body();
  auto bad = call(bhttp::verb::get, "/api/metrics/profiling/host_status?pids=12+34");
  EXPECT_EQ(bad.result_int(), 422u) << bad.body();
}

TEST_F(ApiTest, OnlyTheMethodsOfARouteAreServed) {
  auto head = call(bhttp::verb::head, "/api/hosts");
  EXPECT_EQ(head.result_int(), 405u);
  EXPECT_EQ(head[bhttp::field::allow], "GET");
}

TEST_F(ApiTest, RequestsAreCountedByRouteNotByPath) {
  call(bhttp::verb::get, "/api/../../etc/passwd");
  call(bhttp::verb::get, "/api/hosts/%00%ff");
  EXPECT_EQ(metrics_.requests("other", 404), 2u) << "hostile paths share one series";
}

// Issue 22, server 7: one spelling per route, the scheme in any case, and headers that keep
// answers out of caches and content sniffing.
TEST_F(ApiTest, OtherSpellingsOfAPathAreNotItsRoute) {
  EXPECT_EQ(call(bhttp::verb::get, "/metrics").result_int(), 200u);
  for (const char* other : {"//metrics", "/metrics/", "/api//hosts", "/api/hosts/"}) {
    EXPECT_EQ(call(bhttp::verb::get, other).result_int(), 404u) << other;
  }
}

TEST_F(ApiTest, TheBearerSchemeIsCaseInsensitive) {
  for (const char* scheme : {"Bearer ", "bearer ", "BEARER "}) {
    http::Request request(bhttp::verb::get, "/api/hosts", 11);
    request.set(bhttp::field::authorization, std::string(scheme) + "t0k3n");
    auto reply = api_->handle(request, http::Client{"127.0.0.1:1", {}, "127.0.0.1", nullptr});
    EXPECT_EQ(reply.result_int(), 200u) << scheme;
  }
}

TEST_F(ApiTest, EveryAnswerIsNeitherSniffedNorCached) {
  for (const char* path : {"/api/hosts", "/metrics", "/api/nothing", "/api/v1/health_check"}) {
    auto reply = call(bhttp::verb::get, path);
    EXPECT_EQ(reply["X-Content-Type-Options"], "nosniff") << path;
    EXPECT_EQ(reply[bhttp::field::cache_control], "no-store") << path;
  }
  auto refused = call(bhttp::verb::get, "/api/hosts", "", "nobody");
  EXPECT_EQ(refused.result_int(), 401u);
  EXPECT_EQ(refused["X-Content-Type-Options"], "nosniff");
}

// Issue 22, server 5: the token is checked on the headers, before any of a body is read, and a
// route takes no more body than it needs.
TEST_F(ApiTest, HeadersAloneDecideWhetherABodyIsRead) {
  auto admit = [&](bhttp::verb method, const std::string& target, const std::string& token) {
    http::RequestHeader header;
    header.method(method);
    header.target(target);
    if (!token.empty()) header.set(bhttp::field::authorization, "Bearer " + token);
    return api_->admit(header, http::Client{"127.0.0.1:1", {}, "127.0.0.1", nullptr});
  };
  auto no_token = admit(bhttp::verb::post, "/api/metrics/heartbeat", "");
  ASSERT_TRUE(no_token.refusal);
  EXPECT_EQ(no_token.refusal->result_int(), 401u);
  EXPECT_EQ((*no_token.refusal)["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(
      admit(bhttp::verb::post, "/api/metrics/profile_request", "agent-key").refusal->result_int(),
      403u);
  EXPECT_EQ(admit(bhttp::verb::post, "/api/nothing", "t0k3n").refusal->result_int(), 404u);
  EXPECT_EQ(admit(bhttp::verb::put, "/api/hosts", "t0k3n").refusal->result_int(), 405u);
  EXPECT_EQ(metrics_.requests("/api/metrics/heartbeat", 401), 1u) << "refusals are counted";

  auto heartbeat = admit(bhttp::verb::post, "/api/metrics/heartbeat", "agent-key");
  EXPECT_FALSE(heartbeat.refusal);
  EXPECT_TRUE(heartbeat.authenticated);
  EXPECT_EQ(heartbeat.max_body_bytes, 1u << 20);
  auto upload = admit(bhttp::verb::post, "/api/v2/profiles?key=agent-key", "");
  EXPECT_FALSE(upload.refusal) << "gProfiler's key in the query is a token too";
  EXPECT_GT(upload.max_body_bytes, 1u << 20) << "an upload may take the server's whole limit";
  auto read = admit(bhttp::verb::get, "/api/hosts", "read-key");
  EXPECT_FALSE(read.refusal);
  EXPECT_EQ(read.max_body_bytes, 0u) << "a GET has no body";
  auto health = admit(bhttp::verb::get, "/api/v1/health_check", "");
  EXPECT_FALSE(health.refusal);
  EXPECT_FALSE(health.authenticated) << "an open route proves nothing of its client";
}

// Issue 22, server 2: the decompressed cap is --max-profile-mb; a bomb past it is refused while
// it inflates, and the answer says so.
TEST_F(ApiTest, AnUploadInflatingPastTheProfileLimitIs413) {
  ApiOptions options;
  options.max_profile_bytes = 64 << 10;
  Api api(*store_, Tokens::of(std::vector<std::pair<std::string_view, Roles>>{{"k", kAgentRole}}),
          metrics_, options);
  auto upload = [&](size_t profile_bytes) {
    std::string json = R"({"start_time":"2026-11-26T10:00:00","end_time":"2026-11-26T10:01:00",)"
                       R"("hostname":"web-01","profile":")" +
                       std::string(profile_bytes, 'x') + R"("})";
    http::Request request(bhttp::verb::post, "/api/v2/profiles?key=k&service=web", 11);
    request.body() = gzip_compress(json).value();
    request.prepare_payload();
    return api.handle(request, http::Client{"127.0.0.1:1", {}, "127.0.0.1", nullptr});
  };
  auto bomb = upload(1 << 20);
  EXPECT_EQ(bomb.result_int(), 413u) << bomb.body();
  EXPECT_NE(bomb.body().find("more than 65536 bytes"), std::string::npos) << bomb.body();
  auto within = upload(1000);
  EXPECT_EQ(within.result_int(), 422u)
      << "read whole, then refused for its content: " << within.body();
}

}  // namespace
}  // namespace dormant::server::api
