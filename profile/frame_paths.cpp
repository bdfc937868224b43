#include "profile/frame_paths.h"

#include "profile/fast_hash.h"

namespace dormant::profile {

uint64_t child_path(uint64_t parent, std::string_view name, bool is_process) {
  uint64_t name_hash = fast_hash(name) ^ (is_process ? 0x5bd1e995ULL : 0);
  return fast_hash_detail::fold_multiply(parent ^ 0x2545f4914f6cdd1dULL, name_hash ^ kRootPath);
}

PathCounts::PathCounts(const StackTable& table) {
  table.for_each([&](const StackView& stack) {
    total_ += stack.count;
    uint64_t path = kRootPath;
    auto visit = [&](std::string_view name, bool is_process) {
      path = child_path(path, name, is_process);
      counts_[path] += stack.count;
    };
    if (!stack.container.empty()) visit(stack.container, true);
    visit(stack.comm, true);
    for (StringId id : stack.frame_ids) visit(table.string(id), false);
  });
}

uint64_t PathCounts::at(uint64_t path) const {
  if (path == kRootPath) return total_;
  auto found = counts_.find(path);
  return found == counts_.end() ? 0 : found->second;
}

}  // namespace dormant::profile
