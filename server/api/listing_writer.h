// A listing's JSON written as its rows are read, within a bound of bytes: {"<field>":[...],
// "next":<cursor or null>}. Past the bound the listing ends, and `next` says where the following
// page starts (the caller's cursor, which a client sends back as a parameter). At least one item
// goes into each page, whatever its size, so that a listing always moves on. Values that many
// items refer to are written once a page, in an object of their own by key:
// {"<field>":[...],"<shared field>":{"<key>":...},"next":...}.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace dormant::server::api {

// 16 MiB: a page a browser or a script reads at once, and what a listing costs the server.
inline constexpr size_t kMaxListingBytes = 16 << 20;

class ListingWriter {
 public:
  explicit ListingWriter(std::string_view field, size_t max_bytes = kMaxListingBytes,
                         std::string_view shared_field = {});

  // Adds the item, or returns false when the page has no room for it (it starts the next page).
  bool add(const nlohmann::json& item);
  // Adds the item and `value` under `key` in the shared field, unless the page holds that key
  // already; false when the page has no room for both.
  bool add(const nlohmann::json& item, const std::string& key, const nlohmann::json& value);
  bool holds(const std::string& key) const { return shared_keys_.contains(key); }
  size_t items() const { return items_; }
  // The page's text; `next`: the cursor of the first item left out, nullopt when none was.
  std::string finish(const std::optional<std::string>& next);

 private:
  // Adds an item's text, and a member of the shared object unless it is empty.
  bool append(const std::string& item, const std::string& member);

  std::string text_;
  const size_t max_bytes_;
  size_t items_ = 0;
  const std::string shared_field_;
  std::string shared_text_;  // the shared object's members
  std::set<std::string, std::less<>> shared_keys_;
};

// Fills a page a batch of rows at a time: `read(n)` gives the next n rows at most (after the last
// one added), `add(row)` adds one, or returns false when the page has no room for it. Ends when
// `limit` rows are read or none are left; returns whether the listing goes on past the page.
template <typename Read, typename Add>
Result<bool> fill_page(int64_t limit, int64_t batch, Read read, Add add) {
  for (int64_t left = limit; left > 0;) {
    int64_t asked = std::min(left, batch);
    auto rows = read(asked);
    if (!rows) return std::move(rows).take_error();
    for (auto& row : *rows) {
      if (!add(row)) return true;
    }
    if (static_cast<int64_t>(rows->size()) < asked) return false;
    left -= asked;
  }
  return true;  // as many as asked for: the next page starts after the last
}

// A cursor as a query parameter: the key of a row in hex, opaque to clients.
std::string encode_cursor(std::string_view key);
std::optional<std::string> decode_cursor(std::string_view cursor);

}  // namespace dormant::server::api
