// The stack texts this store wrote lately, by service, with the newest day each was written for,
// so that an upload writes only the texts the database does not hold for its day yet. Learned
// only after a commit; forgets everything once it holds `max_entries`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/storage/rollup_records.h"

namespace dormant::server::storage {

class KnownStackTexts {
 public:
  explicit KnownStackTexts(size_t max_entries = size_t{1} << 20) : max_entries_(max_entries) {}

  // The texts of `texts` not known to be held for `day_ms` or a later day.
  std::vector<std::pair<StackId, std::string>> unknown(
      std::string_view service, int64_t day_ms,
      std::span<const std::pair<StackId, std::string>> texts) const;
  void learn(std::string_view service, int64_t day_ms,
             std::span<const std::pair<StackId, std::string>> texts);

 private:
  const size_t max_entries_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unordered_map<StackId, int64_t>> days_;
  size_t entries_ = 0;
};

}  // namespace dormant::server::storage
