// The last N command ids (UUIDs), oldest first, each once, in storage taken once: the journal
// keeps a thousand of them for the life of the process, and ids allocated one by one between a
// session's short-lived allocations would pin heap pages that malloc_trim could not give back.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dormant::agent {

class CommandIdRing {
 public:
  static constexpr size_t kIdLength = 36;  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"

  explicit CommandIdRing(size_t capacity);

  // Adds `id` (kIdLength characters, else ignored) unless present; past the capacity the oldest
  // goes.
  void push(std::string_view id);
  bool contains(std::string_view id) const;
  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  std::string_view front() const { return at(0); }
  std::string_view back() const { return at(size() - 1); }
  // Oldest first.
  std::vector<std::string> ids() const;

 private:
  using Slot = std::array<char, kIdLength>;
  std::string_view at(size_t age) const;  // 0: the oldest

  size_t capacity_;
  std::vector<Slot> slots_;
  size_t oldest_ = 0;  // once full, the slot the next id replaces
};

}  // namespace dormant::agent
