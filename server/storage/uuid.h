// Random (version 4) UUIDs for request and command ids.
#pragma once

#include <string>

namespace dormant::server::storage {

// "0b3c2f9e-5d1a-4c7e-9f60-2a8d4b1e7c35": lowercase, 36 characters.
std::string random_uuid();

}  // namespace dormant::server::storage
