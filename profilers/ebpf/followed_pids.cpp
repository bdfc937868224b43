#include "profilers/ebpf/followed_pids.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include <bpf/bpf.h>

#include "bpf/followed_pids.h"

namespace dormant::profilers::ebpf {

void size_pid_filter(const PidFilter& filter, size_t named, bool follow) {
  bpf_map__set_max_entries(
      filter.target_pids,
      static_cast<uint32_t>(std::max<size_t>(named + (follow ? DORMANT_MAX_FOLLOWED_PIDS : 0), 1)));
  bpf_program__set_autoload(filter.follow_child, follow);
  bpf_program__set_autoload(filter.forget_child, follow);
}

Result<std::vector<::bpf_link*>> fill_pid_filter(const PidFilter& filter,
                                                 const std::vector<int>& pids, bool follow,
                                                 std::string_view whose) {
  uint8_t named = DORMANT_NAMED_PID;
  for (int pid : pids) {
    auto key = static_cast<uint32_t>(pid);
    if (bpf_map__update_elem(filter.target_pids, &key, sizeof(key), &named, sizeof(named),
                             BPF_ANY) != 0) {
      return Error::from_errno("filling " + std::string(whose) + " pid filter");
    }
  }
  std::vector<::bpf_link*> links;
  if (!follow) return links;
  for (::bpf_program* program : {filter.follow_child, filter.forget_child}) {
    ::bpf_link* link = bpf_program__attach(program);
    if (link == nullptr) {
      auto error = Error::from_errno("following the profiled processes' children");
      for (::bpf_link* attached : links) bpf_link__destroy(attached);
      return error;
    }
    links.push_back(link);
  }
  return links;
}

}  // namespace dormant::profilers::ebpf
