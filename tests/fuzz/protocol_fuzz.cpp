// libFuzzer target: the bodies agents and people send the server (heartbeat, command completion,
// profiling request, profile upload) and the heartbeat answers agents read. The first byte picks
// the message, the rest is its text. What a parser accepts must survive its own to_json and
// parse to the same value again; a heartbeat whose list is read into structs
// (plain_heartbeat.h) must read as it does through a document.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wire/json_fields.h"
#include "wire/plain_heartbeat.h"
#include "wire/profiling_request.h"
#include "wire/protocol.h"

namespace {

template <typename Parse>
void round_trip(const nlohmann::json& body, Parse parse) {
  auto parsed = parse(body);
  if (!parsed.ok()) {
    if (parsed.error().message().empty()) std::abort();  // every refusal says why
    return;
  }
  auto again = parse(dormant::wire::to_json(*parsed));
  if (!again.ok() || !(*again == *parsed)) std::abort();
}

void same_as_document(std::string_view text) {
  using namespace dormant::wire;
  auto body = parse_json_text(text, "heartbeat");
  auto expected = body.ok() ? parse_heartbeat_request(*body)
                            : dormant::Result<HeartbeatRequest>(std::move(body).take_error());
  if (auto plain = read_plain_heartbeat(text); plain && !(expected.ok() && *plain == *expected)) {
    std::abort();
  }
  auto read = parse_heartbeat_text(text);
  if (read.ok() != expected.ok()) std::abort();
  if (read.ok() ? !(*read == *expected) : read.error().message() != expected.error().message()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 5 == 0) same_as_document(text);
  auto body = dormant::wire::parse_json_text(text, "body");
  if (!body.ok()) return 0;
  using namespace dormant::wire;
  switch (data[0] % 5) {
    case 0:
      round_trip(*body, [](const nlohmann::json& j) { return parse_heartbeat_request(j); });
      break;
    case 1:
      round_trip(*body, [](const nlohmann::json& j) { return parse_command_completion(j); });
      break;
    case 2:
      round_trip(*body, [](const nlohmann::json& j) { return parse_profiling_request(j); });
      break;
    case 3:
      round_trip(*body, [](const nlohmann::json& j) { return parse_profile_upload(j); });
      break;
    case 4:
      round_trip(*body, [](const nlohmann::json& j) { return parse_heartbeat_response(j); });
      break;
  }
  return 0;
}
