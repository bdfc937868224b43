// libFuzzer target: an ELF file as any process may map one, its call-frame information read into
// an unwind table as the eBPF sampler reads it (from a file: here a memfd). Besides surviving any
// input, the table must be what the BPF walk can search: rows strictly by pc, within the bounds,
// each of a kind the walk knows.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "profilers/system/unwind_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dormant::profilers::system::UnwindTable;
  using dormant::profilers::system::UnwindTableLimits;
  dormant::UniqueFd file(::memfd_create("unwind_table_fuzz", MFD_CLOEXEC));
  if (!file) std::abort();
  if (size > 0 && ::write(file.get(), data, size) != static_cast<ssize_t>(size)) std::abort();
  UnwindTableLimits limits;
  limits.max_rows = 1 << 16;
  limits.max_steps = 1 << 20;  // a cyclic or huge FDE costs this many row computations at most
  auto table = UnwindTable::read("/proc/self/fd/" + std::to_string(file.get()), limits);
  if (!table) return 0;
  const auto& rows = table->rows();
  if (rows.size() > limits.max_rows + table->fdes()) std::abort();  // + one gap row per FDE
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i].pc <= rows[i - 1].pc) std::abort();
    if (DORMANT_UNWIND_CFA_KIND(rows[i].kinds) > DORMANT_CFA_END) std::abort();
    if (DORMANT_UNWIND_FP_KIND(rows[i].kinds) > DORMANT_FP_LOST) std::abort();
  }
  for (uint64_t offset = 0; offset < size; offset += 4096)
    (void)table->segments().bias(0x400000, offset);
  return 0;
}
