#include "heartbeat/reply_text.h"

#include "common/text.h"
#include "wire/bounded_json.h"
#include "wire/json_fields.h"

namespace dormant::heartbeat {
namespace {

// A server's error body is a short object; a large or deep one is shown as an excerpt.
constexpr wire::JsonBudget kErrorBodyBudget{.max_depth = 4, .max_values = 64};

std::string server_message(const std::string& body) {
  auto parsed = wire::parse_json_within(body, "answer", kErrorBodyBudget);
  if (parsed && parsed->is_object()) {
    for (const char* key : {"message", "detail"}) {
      auto found = parsed->find(key);
      if (found == parsed->end() || !found->is_string()) continue;
      std::string text = shortened(found->get<std::string>(), kMaxReplyMessageBytes);
      // A log line of the server's making: printable ASCII only, so that no escape sequence,
      // C1 control or bidirectional override reaches the operator's terminal.
      for (char& c : text) {
        auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte >= 0x7f) c = byte >= 0x80 ? '?' : ' ';
      }
      return text;
    }
  }
  return wire::single_quoted(body);
}

std::string hint_for(unsigned status) {
  switch (status) {
    case 401:
      return "; the server does not take this agent's token: check --token-file (or "
             "--token) against the server's tokens";
    case 403:
      return "; the server knows the token, but its role may not do this: the agent needs a "
             "token of the agent role";
    case 404:
      return "; check the path in --api-server (the server's base URL, without /api)";
    default:
      return "";
  }
}

}  // namespace

std::string describe_reply(const HttpReply& reply) {
  std::string text = "the server answered HTTP " + std::to_string(reply.status);
  if (!reply.body.empty()) text += ": " + server_message(reply.body);
  return text + hint_for(reply.status);
}

}  // namespace dormant::heartbeat
