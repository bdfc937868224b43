#include "agent/command_id_ring.h"

#include <algorithm>

namespace dormant::agent {

CommandIdRing::CommandIdRing(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  slots_.reserve(capacity_);
}

void CommandIdRing::push(std::string_view id) {
  if (id.size() != kIdLength || contains(id)) return;
  Slot slot;
  std::copy(id.begin(), id.end(), slot.begin());
  if (slots_.size() < capacity_) {
    slots_.push_back(slot);
    return;
  }
  slots_[oldest_] = slot;
  oldest_ = (oldest_ + 1) % capacity_;
}

bool CommandIdRing::contains(std::string_view id) const {
  return std::any_of(slots_.begin(), slots_.end(), [&](const Slot& slot) {
    return std::string_view(slot.data(), slot.size()) == id;
  });
}

std::string_view CommandIdRing::at(size_t age) const {
  const Slot& slot = slots_[(oldest_ + age) % slots_.size()];
  return {slot.data(), slot.size()};
}

std::vector<std::string> CommandIdRing::ids() const {
  std::vector<std::string> ids;
  ids.reserve(slots_.size());
  for (size_t age = 0; age < slots_.size(); ++age) ids.emplace_back(at(age));
  return ids;
}

}  // namespace dormant::agent
