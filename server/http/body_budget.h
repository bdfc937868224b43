// The request bodies a server receives at once, in bytes, shared so that no one client can take
// them all: an address, and a credential wherever it is presented from, hold a sixteenth of the
// budget at most (one largest body always fits), and a quarter is kept for the messages that keep
// a fleet alive (heartbeats, completions), which uploads cannot take.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dormant::server::http {

class BodyBudget {
 public:
  BodyBudget(size_t total_bytes, size_t largest_body_bytes);

  // What one body holds of the budget until it is given back.
  struct Claim {
    size_t bytes = 0;
    std::string address;
    std::string credential;  // empty: none presented
    bool reserved = false;   // may take the part kept for heartbeats
  };
  // Takes the claim's bytes, or returns false where its address, its credential or (for a body
  // that may not use the reserve) the unreserved part has no room for them.
  bool take(const Claim& claim);
  void give_back(const Claim& claim);

  size_t in_use() const;
  size_t share() const { return share_; }
  size_t reserve() const { return reserve_; }

 private:
  const size_t total_;
  const size_t share_;    // of one address, and of one credential
  const size_t reserve_;  // kept from bodies that are not `reserved`
  mutable std::mutex mutex_;
  size_t used_ = 0;
  size_t used_unreserved_ = 0;
  std::unordered_map<std::string, size_t> by_address_;
  std::unordered_map<std::string, size_t> by_credential_;
};

}  // namespace dormant::server::http
