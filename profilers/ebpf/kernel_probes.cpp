#include "profilers/ebpf/kernel_probes.h"

#include <atomic>
#include <cerrno>
#include <iterator>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "common/unique_fd.h"

namespace dormant::profilers::ebpf {
namespace {

Result<bool> probe_unallocated_map_in_perf_event_program() {
  LIBBPF_OPTS(bpf_map_create_opts, map_options, .map_flags = BPF_F_NO_PREALLOC);
  UniqueFd map(bpf_map_create(BPF_MAP_TYPE_HASH, "dormant_probe", sizeof(__u64), sizeof(__u64), 1,
                              &map_options));
  if (!map) return Error::from_errno("creating a hash map that allocates as it fills");
  // r1 = the map (a two-slot ld_imm64, which is where the verifier checks the map's type against
  // the program's); r0 = 0; exit.
  const bpf_insn program[] = {
      {.code = BPF_LD | BPF_DW | BPF_IMM,
       .dst_reg = BPF_REG_1,
       .src_reg = BPF_PSEUDO_MAP_FD,
       .off = 0,
       .imm = map.get()},
      {},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  UniqueFd loaded(bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, "dormant_probe", "GPL", program,
                                std::size(program), nullptr));
  if (loaded) return true;
  if (errno == EINVAL) return false;  // the verifier's refusal
  return Error::from_errno("loading a perf_event program that uses such a map");
}

}  // namespace

Result<bool> perf_event_programs_accept_unallocated_maps() {
  enum Answer : int { kUnknown, kYes, kNo };
  static std::atomic<int> answer{kUnknown};
  if (answer != kUnknown) return answer == kYes;
  auto probed = probe_unallocated_map_in_perf_event_program();
  if (probed) answer = *probed ? kYes : kNo;
  return probed;
}

}  // namespace dormant::profilers::ebpf
