// The web console's files (server/console/), built into the server by
// server/console/embed_assets.cmake: the page is served from memory, there is nothing to install.
#pragma once

#include <string_view>

namespace dormant::server::api {

struct ConsoleAssets {
  // index.html: "{{nonce}}", "{{console.css}}" and "{{console.js}}" are filled in per response.
  std::string_view page;
  std::string_view script;  // console.js, without "</script"
  std::string_view style;   // console.css, without "</style"
};

const ConsoleAssets& console_assets();

}  // namespace dormant::server::api
