#include "server/api/browser_guard.h"

#include <vector>

#include <openssl/evp.h>

#include <boost/beast/core/string.hpp>

#include "common/text.h"
#include "server/api/api_requests.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;

bool equal_nocase(std::string_view a, std::string_view b) {
  return boost::beast::iequals(boost::beast::string_view(a.data(), a.size()),
                               boost::beast::string_view(b.data(), b.size()));
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && equal_nocase(text.substr(0, prefix.size()), prefix);
}

bool changes_state(bhttp::verb method) {
  return method != bhttp::verb::get && method != bhttp::verb::head &&
         method != bhttp::verb::options;
}

// "https://studio.example:8443" → "studio.example:8443".
std::string_view origin_host(std::string_view origin) {
  size_t scheme = origin.find("://");
  return scheme == std::string_view::npos ? origin : origin.substr(scheme + 3);
}

}  // namespace

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "Bearer ";  // case-insensitive (RFC 7235)
  if (!starts_with_nocase(authorization, kScheme)) return std::nullopt;
  return authorization.substr(kScheme.size());
}

std::optional<std::string> basic_password(std::string_view authorization) {
  constexpr std::string_view kScheme = "Basic ";
  // Longer than any token file's line: a credential of this size is no credential of ours.
  constexpr size_t kLongestEncoded = 4096;
  if (!starts_with_nocase(authorization, kScheme)) return std::nullopt;
  std::string_view encoded = trim(authorization.substr(kScheme.size()));
  if (encoded.empty() || encoded.size() % 4 != 0 || encoded.size() > kLongestEncoded) {
    return std::nullopt;
  }
  // '=' pads the end only, at most twice: EVP_DecodeBlock reads it as a zero anywhere.
  size_t pad = encoded.ends_with("==") ? 2 : encoded.ends_with("=") ? 1 : 0;
  if (encoded.find('=') < encoded.size() - pad) return std::nullopt;
  std::vector<unsigned char> decoded(encoded.size() / 4 * 3 + 1);
  int length =
      EVP_DecodeBlock(decoded.data(), reinterpret_cast<const unsigned char*>(encoded.data()),
                      static_cast<int>(encoded.size()));
  if (length < static_cast<int>(pad)) return std::nullopt;
  std::string_view text(reinterpret_cast<const char*>(decoded.data()),
                        static_cast<size_t>(length) - pad);
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return std::string(text.substr(colon + 1));
}

std::optional<std::string> cross_site_refusal(const http::RequestHeader& request, bool basic) {
  if (!changes_state(request.method())) return std::nullopt;
  std::string_view site = header(request, "Sec-Fetch-Site");
  if (equal_nocase(site, "cross-site") || equal_nocase(site, "same-site")) {
    return "a request from another site's page may not change anything here (Sec-Fetch-Site: " +
           std::string(site) + ")";
  }
  std::string_view origin = header(request, "Origin");
  // A proxy in front may rewrite Host and say the browser's in X-Forwarded-Host; a page of another
  // site cannot set that header without a preflight, which this server never grants.
  std::string_view host = header(request, "Host");
  std::string_view forwarded = header(request, "X-Forwarded-Host");
  if (!origin.empty() && !equal_nocase(origin_host(origin), host) &&
      (forwarded.empty() || !equal_nocase(origin_host(origin), forwarded))) {
    return "a request from another origin (" + std::string(origin) +
           ") may not change anything here";
  }
  bool from_browser = basic || !origin.empty() || !site.empty();
  bool sends_body = request.method() == bhttp::verb::post || request.method() == bhttp::verb::put;
  std::string_view type = header(request, "Content-Type");
  if (from_browser && sends_body && !starts_with_nocase(type, "application/json")) {
    return "from a browser, a POST or PUT is application/json";
  }
  return std::nullopt;
}

}  // namespace dormant::server::api
