#include "config/server_urls.h"

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

}  // namespace dormant::config
