#include "server/api/svg_cache.h"

namespace dormant::server::api {

std::shared_ptr<const CachedSvg> SvgCache::find(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto found = by_key_.find(key);
  if (found == by_key_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, found->second);
  return found->second->second;
}

void SvgCache::put(const std::string& key, std::shared_ptr<const CachedSvg> svg) {
  if (key.size() + svg->svg.size() > max_bytes_) return;
  std::lock_guard lock(mutex_);
  if (auto found = by_key_.find(key); found != by_key_.end()) {
    bytes_ -= size_of(*found->second);
    entries_.erase(found->second);
    by_key_.erase(found);
  }
  entries_.emplace_front(key, std::move(svg));
  by_key_[key] = entries_.begin();
  bytes_ += size_of(entries_.front());
  while (bytes_ > max_bytes_) {
    bytes_ -= size_of(entries_.back());
    by_key_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

size_t SvgCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace dormant::server::api
