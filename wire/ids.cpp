#include "wire/ids.h"

#include <array>
#include <cstddef>
#include <string>

#include <arpa/inet.h>

namespace dormant::wire {
namespace {

constexpr std::size_t kUuidLength = 36;
constexpr std::array<std::size_t, 4> kUuidDashes = {8, 13, 18, 23};

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool is_uuid_dash_position(std::size_t i) {
  for (std::size_t dash : kUuidDashes) {
    if (i == dash) return true;
  }
  return false;
}

}  // namespace

bool is_uuid(std::string_view text) {
  if (text.size() != kUuidLength) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    bool ok = is_uuid_dash_position(i) ? text[i] == '-' : is_hex_digit(text[i]);
    if (!ok) return false;
  }
  return true;
}

bool is_ip_address(std::string_view text) {
  // Longest textual IPv6 address, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255".
  constexpr std::size_t kMaxLength = 45;
  // A NUL would end the C string early and let "10.0.0.1\0junk" through.
  if (text.empty() || text.size() > kMaxLength || text.find('\0') != std::string_view::npos) {
    return false;
  }
  std::string address(text);
  std::array<unsigned char, 16> binary{};
  return ::inet_pton(AF_INET, address.c_str(), binary.data()) == 1 ||
         ::inet_pton(AF_INET6, address.c_str(), binary.data()) == 1;
}

}  // namespace dormant::wire
