#include "server/http/body_budget.h"

#include <algorithm>

namespace dormant::server::http {
namespace {

constexpr size_t kShares = 16;
constexpr size_t kReserveParts = 4;

// Adds `bytes` to `held` unless that passes `limit`.
bool fits(size_t held, size_t bytes, size_t limit) {
  return bytes <= limit && held <= limit - bytes;
}

void subtract(std::unordered_map<std::string, size_t>& held, const std::string& key, size_t bytes) {
  auto found = held.find(key);
  if (found == held.end()) return;
  found->second -= std::min(found->second, bytes);
  if (found->second == 0) held.erase(found);
}

}  // namespace

BodyBudget::BodyBudget(size_t total_bytes, size_t largest_body_bytes)
    : total_(total_bytes),
      share_(std::min(total_bytes, std::max(total_bytes / kShares, largest_body_bytes))),
      reserve_(std::min(total_bytes / kReserveParts, total_bytes - std::min(total_bytes, share_))) {
}

bool BodyBudget::take(const Claim& claim) {
  std::lock_guard lock(mutex_);
  if (!fits(used_, claim.bytes, total_)) return false;
  if (!claim.reserved && !fits(used_unreserved_, claim.bytes, total_ - reserve_)) return false;
  size_t& address = by_address_[claim.address];
  if (!fits(address, claim.bytes, share_)) {
    if (address == 0) by_address_.erase(claim.address);
    return false;
  }
  // One credential speaks for a whole fleet's heartbeats: only its uploads share a part.
  if (!claim.reserved && !claim.credential.empty()) {
    size_t& credential = by_credential_[claim.credential];
    if (!fits(credential, claim.bytes, share_)) {
      if (credential == 0) by_credential_.erase(claim.credential);
      if (address == 0) by_address_.erase(claim.address);
      return false;
    }
    credential += claim.bytes;
  }
  address += claim.bytes;
  used_ += claim.bytes;
  if (!claim.reserved) used_unreserved_ += claim.bytes;
  return true;
}

void BodyBudget::give_back(const Claim& claim) {
  std::lock_guard lock(mutex_);
  used_ -= std::min(used_, claim.bytes);
  if (!claim.reserved) {
    used_unreserved_ -= std::min(used_unreserved_, claim.bytes);
    if (!claim.credential.empty()) subtract(by_credential_, claim.credential, claim.bytes);
  }
  subtract(by_address_, claim.address, claim.bytes);
}

size_t BodyBudget::in_use() const {
  std::lock_guard lock(mutex_);
  return used_;
}

}  // namespace dormant::server::http
