#include "profile/stack_table.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "profile/fast_hash.h"

namespace dormant::profile {
namespace {

constexpr size_t kInitialSlots = 1 << 8;  // small: there may be a table per process
constexpr size_t kMinArenaBlock = 4 << 10;
constexpr size_t kMaxArenaBlock = 256 << 10;

uint64_t key_hash(std::span<const StringId> key) { return fast_hash(key.data(), key.size_bytes()); }

// Doubles an open-addressing table, putting each used slot back where `hash_of` says.
template <typename Slot, typename HashOf>
void double_slots(std::vector<Slot>& slots, HashOf hash_of) {
  std::vector<Slot> old = std::move(slots);
  slots.assign(old.size() * 2, Slot());
  size_t mask = slots.size() - 1;
  for (const Slot& entry : old) {
    if (!entry.used()) continue;
    size_t slot = hash_of(entry) & mask;
    while (slots[slot].used()) slot = (slot + 1) & mask;
    slots[slot] = entry;
  }
}

}  // namespace

StackTable::StackTable() : string_slots_(kInitialSlots), stack_slots_(kInitialSlots) {}

StackTable::StackTable(const StackTable& other) : StackTable() { merge(other); }

StackTable& StackTable::operator=(const StackTable& other) {
  if (this != &other) {
    clear();
    merge(other);
  }
  return *this;
}

// The slot holding `text`, or the empty one where it would go.
size_t StackTable::string_slot(std::string_view text) const {
  size_t mask = string_slots_.size() - 1;
  for (size_t slot = fast_hash(text) & mask;; slot = (slot + 1) & mask) {
    const StringSlot& candidate = string_slots_[slot];
    if (candidate.id == kEmpty) return slot;
    if (candidate.size == text.size() && same_bytes(candidate.data, text.data(), text.size())) {
      return slot;
    }
  }
}

StringId StackTable::intern(std::string_view text) {
  size_t slot = string_slot(text);
  return string_slots_[slot].used() ? string_slots_[slot].id : add_string(text, slot);
}

std::optional<StringId> StackTable::find_string(std::string_view text) const {
  const StringSlot& slot = string_slots_[string_slot(text)];
  return slot.used() ? std::optional<StringId>(slot.id) : std::nullopt;
}

StringId StackTable::add_string(std::string_view text, size_t slot) {
  auto id = static_cast<StringId>(strings_.size());
  std::string_view stored = store(text);
  strings_.push_back(stored);
  string_slots_[slot] = {stored.data(), static_cast<uint32_t>(stored.size()), id};
  if (strings_.size() * 2 > string_slots_.size()) {
    double_slots(string_slots_, [](const StringSlot& entry) { return fast_hash(entry.text()); });
  }
  return id;
}

// Blocks grow with the table: a small table stays small, a large one allocates rarely.
std::string_view StackTable::store(std::string_view text) {
  if (text.empty()) return "";
  if (arena_.empty() || arena_.back().size - arena_.back().used < text.size()) {
    size_t size =
        arena_.empty() ? kMinArenaBlock : std::min(arena_.back().size * 2, kMaxArenaBlock);
    size = std::max(size, text.size());
    arena_.push_back({std::make_unique_for_overwrite<char[]>(size), size, 0});
    arena_bytes_ += size;
  }
  ArenaBlock& block = arena_.back();
  char* copy = block.bytes.get() + block.used;
  std::memcpy(copy, text.data(), text.size());
  block.used += text.size();
  return {copy, text.size()};
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

bool StackTable::add_within(std::string_view container, std::string_view comm,
                            std::span<const std::string_view> frames, uint64_t count,
                            size_t max_stacks, size_t max_bytes) {
  if (stacks_.size() < max_stacks && bytes() < max_bytes) {
    add(container, comm, frames, count);
    return true;
  }
  std::vector<StringId> key;
  key.reserve(frames.size() + 2);
  auto known = [&](std::string_view text) {
    auto id = find_string(text);
    if (id) key.push_back(*id);
    return id.has_value();
  };
  if (!known(container) || !known(comm) || !std::all_of(frames.begin(), frames.end(), known)) {
    return false;
  }
  if (stack_slots_[stack_slot(key, key_hash(key))].index == kEmpty) return false;
  add_interned(key, count);
  return true;
}

size_t StackTable::stack_slot(std::span<const StringId> key, uint64_t hash) const {
  size_t mask = stack_slots_.size() - 1;
  for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    const StackSlot& candidate = stack_slots_[slot];
    if (candidate.index == kEmpty) return slot;
    const Stack& stack = stacks_[candidate.index];
    if (stack.hash == hash && stack.length == key.size() &&
        std::memcmp(keys_.data() + candidate.key_offset, key.data(), key.size_bytes()) == 0) {
      return slot;
    }
  }
}

void StackTable::add_interned(std::span<const StringId> key, uint64_t count) {
  if (count == 0) return;
  total_ += count;
  uint64_t hash = key_hash(key);
  size_t slot = stack_slot(key, hash);
  if (stack_slots_[slot].index != kEmpty) {
    stacks_[stack_slots_[slot].index].count += count;
    return;
  }
  auto offset = static_cast<uint32_t>(keys_.size());
  stack_slots_[slot] = {static_cast<uint32_t>(stacks_.size()), offset};
  stacks_.push_back({hash, offset, static_cast<uint32_t>(key.size()), count});
  keys_.insert(keys_.end(), key.begin(), key.end());
  if (stacks_.size() * 2 > stack_slots_.size()) {
    double_slots(stack_slots_,
                 [this](const StackSlot& entry) { return stacks_[entry.index].hash; });
  }
}

void StackTable::merge(const StackTable& other, std::optional<std::string_view> container) {
  std::vector<StringId> translated(other.strings_.size());
  for (size_t id = 0; id < other.strings_.size(); ++id) translated[id] = intern(other.strings_[id]);
  std::optional<StringId> container_id;
  if (container) container_id = intern(*container);
  std::vector<StringId> key;
  for (const Stack& stack : other.stacks_) {
    key.clear();
    for (uint32_t i = 0; i < stack.length; ++i)
      key.push_back(translated[other.keys_[stack.offset + i]]);
    if (container_id) key[0] = *container_id;
    add_interned(key, stack.count);
  }
}

size_t StackTable::bytes() const {
  return arena_bytes_ + strings_.capacity() * sizeof(std::string_view) +
         string_slots_.capacity() * sizeof(StringSlot) + keys_.capacity() * sizeof(StringId) +
         stacks_.capacity() * sizeof(Stack) + stack_slots_.capacity() * sizeof(StackSlot);
}

std::vector<std::string> StackTable::containers() const {
  std::set<std::string_view> names;
  for (const Stack& stack : stacks_) {
    std::string_view name = string(keys_[stack.offset]);
    if (!name.empty()) names.insert(name);
  }
  return {names.begin(), names.end()};
}

void StackTable::clear() { *this = StackTable(); }

void StackTable::for_each(const std::function<void(const StackView&)>& visit) const {
  for (const Stack& stack : stacks_) {
    std::span<const StringId> key(keys_.data() + stack.offset, stack.length);
    visit(StackView{string(key[0]), string(key[1]), key.subspan(2), stack.count});
  }
}

}  // namespace dormant::profile
