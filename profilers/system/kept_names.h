// The names of a runtime's frames (Java's, JavaScript's), kept per process: a frame is read when
// the sampler first meets it and again at its first use in each snapshot, and a reading that gets
// less than the one kept (its process exited, its code or object gone or moved) keeps the older.
// At most `max` frames are kept; past it a frame is read at each use. Keys start with the pid.
// Not thread-safe: its owner holds the lock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace dormant::profilers::system {

template <typename Key, typename Names>
class KeptNames {
 public:
  // What a reading got: its names, and whether every one of them was read.
  struct Reading {
    Names names;
    bool whole = false;
  };

  explicit KeptNames(size_t max) : max_(max) {}

  // The frame's names, read by `read()` (a Reading) unless this snapshot read them already.
  template <typename Read>
  const Names& get(const Key& key, Read&& read) {
    auto kept = kept_.find(key);
    if (kept != kept_.end() && kept->second.read_in == snapshot_) return kept->second.names;
    Reading fresh = read();
    if (kept == kept_.end()) {
      if (kept_.size() >= max_) {
        unkept_ = std::move(fresh.names);
        return unkept_;
      }
      kept = kept_.emplace(key, Kept{std::move(fresh.names), fresh.whole, snapshot_}).first;
    } else if (fresh.whole || !kept->second.whole) {
      kept->second = Kept{std::move(fresh.names), fresh.whole, snapshot_};
    } else {
      kept->second.read_in = snapshot_;  // gone since: what was read while it lived stays
    }
    return kept->second.names;
  }

  // Ends a snapshot: the names of `exited` processes are forgotten, the others are read again at
  // their next use.
  void end_snapshot(const std::vector<pid_t>& exited) {
    ++snapshot_;
    std::erase_if(kept_, [&](const auto& entry) {
      return std::find(exited.begin(), exited.end(), std::get<0>(entry.first)) != exited.end();
    });
  }
  size_t size() const { return kept_.size(); }

 private:
  struct Kept {
    Names names;
    bool whole = false;
    uint64_t read_in = 0;  // the snapshot that read it last
  };

  const size_t max_;
  std::map<Key, Kept> kept_;
  Names unkept_;  // a frame read while the map is full
  uint64_t snapshot_ = 1;
};

}  // namespace dormant::profilers::system
