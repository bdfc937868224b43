#include "profile/stack_table.h"

namespace dormant::profile {

StackTable& StackTable::operator=(const StackTable& other) {
  if (this != &other) {
    clear();
    merge(other);
  }
  return *this;
}

size_t StackTable::KeyHash::operator()(const std::vector<StringId>& key) const noexcept {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a over the ids
  for (StringId id : key) {
    hash ^= id;
    hash *= 0x100000001b3ULL;
  }
  return static_cast<size_t>(hash ^ (hash >> 29));
}

StringId StackTable::intern(std::string_view text) {
  auto found = ids_.find(text);
  if (found != ids_.end()) return found->second;
  auto id = static_cast<StringId>(strings_.size());
  const std::string& stored = strings_.emplace_back(text);
  ids_.emplace(std::string_view(stored), id);
  return id;
}

void StackTable::add(std::string_view container, std::string_view comm,
                     std::span<const std::string_view> frames, uint64_t count) {
  std::vector<StringId> key;
  key.reserve(frames.size() + 2);
  key.push_back(intern(container));
  key.push_back(intern(comm));
  for (std::string_view frame : frames) key.push_back(intern(frame));
  add_interned(key, count);
}

void StackTable::add_interned(std::span<const StringId> key, uint64_t count) {
  if (count == 0) return;
  scratch_.assign(key.begin(), key.end());
  auto found = counts_.find(scratch_);
  if (found != counts_.end()) {
    found->second += count;
  } else {
    counts_.emplace(scratch_, count);
  }
  total_ += count;
}

void StackTable::merge(const StackTable& other) {
  std::vector<StringId> key;
  for (const auto& [other_key, count] : other.counts_) {
    key.clear();
    for (StringId id : other_key) key.push_back(intern(other.string(id)));
    add_interned(key, count);
  }
}

void StackTable::clear() {
  counts_.clear();
  ids_.clear();
  strings_.clear();
  total_ = 0;
}

void StackTable::for_each(const std::function<void(const StackView&)>& visit) const {
  for (const auto& [key, count] : counts_) {
    visit(StackView{string(key[0]), string(key[1]), std::span<const StringId>(key).subspan(2),
                    count});
  }
}

}  // namespace dormant::profile
