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

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

ListingWriter::ListingWriter(std::string_view field, size_t max_bytes,
                             std::string_view shared_field)
    : text_("{" + dump(std::string(field)) + ":["),
      max_bytes_(max_bytes),
      shared_field_(shared_field) {}

bool ListingWriter::add(const nlohmann::json& item) { return append(dump(item), ""); }

bool ListingWriter::add(const nlohmann::json& item, const std::string& key,
                        const nlohmann::json& value) {
  if (holds(key)) return add(item);
  if (!append(dump(item), dump(key) + ":" + dump(value))) return false;
  shared_keys_.insert(key);
  return true;
}

bool ListingWriter::append(const std::string& item, const std::string& member) {
  size_t growth = item.size() + 1 + (member.empty() ? 0 : member.size() + 1);
  if (items_ > 0 && text_.size() + shared_text_.size() + growth > max_bytes_) return false;
  if (!member.empty()) {
    if (!shared_text_.empty()) shared_text_ += ',';
    shared_text_ += member;
  }
  if (items_ > 0) text_ += ',';
  text_ += item;
  ++items_;
  return true;
}

std::string ListingWriter::finish(const std::optional<std::string>& next) {
  text_ += ']';
  if (!shared_field_.empty()) text_ += "," + dump(shared_field_) + ":{" + shared_text_ + "}";
  text_ += ",\"next\":";
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
