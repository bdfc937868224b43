// How many merged flamegraphs may be made at once. A merge holds a server thread for as long as
// it reads profiles (seconds for a thousand), so a few of them at once must not take every
// thread from the heartbeats; a merge beyond the slots is refused at once (503) instead of queued.
#pragma once

#include <atomic>
#include <optional>
#include <string_view>
#include <utility>

namespace dormant::server::api {

// Why a merge is refused (503), whether no slot or no merge thread was free.
inline constexpr std::string_view kMergesBusy =
    "as many merged flamegraphs as the server makes at once are being made";

class MergeSlots {
 public:
  explicit MergeSlots(int slots) : free_(slots) {}

  // Held while a merge runs; the slot is free again when it goes.
  class Slot {
   public:
    explicit Slot(std::atomic<int>& free) : free_(&free) {}
    Slot(Slot&& other) noexcept : free_(std::exchange(other.free_, nullptr)) {}
    Slot& operator=(Slot&&) = delete;
    ~Slot() {
      if (free_ != nullptr) free_->fetch_add(1);
    }

   private:
    std::atomic<int>* free_;
  };

  std::optional<Slot> try_take() {
    int free = free_.load();
    while (free > 0) {
      if (free_.compare_exchange_weak(free, free - 1)) return Slot(free_);
    }
    return std::nullopt;
  }

 private:
  std::atomic<int> free_;
};

}  // namespace dormant::server::api
