#include "server/storage/known_stack_texts.h"

namespace dormant::server::storage {

std::vector<std::pair<StackId, std::string>> KnownStackTexts::unknown(
    std::string_view service, int64_t day_ms,
    std::span<const std::pair<StackId, std::string>> texts) const {
  std::lock_guard lock(mutex_);
  auto known = days_.find(std::string(service));
  if (known == days_.end()) return {texts.begin(), texts.end()};
  std::vector<std::pair<StackId, std::string>> out;
  for (const auto& text : texts) {
    auto day = known->second.find(text.first);
    if (day == known->second.end() || day->second < day_ms) out.push_back(text);
  }
  return out;
}

void KnownStackTexts::learn(std::string_view service, int64_t day_ms,
                            std::span<const std::pair<StackId, std::string>> texts) {
  std::lock_guard lock(mutex_);
  if (entries_ + texts.size() > max_entries_) {
    days_.clear();
    entries_ = 0;
  }
  auto& days = days_[std::string(service)];
  for (const auto& text : texts) {
    auto [day, added] = days.try_emplace(text.first, day_ms);
    if (added) {
      ++entries_;
    } else if (day->second < day_ms) {
      day->second = day_ms;
    }
  }
}

}  // namespace dormant::server::storage
