#include "common/text.h"

#include <charconv>

namespace dormant {

std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::string shortened(std::string text, size_t most) {
  if (text.size() <= most) return text;
  const size_t size = text.size();
  text.resize(most);
  return text + "... (" + std::to_string(size) + " bytes)";
}

std::string to_hex(std::string_view bytes) {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes.size());
  for (unsigned char byte : bytes) {
    hex += kHex[byte >> 4];
    hex += kHex[byte & 0xf];
  }
  return hex;
}

}  // namespace dormant
