// The sampler's maps of runtime processes (python_processes, hotspot_processes): a walk per
// process image, under {pid, generation}; a newer image of a pid takes the older one's place.
#pragma once

#include <cstdint>
#include <optional>

#include <bpf/bpf.h>
#include <sys/types.h>

#include "bpf/unwind.h"

namespace dormant::profilers::ebpf {

inline void remove_process_walk(int map_fd, pid_t pid, uint32_t generation) {
  dormant_unwind_process_key key{static_cast<uint32_t>(pid), generation};
  (void)bpf_map_delete_elem(map_fd, &key);
}

// Puts `walk` under image {pid, generation}, then removes the pid's image `replaced`, if any.
// False, with nothing changed, when the map has no room.
template <typename Walk>
bool put_process_walk(int map_fd, pid_t pid, uint32_t generation, const Walk& walk,
                      std::optional<uint32_t> replaced) {
  dormant_unwind_process_key key{static_cast<uint32_t>(pid), generation};
  if (bpf_map_update_elem(map_fd, &key, &walk, BPF_ANY) != 0) return false;
  if (replaced) remove_process_walk(map_fd, pid, *replaced);
  return true;
}

}  // namespace dormant::profilers::ebpf
