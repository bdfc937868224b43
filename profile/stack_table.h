// StackTable: how often each call stack was seen, per process name and container.
// Strings are interned, so memory grows with the number of distinct frames and stacks, never with
// the number of samples. Both tables are open-addressing arrays: a lookup is a hash and, usually,
// one cache line.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
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
  std::string_view string(StringId id) const { return strings_[id]; }

  // Adds `count` samples of a stack, frames root first.
  void add(std::string_view container, std::string_view comm,
           std::span<const std::string_view> frames, uint64_t count = 1);
  // The same with interned strings: key = {container, comm, frame...}.
  void add_interned(std::span<const StringId> key, uint64_t count = 1);

  void merge(const StackTable& other);
  void clear();

  uint64_t total_samples() const { return total_; }
  size_t distinct_stacks() const { return stacks_.size(); }
  bool empty() const { return stacks_.empty(); }

  // Every stack once, in no particular order.
  void for_each(const std::function<void(const StackView&)>& visit) const;

 private:
  struct Stack {
    uint64_t hash;
    uint32_t offset;  // into keys_
    uint32_t length;
    uint64_t count;
  };
  static constexpr uint32_t kEmpty = ~0U;

  size_t string_slot(std::string_view text, uint64_t hash) const;
  size_t stack_slot(std::span<const StringId> key, uint64_t hash) const;
  static void grow(std::vector<uint32_t>& slots, const std::function<uint64_t(uint32_t)>& hash_of);

  std::deque<std::string> strings_;  // a deque never moves its elements
  std::vector<uint64_t> string_hashes_;
  std::vector<uint32_t> string_slots_;  // index into strings_, or kEmpty
  std::vector<StringId> keys_;          // every stack's key, back to back
  std::vector<Stack> stacks_;
  std::vector<uint32_t> stack_slots_;  // index into stacks_, or kEmpty
  uint64_t total_ = 0;
};

}  // namespace dormant::profile
