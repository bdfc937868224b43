#include "wire/compressed_upload.h"

#include "common/gzip.h"
#include "common/json_text.h"

namespace dormant::wire {

Result<CompressedUpload> compress_upload(const ProfileUpload& upload) {
  nlohmann::json body = to_json(upload);
  body.erase("gpid");
  std::string text = json_text(body);
  text.pop_back();  // the object's closing brace
  text += ",\"gpid\":";
  auto head = gzip_compress(text);
  if (!head) return std::move(head).take_error();
  return CompressedUpload{upload.end_time, std::move(*head)};
}

Result<std::string> body_with_gpid(const CompressedUpload& upload, std::optional<int64_t> gpid) {
  auto tail = gzip_compress((gpid ? std::to_string(*gpid) : "\"\"") + "}");
  if (!tail) return std::move(tail).take_error();
  return upload.gzip_head + *tail;
}

}  // namespace dormant::wire
