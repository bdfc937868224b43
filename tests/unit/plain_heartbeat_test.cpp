// Heartbeats whose containers[] is read straight into structs (plain_heartbeat.h): whichever way a
// text is read, it gives what parse_json_text and parse_heartbeat_request give, value or error.
#include "wire/plain_heartbeat.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire/json_fields.h"
#include "wire/limits.h"

namespace dormant::wire {
namespace {

// What the document path makes of `text`.
Result<HeartbeatRequest> by_document(std::string_view text) {
  auto body = parse_json_text(text, "heartbeat");
  if (!body) return std::move(body).take_error();
  return parse_heartbeat_request(*body);
}

void expect_same_as_document(const std::string& text) {
  Result<HeartbeatRequest> read = parse_heartbeat_text(text);
  Result<HeartbeatRequest> expected = by_document(text);
  ASSERT_EQ(read.ok(), expected.ok()) << text;
  if (read.ok()) {
    EXPECT_EQ(*read, *expected) << text;
  } else {
    EXPECT_EQ(read.error().message(), expected.error().message()) << text;
  }
}

// A heartbeat around `containers`, the text of a JSON list.
std::string with_containers(const std::string& containers, const std::string& more = "") {
  return R"({"ip_address":"10.0.0.7","hostname":"web-1","service_name":"web",)"
         R"("agent_version":"1.2","extra_member":{"kept":[1,2.5,null,true]},)" +
         more + R"("containers":)" + containers + "}";
}

const std::string kPlainContainer =
    R"({"container_id":"c1","container_name":"app","runtime":"containerd","namespace":"shop",)"
    R"("pod_name":"cart-0","workload_name":"cart","workload_kind":"Deployment",)"
    R"("processes":[{"pid":10,"process_name":"java"},{"process_name":"gc","pid":9}]})";

TEST(PlainHeartbeat, AnAgentsListIsReadIntoStructsAsTheDocumentReadsIt) {
  HeartbeatRequest request;
  request.ip_address = "10.0.0.7";
  request.hostname = "web-1";
  request.service_name = "web";
  ReportedContainer app{"c1",     "app",  "containerd", "shop",
                        "cart-0", "cart", "Deployment", {{10, "java"}, {9, "gc"}}};
  ReportedContainer sidecar;
  sidecar.container_name = "sidecar";
  request.containers = {app, sidecar};
  std::string text = heartbeat_body_text(request);
  std::optional<HeartbeatRequest> plain = read_plain_heartbeat(text);
  ASSERT_TRUE(plain) << text;
  EXPECT_EQ(*plain, *by_document(text));
  EXPECT_EQ(plain->containers, request.containers);

  for (const std::string& list : std::vector<std::string>{
           "[]", "[" + kPlainContainer + "]", R"([{"container_name":"","processes":[]}])"}) {
    std::string body = with_containers(list);
    EXPECT_TRUE(read_plain_heartbeat(body)) << body;
    expect_same_as_document(body);
  }
  std::string no_list = R"({"ip_address":"10.0.0.7","hostname":"web-1","service_name":"web"})";
  EXPECT_TRUE(read_plain_heartbeat(no_list));
  expect_same_as_document(no_list);
}

TEST(PlainHeartbeat, EveryOtherListIsReadByTheDocumentWithItsErrors) {
  const std::vector<std::string> lists = {
      R"([{"containerName":"app"}])",  // an alias
      R"([{"container_name":"app","processes":[{"pid":1,"processName":"x"}]}])",
      R"([{"container_name":"app","pod_name":null}])",  // null: absent
      R"([{"container_name":null}])",
      R"([{"container_name":"app","labels":{"a":"b"}}])",      // a member not read
      R"([{"container_name":"app","container_name":"web"}])",  // twice: the last
      R"([{"container_name":"app","processes":[{"pid":2.0,"process_name":"x"}]}])",
      R"([{"container_name":"app","processes":[{"pid":0,"process_name":"x"}]}])",
      R"([{"container_name":"app","processes":[{"pid":-4,"process_name":"x"}]}])",
      R"([{"container_name":"app","processes":[{"pid":4194305,"process_name":"x"}]}])",
      R"([{"container_name":"app","processes":[{"pid":18446744073709551615,"process_name":"x"}]}])",
      R"([{"container_name":"app","processes":[{"pid":"7","process_name":"x"}]}])",
      R"([{"container_name":"app","processes":[{"pid":7}]}])",
      R"([{"container_name":"app","processes":[{"pid":7,"process_name":"x","pid":8}]}])",
      R"([{"container_name":"app","processes":[{"pid":7,"process_name":["x"]}]}])",
      R"([{"container_name":"app","processes":{"pid":7}}])",
      R"([{"container_name":"app","processes":[[]]}])",
      R"([{"container_name":"app","processes":null}])",
      R"([{"container_name":7}])",
      R"([{"namespace":"shop"}])",
      R"([{"container_name":"app","namespace":{"name":"shop"}}])",
      R"([{"container_name":"app","runtime":true}])",
      R"(["app"])",
      R"([[]])",
      R"([null])",
      R"(null)",
      R"({"container_name":"app"})",
      R"("app")",
  };
  for (const std::string& list : lists) {
    std::string body = with_containers(list);
    EXPECT_FALSE(read_plain_heartbeat(body)) << body;
    expect_same_as_document(body);
  }
  const std::vector<std::string> bodies = {
      with_containers("[" + kPlainContainer + "]", R"("containers":[],)"),  // the list twice
      with_containers("[" + kPlainContainer + "]", R"("containers_digest":"abc",)"),
      with_containers("[" + kPlainContainer + "]", R"("hostname":"",)"),  // a bad member
      R"({"ip_address":"10.0.0.7","hostname":"web-1","service_name":"web","containers":[)" +
          kPlainContainer,  // cut short
      R"([{"containers":[]}])",
      R"({"ip_address":"10.0.0.7","hostname":"web-1","service_name":"web",)"
      R"("nested":{"containers":"not the list"}})",
      "",
      "{",
  };
  for (const std::string& body : bodies) expect_same_as_document(body);
  EXPECT_TRUE(read_plain_heartbeat(bodies[5])) << "a containers member deeper is the body's";
}

TEST(PlainHeartbeat, ListsLongerThanTheLimitAreRefusedAsBefore) {
  std::string containers = "[";
  for (size_t i = 0; i <= kMaxListItems; ++i) {
    containers += (i == 0 ? "" : ",") + std::string(R"({"container_name":"c"})");
  }
  std::string processes = R"([{"container_name":"c","processes":[)";
  for (size_t i = 0; i <= kMaxListItems; ++i) {
    processes += (i == 0 ? "" : ",") + std::string(R"({"pid":1,"process_name":"p"})");
  }
  for (const std::string& list : std::vector<std::string>{containers + "]", processes + "]}]"}) {
    std::string body = with_containers(list);
    EXPECT_FALSE(read_plain_heartbeat(body));
    Result<HeartbeatRequest> read = parse_heartbeat_text(body);
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.error().message().find("at most 10000 items"), std::string::npos)
        << read.error().message();
    expect_same_as_document(body);
  }
}

}  // namespace
}  // namespace dormant::wire
