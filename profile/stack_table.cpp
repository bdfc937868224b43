#include "profile/stack_table.h"

#include <cstring>

#include "profile/fast_hash.h"

namespace dormant::profile {
namespace {

constexpr size_t kInitialSlots = 1 << 10;

uint64_t key_hash(std::span<const StringId> key) { return fast_hash(key.data(), key.size_bytes()); }

}  // namespace

StackTable::StackTable()
    : string_slots_(kInitialSlots, kEmpty), stack_slots_(kInitialSlots, kEmpty) {}

StackTable::StackTable(const StackTable& other) : StackTable() { merge(other); }

StackTable& StackTable::operator=(const StackTable& other) {
  if (this != &other) {
    clear();
    merge(other);
  }
  return *this;
}

void StackTable::grow(std::vector<uint32_t>& slots,
                      const std::function<uint64_t(uint32_t)>& hash_of) {
  std::vector<uint32_t> old = std::move(slots);
  slots.assign(old.size() * 2, kEmpty);
  size_t mask = slots.size() - 1;
  for (uint32_t index : old) {
    if (index == kEmpty) continue;
    size_t slot = hash_of(index) & mask;
    while (slots[slot] != kEmpty) slot = (slot + 1) & mask;
    slots[slot] = index;
  }
}

size_t StackTable::string_slot(std::string_view text, uint64_t hash) const {
  size_t mask = string_slots_.size() - 1;
  for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    uint32_t index = string_slots_[slot];
    if (index == kEmpty || (string_hashes_[index] == hash && strings_[index] == text)) return slot;
  }
}

StringId StackTable::intern(std::string_view text) {
  uint64_t hash = fast_hash(text);
  size_t slot = string_slot(text, hash);
  if (string_slots_[slot] != kEmpty) return string_slots_[slot];
  auto id = static_cast<StringId>(strings_.size());
  strings_.emplace_back(text);
  string_hashes_.push_back(hash);
  string_slots_[slot] = id;
  if (strings_.size() * 2 > string_slots_.size()) {
    grow(string_slots_, [this](uint32_t index) { return string_hashes_[index]; });
  }
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

size_t StackTable::stack_slot(std::span<const StringId> key, uint64_t hash) const {
  size_t mask = stack_slots_.size() - 1;
  for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    uint32_t index = stack_slots_[slot];
    if (index == kEmpty) return slot;
    const Stack& stack = stacks_[index];
    if (stack.hash == hash && stack.length == key.size() &&
        std::memcmp(keys_.data() + stack.offset, key.data(), key.size_bytes()) == 0) {
      return slot;
    }
  }
}

void StackTable::add_interned(std::span<const StringId> key, uint64_t count) {
  if (count == 0) return;
  total_ += count;
  uint64_t hash = key_hash(key);
  size_t slot = stack_slot(key, hash);
  if (stack_slots_[slot] != kEmpty) {
    stacks_[stack_slots_[slot]].count += count;
    return;
  }
  stack_slots_[slot] = static_cast<uint32_t>(stacks_.size());
  stacks_.push_back(
      {hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(key.size()), count});
  keys_.insert(keys_.end(), key.begin(), key.end());
  if (stacks_.size() * 2 > stack_slots_.size()) {
    grow(stack_slots_, [this](uint32_t index) { return stacks_[index].hash; });
  }
}

void StackTable::merge(const StackTable& other) {
  std::vector<StringId> translated(other.strings_.size());
  for (size_t id = 0; id < other.strings_.size(); ++id) translated[id] = intern(other.strings_[id]);
  std::vector<StringId> key;
  for (const Stack& stack : other.stacks_) {
    key.clear();
    for (uint32_t i = 0; i < stack.length; ++i)
      key.push_back(translated[other.keys_[stack.offset + i]]);
    add_interned(key, stack.count);
  }
}

void StackTable::clear() { *this = StackTable(); }

void StackTable::for_each(const std::function<void(const StackView&)>& visit) const {
  for (const Stack& stack : stacks_) {
    std::span<const StringId> key(keys_.data() + stack.offset, stack.length);
    visit(StackView{string(key[0]), string(key[1]), key.subspan(2), stack.count});
  }
}

}  // namespace dormant::profile
