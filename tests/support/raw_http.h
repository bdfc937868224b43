// Plain-HTTP clients on raw sockets, for tests that act as attackers do: connect from any
// loopback address (127.0.0.2 is another host to the server), send half a request, hold a
// connection, read an answer's head byte by byte.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace dormant::testing {

// A socket connected from `source` (a loopback address) to 127.0.0.1:`port`; a read on it gives
// up after `read_limit`.
UniqueFd connect_from(const char* source, uint16_t port,
                      std::chrono::milliseconds read_limit = std::chrono::seconds(6));

bool send_text(const UniqueFd& socket, std::string_view text);

// What the server sends up to the end of one answer's head; "" when it closed (or the read
// limit ran out) first.
std::string read_head(const UniqueFd& socket);

// The status code of an answer's head ("HTTP/1.1 200 OK..." gives 200); 0 for none.
int status_of(std::string_view head);

// Whether the server closes the connection (within the socket's read limit), whatever it sends
// first.
bool closed_by_server(const UniqueFd& socket);

}  // namespace dormant::testing
