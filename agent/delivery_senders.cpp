#include "agent/delivery_senders.h"

#include <spdlog/spdlog.h>

#include "common/gzip.h"
#include "common/json_text.h"
#include "heartbeat/json_fields.h"

namespace dormant::agent {
namespace {

constexpr size_t kMaxProfileJsonBytes = 256 << 20;

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

// The spooled body with `gpid` set; the profile's end time for the query.
struct PreparedUpload {
  std::string gzip_body;
  std::string end_time;
};

Result<PreparedUpload> prepare(const std::string& spooled, std::optional<int64_t> gpid) {
  auto text = gzip_decompress_at_most(spooled, kMaxProfileJsonBytes);
  if (!text) return std::move(text).take_error();
  auto body = heartbeat::parse_json_text(*text, "spooled profile");
  if (!body) return std::move(body).take_error();
  if (!body->is_object() || !body->contains("end_time") || !(*body)["end_time"].is_string()) {
    return Error::invalid_argument("the spooled profile is not an upload body");
  }
  (*body)["gpid"] = gpid ? nlohmann::json(*gpid) : nlohmann::json("");
  auto compressed = gzip_compress(json_text(*body));
  if (!compressed) return std::move(compressed).take_error();
  return PreparedUpload{std::move(*compressed), (*body)["end_time"].get<std::string>()};
}

}  // namespace

std::shared_ptr<heartbeat::RetryingSender> make_completion_sender(
    boost::asio::io_context& io, std::shared_ptr<heartbeat::HttpsClient> client,
    heartbeat::RetryTimer retry, CommandJournal& journal) {
  auto next = [&journal]() -> std::optional<heartbeat::RetryingSender::Message> {
    if (journal.owed().empty()) return std::nullopt;
    heartbeat::CommandCompletion completion = journal.owed().front();
    std::string id = completion.command_id;
    heartbeat::RetryingSender::Message message;
    message.post = {
        "/api/metrics/command_completion", json_text(heartbeat::to_json(completion)), {}};
    message.delivered = [&journal, id](const heartbeat::HttpReply& reply) {
      auto answer = heartbeat::parse_json_text(reply.body, "completion answer");
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
                     heartbeat::single_quoted(said));
      }
      journal.settle(id);
    };
    message.refused = [&journal, id](const std::string& why) {
      spdlog::error("the server refused the completion of command {}: {}", id, why);
      journal.settle(id);
    };
    return message;
  };
  return heartbeat::RetryingSender::make(io, std::move(client), std::move(retry),
                                         "command completion", std::move(next));
}

std::shared_ptr<heartbeat::RetryingSender> make_upload_sender(
    boost::asio::io_context& io, std::shared_ptr<heartbeat::HttpsClient> client,
    heartbeat::RetryTimer retry, ProfileSpool& spool, UploadIdentity identity) {
  auto gpid = std::make_shared<std::optional<int64_t>>();
  auto next = [&spool, identity = std::move(identity),
               gpid]() -> std::optional<heartbeat::RetryingSender::Message> {
    for (;;) {
      std::optional<SpooledProfile> spooled = spool.oldest();
      if (!spooled) return std::nullopt;
      auto prepared = prepare(spooled->gzip_body, *gpid);
      if (!prepared) {
        spdlog::error("dropped the spooled profile {}: {}", spooled->path.string(),
                      prepared.error().message());
        spool.remove(spooled->path);
        continue;
      }
      heartbeat::RetryingSender::Message message;
      message.post.path = "/api/v2/profiles?key=" + url_encode(identity.token) +
                          "&service=" + url_encode(identity.service_name) +
                          "&hostname=" + url_encode(identity.hostname) +
                          "&timestamp=" + url_encode(prepared->end_time) +
                          "&version=" + url_encode(identity.agent_version);
      message.post.body = std::move(prepared->gzip_body);
      message.post.headers = {{"GPROFILER-API-KEY", identity.token},
                              {"GPROFILER-SERVICE-NAME", identity.service_name},
                              {"Content-Encoding", "gzip"},
                              {"Content-Type", "application/json"}};
      auto path = spooled->path;
      size_t bytes = message.post.body.size();
      message.delivered = [&spool, gpid, path, bytes](const heartbeat::HttpReply& reply) {
        auto answer = heartbeat::parse_json_text(reply.body, "upload answer");
        if (answer && answer->is_object() && (*answer)["gpid"].is_number_integer()) {
          *gpid = (*answer)["gpid"].get<int64_t>();
        }
        spdlog::info("uploaded a profile ({} bytes){}", bytes,
                     *gpid ? ", gpid " + std::to_string(**gpid) : "");
        spool.remove(path);
      };
      message.refused = [&spool, path](const std::string& why) {
        spdlog::error("the server refused the profile {}: {}; dropped it", path.filename().string(),
                      why);
        spool.remove(path);
      };
      return message;
    }
  };
  return heartbeat::RetryingSender::make(io, std::move(client), std::move(retry), "profile upload",
                                         std::move(next));
}

}  // namespace dormant::agent
