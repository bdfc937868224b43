// Names the frames of sampled stacks: kernel addresses from /proc/kallsyms, user addresses from
// the process's mappings and the ELF symbols of the files mapped there, and JIT code from the
// process's perf map (/tmp/perf-PID.map in its own mount and pid namespace), read as it grows, at
// most once a snapshot. A process's mappings are
// read when it is first seen (remember()), so a process that exits before the snapshot is still
// named. Frames that cannot be named look as they do in the perf path: "(dso path)" where the
// mapping is known, "[unknown]" where it is not. Caches are bounded. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "profilers/system/elf_symbols.h"
#include "profilers/system/kernel_symbols.h"
#include "profilers/system/perf_map.h"
#include "profilers/system/process_maps.h"

namespace dormant::profilers::system {

struct SymbolizerLimits {
  size_t max_images = 32768;   // process images remembered
  size_t max_binaries = 1024;  // ELF files whose symbols are kept
  // The memory those symbols may take together (ElfSymbols::memory_bytes) with what reading files
  // holds meanwhile (ElfSymbols::load's grants), each file's own bound aside: past it, the least
  // recently used files are given up, and a file that cannot fit is not read.
  size_t max_binary_bytes = 256 << 20;
};

class Symbolizer {
 public:
  explicit Symbolizer(std::optional<KernelSymbols> kernel, SymbolizerLimits limits = {});

  // Reads the mappings of `pid` (as image `generation`, named `comm`) and the symbols of the files
  // they map, now, while the process lives. False when it had none left to read (it has exited,
  // or is exiting): its frames will be "[unknown]".
  bool remember(pid_t pid, uint32_t generation, std::string comm);

  // Whether an image's mappings may lack libraries still to be loaded: the code at `user_ip` is
  // the dynamic loader's, or outside every mapping read (0: no user code, nothing to load).
  bool may_be_loading(pid_t pid, uint32_t generation, uint64_t user_ip) const;

  // The executable mappings read for an image, by start address; empty when none were.
  std::vector<Mapping> mappings(pid_t pid, uint32_t generation) const;

  // The process name of an image; one never remembered is looked up now, if it still runs.
  std::string comm(pid_t pid, uint32_t generation);

  // Root-first frame names of a stack whose frames are given innermost first. `user` frames
  // after the first are return addresses: they are looked up one byte back, inside the call.
  // A live image whose innermost frame is outside all its mappings (in a library loaded since
  // they were read) has them read again, once per snapshot.
  // `innermost_is_exact`: false for a part of a stack whose innermost frame is a return address
  // too.
  void append_user_frames(pid_t pid, uint32_t generation, std::span<const uint64_t> user,
                          std::vector<std::string>& frames, bool innermost_is_exact = true);
  void append_kernel_frames(std::span<const uint64_t> kernel, std::vector<std::string>& frames);
  // The name the image's JIT gives `address` in its perf map, where it writes one that covers it;
  // read as append_user_frames() reads it.
  std::optional<std::string> perf_map_name(pid_t pid, uint32_t generation, uint64_t address);

  // Ends a snapshot: drops the images of processes that no longer run (the snapshot has used
  // them); returns their pids.
  std::vector<pid_t> forget_exited();

  size_t images() const;
  size_t binaries() const;
  size_t binary_bytes() const;  // what the symbols kept take
  // Files read for their symbols: those not ELF, given up and read again, or read by two threads
  // at once included.
  uint64_t binaries_read() const;

 private:
  struct Image {
    std::string comm;
    std::vector<Mapping> mappings;
    uint64_t read_again_in = 0;         // the snapshot whose frames had its mappings read again
    std::unique_ptr<PerfMap> perf_map;  // a JIT's, once one was found
    uint64_t perf_map_read_in = 0;      // the snapshot that last looked for more of it
  };
  struct Binary {
    std::unique_ptr<ElfSymbols> symbols;  // null: not an ELF we can read
    uint64_t last_used = 0;
    size_t bytes = 0;  // symbols->memory_bytes(), as binary_bytes_ counts it
  };
  using ImageKey = std::pair<pid_t, uint32_t>;
  using BinaryKey = std::pair<uint64_t, uint64_t>;  // device, inode

  void load_binaries(pid_t pid, const std::vector<Mapping>& mappings);
  // Gives up the least recently used binaries until `room` more bytes fit beside those kept and
  // those being read, and one more binary; or, with `kept` (which stays), until the bytes fit.
  void make_room(size_t room, const Binary* kept = nullptr);
  bool should_read_again(pid_t pid, uint32_t generation, std::span<const uint64_t> user);
  std::string user_frame(const Image* image, uint64_t address);
  // Reads more of the image's perf map, once a snapshot, when a frame is in no file's code.
  void read_perf_map(pid_t pid, Image& image, std::span<const uint64_t> user);

  const std::optional<KernelSymbols> kernel_;
  const SymbolizerLimits limits_;
  mutable std::mutex mutex_;
  std::map<ImageKey, Image> images_;
  std::map<BinaryKey, Binary> binaries_;  // the least recently used goes first
  size_t binary_bytes_ = 0;
  size_t loading_bytes_ = 0;  // granted to the files being read
  uint64_t uses_ = 0;
  uint64_t binaries_read_ = 0;
  uint64_t snapshot_ = 1;
};

}  // namespace dormant::profilers::system
