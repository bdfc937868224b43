// A JIT's perf map (/tmp/perf-PID.map): "START SIZE name" lines, both numbers hexadecimal, that
// Node (--perf-basic-prof), the JVM (Compiler.perfmap) and other JITs write for perf to name
// their code. The file is the program's to write: a line that is not one (or longer than
// kMaxLineBytes) is skipped and counted, a name loses its control characters and semicolons and is
// cut at kMaxNameBytes, and the bytes read and entries kept have bounds (PerfMapLimits). A JIT
// appends as it compiles: read_more() reads what was added since, the last line once it is whole.
// Where code was replaced, the newer entry names the addresses it covers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "common/result.h"

namespace dormant::profilers::system {

struct PerfMapLimits {
  uint64_t max_bytes = 16 << 20;  // of the file: a Node service's map grows for as long as it runs
  size_t max_entries = 1 << 18;
};

class PerfMap {
 public:
  static constexpr size_t kMaxNameBytes = 1024;
  static constexpr size_t kMaxLineBytes = 64 * 1024;  // longer lines are skipped

  explicit PerfMap(PerfMapLimits limits = {}) : limits_(limits) {}

  // Reads what `path` has beyond what was read of it; an error when it cannot be opened (no map),
  // is not a regular file owned by `owner` (the process's uid, as perf checks it: another user's
  // file, or a link to one, names nothing) or cannot be read. Past max_bytes, nothing more is read.
  Result<void> read_more(const std::filesystem::path& path, uid_t owner);
  // Reads more of the map process `pid` writes, where it sees it: /tmp/perf-NSPID.map in its own
  // mount namespace, under its own pid there, owned by its user.
  Result<void> read_more_of(pid_t pid);
  // Takes whole lines of `text`; a last line without its newline waits for the rest.
  void add_text(std::string_view text);

  std::optional<std::string_view> name_at(uint64_t address) const;
  size_t entries() const { return entries_.size(); }
  uint64_t skipped_lines() const { return skipped_lines_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  struct Entry {
    uint64_t end;
    std::string name;
  };
  void add_line(std::string_view line);

  const PerfMapLimits limits_;
  std::map<uint64_t, Entry> entries_;  // by start; none overlap
  std::string partial_line_;           // read, its newline not yet
  bool line_too_long_ = false;
  uint64_t bytes_read_ = 0;
  uint64_t skipped_lines_ = 0;
};

}  // namespace dormant::profilers::system
