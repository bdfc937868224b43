// StackTable: how often each call stack was seen, per process name and container.
// Strings are interned, so memory grows with the number of distinct frames and stacks, never with
// the number of samples.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
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
  StackTable() = default;
  StackTable(StackTable&&) = default;
  StackTable& operator=(StackTable&&) = default;
  StackTable(const StackTable& other) { merge(other); }
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
  size_t distinct_stacks() const { return counts_.size(); }
  bool empty() const { return counts_.empty(); }

  // Every stack once, in no particular order.
  void for_each(const std::function<void(const StackView&)>& visit) const;

 private:
  struct KeyHash {
    size_t operator()(const std::vector<StringId>& key) const noexcept;
  };

  std::deque<std::string> strings_;  // a deque never moves its elements: the views below stay valid
  std::unordered_map<std::string_view, StringId> ids_;
  std::unordered_map<std::vector<StringId>, uint64_t, KeyHash> counts_;
  uint64_t total_ = 0;
  std::vector<StringId> scratch_;
};

}  // namespace dormant::profile
