#include "agent/journal_salvage.h"

#include <deque>
#include <fstream>
#include <string_view>
#include <unordered_set>

#include "wire/ids.h"

namespace dormant::agent {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr size_t kQuotedUuidBytes = 38;  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"

// Keeps the last `keep` distinct ids seen, oldest first.
class LastIds {
 public:
  explicit LastIds(size_t keep) : keep_(keep) {}

  void add(std::string_view id) {
    std::string text(id);
    if (seen_.contains(text)) {
      // Seen again later: it moves to the newest end.
      std::erase(order_, text);
    } else {
      seen_.insert(text);
    }
    order_.push_back(std::move(text));
    if (order_.size() > keep_) {
      seen_.erase(order_.front());
      order_.pop_front();
    }
  }

  std::vector<std::string> take() { return {order_.begin(), order_.end()}; }

 private:
  size_t keep_;
  std::deque<std::string> order_;
  std::unordered_set<std::string> seen_;
};

}  // namespace

std::vector<std::string> salvage_command_ids(const std::filesystem::path& path, size_t keep) {
  LastIds found(keep);
  std::ifstream file(path, std::ios::binary);
  std::string window;  // the unscanned tail of the previous chunk, then this chunk
  std::string chunk(kChunkBytes, '\0');
  while (file) {
    file.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    window.append(chunk.data(), static_cast<size_t>(file.gcount()));
    size_t at = 0;
    while (at + kQuotedUuidBytes <= window.size()) {
      if (window[at] == '"' && window[at + kQuotedUuidBytes - 1] == '"' &&
          wire::is_uuid(std::string_view(window).substr(at + 1, kQuotedUuidBytes - 2))) {
        found.add(std::string_view(window).substr(at + 1, kQuotedUuidBytes - 2));
        at += kQuotedUuidBytes;
      } else {
        ++at;
      }
    }
    window.erase(0, at);  // fewer than kQuotedUuidBytes bytes stay for the next chunk
  }
  return found.take();
}

}  // namespace dormant::agent
