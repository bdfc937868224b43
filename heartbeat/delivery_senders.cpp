#include "heartbeat/delivery_senders.h"

#include <spdlog/spdlog.h>

#include "common/json_text.h"
#include "wire/bounded_json.h"
#include "wire/json_fields.h"

namespace dormant::heartbeat {
namespace {

std::string url_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      encoded += static_cast<char>(c);
    } else {
      encoded += '%';
      encoded += kHex[c >> 4];
      encoded += kHex[c & 15];
    }
  }
  return encoded;
}

}  // namespace

std::shared_ptr<RetryingSender> make_completion_sender(boost::asio::io_context& io,
                                                       std::shared_ptr<HttpsClient> client,
                                                       RetryTimer retry, CompletionQueue& owed,
                                                       std::unique_ptr<BackoffTimer> timer) {
  auto next = [&owed]() -> std::optional<RetryingSender::Message> {
    std::optional<wire::CommandCompletion> completion = owed.oldest_owed();
    if (!completion) return std::nullopt;
    std::string id = completion->command_id;
    RetryingSender::Message message;
    message.post = {.path = "/api/metrics/command_completion",
                    .body = json_text(wire::to_json(*completion))};
    message.delivered = [&owed, id](const HttpReply& reply) {
      auto answer = wire::parse_json_within(reply.body, "completion answer");
      bool recorded = false;
      if (answer && answer->is_object()) {
        auto success = answer->find("success");
        recorded = success != answer->end() && success->is_boolean() && success->get<bool>();
      }
      if (recorded) {
        spdlog::debug("completion of command {} recorded", id);
      } else {
        std::string said = answer && answer->is_object() && (*answer)["message"].is_string()
                               ? (*answer)["message"].get<std::string>()
                               : reply.body.substr(0, 200);
        spdlog::warn("the server did not record the completion of command {}: {}", id,
                     wire::single_quoted(said));
      }
      owed.settle(id);
    };
    message.refused = [&owed, id](const std::string& why) { owed.reject(id, why); };
    return message;
  };
  return RetryingSender::make(io, std::move(client), std::move(retry), "command completion",
                              std::move(next), std::move(timer));
}

std::shared_ptr<RetryingSender> make_upload_sender(boost::asio::io_context& io,
                                                   std::shared_ptr<HttpsClient> client,
                                                   RetryTimer retry, UploadQueue& queue,
                                                   const UploadIdentity& identity,
                                                   std::unique_ptr<BackoffTimer> timer) {
  auto gpid = std::make_shared<std::optional<int64_t>>();
  auto next = [&queue, &identity, gpid]() -> std::optional<RetryingSender::Message> {
    for (;;) {
      std::optional<QueuedUpload> queued = queue.oldest_upload();
      if (!queued) return std::nullopt;
      auto body = wire::body_with_gpid(queued->upload, *gpid);
      if (!body) {
        spdlog::error("dropped the queued profile {}: {}", queued->key, body.error().message());
        queue.remove_upload(queued->key);
        continue;
      }
      RetryingSender::Message message;
      message.post.path = "/api/v2/profiles?key=" + url_encode(identity.token) +
                          "&service=" + url_encode(identity.service_name) +
                          "&hostname=" + url_encode(identity.hostname) +
                          "&timestamp=" + url_encode(queued->upload.end_time) +
                          "&version=" + url_encode(identity.agent_version);
      message.post.body = std::move(*body);
      message.post.max_reply_bytes = kMaxUploadReplyBytes;
      message.post.headers = {{"GPROFILER-API-KEY", identity.token},
                              {"GPROFILER-SERVICE-NAME", identity.service_name},
                              {"Content-Encoding", "gzip"},
                              {"Content-Type", "application/json"}};
      size_t bytes = message.post.body.size();
      message.delivered = [&queue, gpid, key = queued->key, bytes](const HttpReply& reply) {
        auto answer = wire::parse_json_within(reply.body, "upload answer");
        if (answer && answer->is_object() && (*answer)["gpid"].is_number_integer()) {
          *gpid = (*answer)["gpid"].get<int64_t>();
        }
        spdlog::info("uploaded a profile ({} bytes){}", bytes,
                     *gpid ? ", gpid " + std::to_string(**gpid) : "");
        queue.remove_upload(key);
      };
      message.refused = [&queue, key = queued->key](const std::string& why) {
        queue.reject_upload(key, why);
      };
      return message;
    }
  };
  return RetryingSender::make(io, std::move(client), std::move(retry), "profile upload",
                              std::move(next), std::move(timer));
}

}  // namespace dormant::heartbeat
