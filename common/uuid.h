// Random (version 4) UUIDs: the server's command, request and profile file ids.
#pragma once

#include <string>

namespace dormant {

// "0b3c2f9e-5d1a-4c7e-9f60-2a8d4b1e7c35": lower case, 36 characters, from the kernel's random
// source (std::random_device where getrandom(2) fails).
std::string random_uuid();

}  // namespace dormant
