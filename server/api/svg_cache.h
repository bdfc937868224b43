// The flamegraphs of stored profiles as drawn, kept for the next request: by profile and render
// options, the least recently used dropped first past a size in bytes. A stored profile never
// changes and its id is never reused, so an entry never goes stale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace dormant::server::api {

struct CachedSvg {
  std::string svg;
  // Where the nonce of its <style> and of its <script> start: each response gets its own.
  size_t style_nonce = 0;
  size_t script_nonce = 0;
  uint64_t idle_samples = 0;  // left out, for the response's header
};

class SvgCache {
 public:
  explicit SvgCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  std::shared_ptr<const CachedSvg> find(const std::string& key);
  // Nothing larger than the whole cache is kept.
  void put(const std::string& key, std::shared_ptr<const CachedSvg> svg);
  size_t bytes() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CachedSvg>>;
  static size_t size_of(const Entry& entry) {
    return entry.first.size() + entry.second->svg.size();
  }

  const size_t max_bytes_;
  mutable std::mutex mutex_;
  size_t bytes_ = 0;
  std::list<Entry> entries_;  // the most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
};

}  // namespace dormant::server::api
