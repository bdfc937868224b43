// libFuzzer target: `perf script -F +pid` text, fed line by line as the agent feeds it. Besides
// surviving any input, the parser must count every sample it reports, and the profile it builds
// must survive a round trip through the collapsed format.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile/collapsed.h"
#include "profile/stack_table.h"
#include "profilers/perf/perf_script_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  dormant::profile::StackTable table;
  dormant::profilers::perf::PerfScriptParser parser(table);
  while (!text.empty()) {
    size_t newline = text.find('\n');
    parser.feed(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  }
  parser.finish();
  if (table.total_samples() != parser.stats().samples) std::abort();

  std::string written = dormant::profile::write_collapsed(table, nlohmann::json::object());
  auto read = dormant::profile::read_collapsed(written);
  if (!read.ok() || read->stacks.total_samples() != table.total_samples()) std::abort();
  return 0;
}
