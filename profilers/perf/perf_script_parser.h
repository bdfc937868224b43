// A streaming parser of `perf script -F +pid` text: it takes the output line by line, as it
// arrives, and counts each sample's stack into a StackTable. Its memory is the table's: bounded
// by the distinct stacks, never by the length of the text.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile/stack_table.h"

namespace dormant::profilers::perf {

// "comm pid/tid [cpu] seconds.micros: period event:" — comm may hold spaces.
struct SampleHeader {
  std::string_view comm;
  int pid = 0;
  int tid = 0;
};
std::optional<SampleHeader> parse_sample_header(std::string_view line);

// A frame line "\taddress symbol+0xoffset (dso)" as the frame name gProfiler writes: the symbol
// without its offset; kernel frames suffixed "_[k]"; an unknown symbol as "(dso)".
// False if the line is not a frame line. `name` views the line, or `scratch` when the name needed
// building; both stay valid until the next call with the same scratch.
bool parse_frame(std::string_view line, std::string& scratch, std::string_view& name);
bool parse_frame(std::string_view line, std::string& name);

struct ParseStats {
  uint64_t samples = 0;
  uint64_t empty_stacks = 0;  // samples without a call chain, counted under their process name
  uint64_t malformed_lines = 0;
  std::string first_malformed_line;
};

class PerfScriptParser {
 public:
  // Where the sample of a given pid is counted: one table for all, or one per process.
  using TableForPid = std::function<profile::StackTable&(int pid)>;

  explicit PerfScriptParser(profile::StackTable& table);
  explicit PerfScriptParser(TableForPid table_for_pid);

  void feed(std::string_view line);
  // Counts the last sample if the text did not end with a blank line.
  void finish();

  const ParseStats& stats() const { return stats_; }

 private:
  // Out of line, so that feeding the common frame line saves no registers for the rare ones.
  [[gnu::noinline]] void feed_other(std::string_view line);
  void begin_sample(const SampleHeader& header);
  void end_sample();
  void add_frame(std::string_view line);
  [[gnu::cold]] void malformed(std::string_view line);

  TableForPid table_for_pid_;
  profile::StackTable* current_ = nullptr;  // the table of the sample being read
  std::vector<profile::StringId> key_;      // container, comm, then frames leaf first
  std::string frame_;                       // scratch for frame names that need building
  ParseStats stats_;
};

}  // namespace dormant::profilers::perf
