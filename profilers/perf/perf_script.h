// Runs `perf script` over one perf.data file and streams its output into a parser.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "common/child_groups.h"
#include "common/result.h"
#include "profilers/perf/perf_script_parser.h"

namespace dormant::profilers::perf {

struct ScriptOutcome {
  bool complete = false;  // false: perf script died by a signal; discard what was parsed
  std::string warning;    // what to tell the user when !complete
  ParseStats stats;
};

// Feeds `perf script -F +pid -i data` to `parser` line by line. Death by signal is an outcome
// (seed 000: known on some GPU hosts), not an error; a non-zero exit or running past `timeout`
// is an error that carries perf's stderr. `groups`, when given, registers the child there.
Result<ScriptOutcome> run_perf_script(const std::string& perf_path,
                                      const std::filesystem::path& data, PerfScriptParser& parser,
                                      std::chrono::seconds timeout, ChildGroups* groups = nullptr);

}  // namespace dormant::profilers::perf
