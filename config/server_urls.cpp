#include "config/server_urls.h"

#include <algorithm>

#include "common/text.h"
#include "config/cli.h"

namespace dormant::config {

Result<std::vector<std::string>> split_server_urls(std::string_view list, std::string_view flag) {
  std::vector<std::string> urls;
  if (trim(list).empty()) return urls;
  for (std::string_view part : split(list, ',')) {
    std::string url(trim(part));
    if (url.empty()) {
      return Error::invalid_argument(std::string(flag) + ": empty URL in '" + std::string(list) +
                                     "' (separate the URLs with single commas: " +
                                     std::string(flag) + " https://a:8443,https://b:8443)");
    }
    if (!is_http_url(url)) {
      return Error::invalid_argument(std::string(flag) +
                                     " must be an http:// or https:// URL (got '" + url + "')");
    }
    urls.push_back(std::move(url));
  }
  return urls;
}

bool is_plain_http_beyond_loopback(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return false;
  std::string_view authority = url.substr(kScheme.size());
  authority = authority.substr(0, authority.find('/'));
  if (authority.starts_with("[")) return authority.substr(0, authority.find(']') + 1) != "[::1]";
  std::string_view host = authority.substr(0, authority.find(':'));
  if (host == "localhost") return false;
  if (!host.starts_with("127.")) return true;
  auto octets = split(host, '.');
  return octets.size() != 4 ||
         !std::all_of(octets.begin(), octets.end(), [](std::string_view part) {
           auto value = parse_integer(part);
           return value && *value >= 0 && *value <= 255;
         });
}

}  // namespace dormant::config
