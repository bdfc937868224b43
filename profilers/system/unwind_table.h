// The unwind table of one ELF file: its call-frame information (.eh_frame, and .debug_frame
// where the file has one), interpreted by libdw at every address it covers and kept as compact
// rows (bpf/unwind.h) that the eBPF sampler walks stacks with. x86_64 files only.
//
// The files are other users' (anything a process maps executable): what one may cost is bounded.
// A table past kMaxRows, or whose interpretation takes more than kMaxSteps row computations
// (cyclic or huge CFI), is refused whole; the sampler then walks that file by frame pointer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bpf/unwind.h"
#include "common/result.h"

struct Elf;  // libelf.h

namespace dormant::profilers::system {

// Where a file's load segments put its addresses when it is mapped: what turns an address of a
// mapping into the file's own.
class LoadSegments {
 public:
  // Reads the program headers of the file at `path` (named `name` in errors) and nothing else.
  static Result<LoadSegments> read(const std::filesystem::path& path, const std::string& name);
  static Result<LoadSegments> read_image(std::span<const std::byte> image, const std::string& name);
  static Result<LoadSegments> of(Elf* elf, const std::string& name);

  uint64_t base() const { return base_; }  // the lowest load address
  // What a mapping of the file at `start`, from `offset` into it, subtracts from an address to
  // get the address less base(); nullopt when no load segment is at that offset.
  std::optional<uint64_t> bias(uint64_t start, uint64_t offset) const;
  // Where in the file `size` bytes at `address` are; nullopt where no segment holds them whole.
  std::optional<uint64_t> file_offset(uint64_t address, uint64_t size) const;

 private:
  struct Segment {
    uint64_t offset;
    uint64_t address;
    uint64_t size;
  };
  std::vector<Segment> segments_;  // PT_LOAD
  uint64_t base_ = 0;
};

struct UnwindTableLimits {
  size_t max_rows = DORMANT_UNWIND_MAX_ROWS;
  // Rows computed, counting a row of an FDE once per earlier row of it (libdw interprets an
  // FDE's instructions from its start for every address asked).
  uint64_t max_steps = uint64_t{1} << 25;
  // Set from another thread (a session stopping): the reading ends with an error soon after.
  const std::atomic<bool>* cancel = nullptr;
  uint64_t max_file_bytes = uint64_t{2} << 30;
};

class UnwindTable {
 public:
  // Reads the file at `path` (which may be a /proc/PID/map_files or /proc/PID/root path).
  static Result<UnwindTable> read(const std::filesystem::path& path,
                                  const UnwindTableLimits& limits = {});
  // Reads an ELF image in memory (the vDSO), named `name` in errors.
  static Result<UnwindTable> read_image(std::span<const std::byte> image, const std::string& name,
                                        const UnwindTableLimits& limits = {});

  // By pc; each holds up to the next. Gaps between functions have DORMANT_CFA_NONE rows.
  const std::vector<dormant_unwind_row>& rows() const { return rows_; }
  // Where the rows' pcs are: a row's pc is an address of the file less segments().base().
  const LoadSegments& segments() const { return segments_; }

  uint64_t fdes() const { return fdes_; }                    // functions described
  uint64_t fdes_left_out() const { return fdes_left_out_; }  // encodings or ranges we cannot use
  size_t memory_bytes() const { return rows_.capacity() * sizeof(dormant_unwind_row); }

 private:
  friend class UnwindTableReader;

  std::vector<dormant_unwind_row> rows_;
  LoadSegments segments_;
  uint64_t fdes_ = 0;
  uint64_t fdes_left_out_ = 0;
};

}  // namespace dormant::profilers::system
