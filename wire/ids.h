// Identifiers on the wire: command and request ids (UUIDs) and host addresses, checked. New UUIDs
// come from common/uuid.h.
#pragma once

#include <string_view>

namespace dormant::wire {

// Canonical 8-4-4-4-12 hex form, either case ("1b4e28ba-2fa1-4d2b-883f-0016d3cca427").
bool is_uuid(std::string_view text);

// An IPv4 or IPv6 address as inet_pton(3) reads it (no prefix length, no zone).
bool is_ip_address(std::string_view text);

}  // namespace dormant::wire
