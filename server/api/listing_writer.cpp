#include "server/api/listing_writer.h"

#include "common/text.h"

namespace dormant::server::api {
namespace {

constexpr size_t kLongestCursor = 4096;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

ListingWriter::ListingWriter(std::string_view field, size_t max_bytes)
    : text_("{" + nlohmann::json(std::string(field)).dump() + ":["), max_bytes_(max_bytes) {}

bool ListingWriter::add(const nlohmann::json& item) {
  std::string text = item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (items_ > 0 && text_.size() + text.size() + 1 > max_bytes_) return false;
  if (items_ > 0) text_ += ',';
  text_ += text;
  ++items_;
  return true;
}

std::string ListingWriter::finish(const std::optional<std::string>& next) {
  text_ += "],\"next\":";
  text_ += next ? nlohmann::json(*next).dump() : "null";
  text_ += '}';
  return std::move(text_);
}

std::string encode_cursor(std::string_view key) { return to_hex(key); }

std::optional<std::string> decode_cursor(std::string_view cursor) {
  if (cursor.size() % 2 != 0 || cursor.size() > kLongestCursor) return std::nullopt;
  std::string key;
  key.reserve(cursor.size() / 2);
  for (size_t i = 0; i < cursor.size(); i += 2) {
    int high = hex_value(cursor[i]);
    int low = hex_value(cursor[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    key += static_cast<char>(high * 16 + low);
  }
  return key;
}

}  // namespace dormant::server::api
