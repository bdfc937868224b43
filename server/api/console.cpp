#include "server/api/console.h"

#include <string>
#include <string_view>

#include "server/api/api_requests.h"
#include "server/api/console_assets.h"
#include "server/api/content_policy.h"

namespace dormant::server::api {
namespace {

// index.html with its placeholders filled: "{{nonce}}", "{{console.css}}", "{{console.js}}".
std::string console_page_text(const std::string& nonce) {
  const ConsoleAssets& assets = console_assets();
  std::string page;
  page.reserve(assets.page.size() + assets.script.size() + assets.style.size() + 128);
  std::string_view rest = assets.page;
  for (size_t open = rest.find("{{"); open != std::string_view::npos; open = rest.find("{{")) {
    size_t close = rest.find("}}", open);
    if (close == std::string_view::npos) break;
    std::string_view name = rest.substr(open + 2, close - open - 2);
    page += rest.substr(0, open);
    if (name == "nonce") {
      page += nonce;
    } else if (name == "console.css") {
      page += assets.style;
    } else if (name == "console.js") {
      page += assets.script;
    } else {
      page += rest.substr(open, close + 2 - open);
    }
    rest.remove_prefix(close + 2);
  }
  page += rest;
  return page;
}

}  // namespace

http::Response console_page(const Call&) {
  const std::string nonce = new_nonce();
  http::Response response = text_response("text/html; charset=utf-8", console_page_text(nonce));
  restrict_document(response, nonce);
  // A nonce is good for one response: a cached page would reuse it.
  response.set(boost::beast::http::field::cache_control, "no-store");
  response.set("Referrer-Policy", "no-referrer");
  return response;
}

}  // namespace dormant::server::api
