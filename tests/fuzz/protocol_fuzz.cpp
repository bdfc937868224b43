// libFuzzer target: the bodies agents and people send the server (heartbeat, command completion,
// profiling request, profile upload) and the heartbeat answers agents read. The first byte picks
// the message, the rest is its text. What a parser accepts must survive its own to_json and
// parse to the same value again.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "heartbeat/protocol/json_fields.h"
#include "heartbeat/protocol/profiling_request.h"
#include "heartbeat/protocol/protocol.h"

namespace {

template <typename Parse>
void round_trip(const nlohmann::json& body, Parse parse) {
  auto parsed = parse(body);
  if (!parsed.ok()) {
    if (parsed.error().message().empty()) std::abort();  // every refusal says why
    return;
  }
  auto again = parse(dormant::heartbeat::to_json(*parsed));
  if (!again.ok() || !(*again == *parsed)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto body = dormant::heartbeat::parse_json_text(text, "body");
  if (!body.ok()) return 0;
  using namespace dormant::heartbeat;
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
