// StackTable: how often each call stack was seen, per process name and container.
// Strings are interned, so memory grows with the number of distinct frames and stacks, never with
// the number of samples. Both tables are open-addressing arrays: a lookup is a hash, usually one
// slot, and the bytes that slot points at.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dormant::profile {

using StringId = uint32_t;

// One stack as the visitor sees it: frames from the root (outermost caller) to the leaf.
struct StackView {
  std::string_view container;  // "" when the process is not in a container
  std::string_view comm;       // the process name
  std::span<const StringId> frame_ids;
  uint64_t count;
};

class StackTable {
 public:
  StackTable();
  StackTable(StackTable&&) noexcept = default;
  StackTable& operator=(StackTable&&) noexcept = default;
  StackTable(const StackTable& other);
  StackTable& operator=(const StackTable& other);

  // The id of `text`, interning it on first sight.
  StringId intern(std::string_view text);
  // Valid as long as the table: interning more strings never moves the ones already there.
  std::string_view string(StringId id) const { return strings_[id]; }

  // Adds `count` samples of a stack, frames root first.
  void add(std::string_view container, std::string_view comm,
           std::span<const std::string_view> frames, uint64_t count = 1);
  // The same with interned strings: key = {container, comm, frame...}.
  void add_interned(std::span<const StringId> key, uint64_t count = 1);

  // Adds a stack as add() does while the table holds fewer than `max_stacks` distinct stacks in
  // fewer than `max_bytes` (bytes()); past either, adds only to the stacks it already holds and
  // interns nothing new. False for a stack it had no room for.
  bool add_within(std::string_view container, std::string_view comm,
                  std::span<const std::string_view> frames, uint64_t count, size_t max_stacks,
                  size_t max_bytes = SIZE_MAX);

  // Adds every stack of `other`; with `container`, counted under that container name instead of
  // the one `other` gave them.
  void merge(const StackTable& other, std::optional<std::string_view> container = std::nullopt);
  void clear();

  uint64_t total_samples() const { return total_; }
  size_t distinct_stacks() const { return stacks_.size(); }
  // The memory the table holds, about: its strings, stacks and both indexes.
  size_t bytes() const;
  bool empty() const { return stacks_.empty(); }

  // The distinct non-empty container names of the stacks, sorted.
  std::vector<std::string> containers() const;

  // Every stack once, in no particular order.
  void for_each(const std::function<void(const StackView&)>& visit) const;

 private:
  static constexpr uint32_t kEmpty = ~0U;

  struct Stack {
    uint64_t hash;
    uint32_t offset;  // into keys_
    uint32_t length;
    uint64_t count;
  };
  // Points at the string's bytes, so that a lookup reads the slot and then the bytes.
  struct StringSlot {
    const char* data = nullptr;
    uint32_t size = 0;
    StringId id = kEmpty;
    std::string_view text() const { return {data, size}; }
    bool used() const { return id != kEmpty; }
  };
  // With the key's place in the slot, a lookup reads the Stack and its key at once, not one
  // after the other.
  struct StackSlot {
    uint32_t index = kEmpty;  // into stacks_
    uint32_t key_offset = 0;  // into keys_
    bool used() const { return index != kEmpty; }
  };
  struct ArenaBlock {
    std::unique_ptr<char[]> bytes;
    size_t size;
    size_t used;
  };

  StringId add_string(std::string_view text, size_t slot);
  size_t string_slot(std::string_view text) const;
  std::optional<StringId> find_string(std::string_view text) const;
  std::string_view store(std::string_view text);  // a copy in arena_, which never moves
  size_t stack_slot(std::span<const StringId> key, uint64_t hash) const;

  std::vector<ArenaBlock> arena_;          // the strings' bytes, back to back
  std::vector<std::string_view> strings_;  // into arena_
  std::vector<StringSlot> string_slots_;
  std::vector<StringId> keys_;  // every stack's key, back to back
  std::vector<Stack> stacks_;
  std::vector<StackSlot> stack_slots_;
  size_t arena_bytes_ = 0;
  uint64_t total_ = 0;
};

}  // namespace dormant::profile
