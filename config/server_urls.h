// The server flags' lists: --api-server and --server-host take one URL or several, separated by
// commas ("https://a:8443,https://b:8443"), and the agent fails over between them in that order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace dormant::config {

// The URLs of `list` in order, each without the blanks around it; an empty element or one that is
// not an http:// or https:// URL is an error naming `flag`. An empty `list` is no URL at all.
Result<std::vector<std::string>> split_server_urls(std::string_view list, std::string_view flag);

// An http:// URL whose host is not this machine (localhost, 127.0.0.0/8, [::1]): the token and
// every profile would cross the network in the clear.
bool is_plain_http_beyond_loopback(std::string_view url);

}  // namespace dormant::config
