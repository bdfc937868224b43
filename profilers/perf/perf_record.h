// PerfRecord: one `perf record` child writing into a private directory, whose output is rotated
// on demand (--switch-output=signal) so that each snapshot gets its own perf.data file.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/result.h"
#include "common/subprocess.h"

namespace dormant::profilers::perf {

struct PerfRecordOptions {
  std::string perf_path = "perf";
  std::filesystem::path directory;  // private, owned by the caller
  std::string name = "perf";        // file prefix and log name ("perf-fp", "perf-dwarf")
  std::vector<std::string> args;    // event, frequency, call graph and target arguments
  ChildGroups* groups = nullptr;    // where perf's process group is registered
};

class PerfRecord {
 public:
  static constexpr std::chrono::seconds kStartTimeout{10};
  static constexpr std::chrono::seconds kDumpTimeout{30};

  // Starts perf and waits until it has opened its output file (or died, with its stderr).
  static Result<std::unique_ptr<PerfRecord>> start(const PerfRecordOptions& options);
  ~PerfRecord();

  // Makes perf close the current file and start a new one; returns every closed file not yet
  // handed out, oldest first (usually one). The caller removes them.
  Result<std::vector<std::filesystem::path>> rotate();

  // The exit status if perf is no longer running.
  std::optional<ExitStatus> exited();
  uint64_t rss_bytes() const;
  SteadyClock::duration age() const { return SteadyClock::now() - started_; }
  // The end of what perf printed on stderr.
  std::string stderr_tail() const;
  void stop(std::chrono::milliseconds grace);

 private:
  PerfRecord(PerfRecordOptions options, std::unique_ptr<Subprocess> process);
  std::filesystem::path log_path() const { return options_.directory / (options_.name + ".log"); }
  std::vector<std::filesystem::path> rotated_files() const;

  PerfRecordOptions options_;
  std::unique_ptr<Subprocess> process_;
  SteadyClock::time_point started_;
};

}  // namespace dormant::profilers::perf
