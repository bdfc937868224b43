#include "profilers/perf/perf_script.h"

#include "common/subprocess.h"

namespace dormant::profilers::perf {
namespace {

std::string megabytes(const std::filesystem::path& file) {
  std::error_code error;
  auto size = std::filesystem::file_size(file, error);
  if (error) return "unknown size";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MB", static_cast<double>(size) / 1e6);
  return text;
}

std::string last_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

}  // namespace

Result<ScriptOutcome> run_perf_script(const std::string& perf_path,
                                      const std::filesystem::path& data, PerfScriptParser& parser,
                                      std::chrono::seconds timeout, ChildGroups* groups) {
  SpawnOptions options;
  options.argv = {perf_path, "script", "-F", "+pid", "-i", data.string()};
  options.groups = groups;
  auto spawned = Subprocess::spawn(options);
  if (!spawned) return spawned.error();
  Subprocess& script = **spawned;

  Deadline deadline = deadline_after(timeout);
  auto read =
      script.for_each_stdout_line([&](std::string_view line) { parser.feed(line); }, deadline);
  if (!read) {
    script.terminate(std::chrono::seconds(1));
    return Error(ErrorKind::kTimeout, "perf script did not finish reading " +
                                          data.filename().string() + " (" + megabytes(data) +
                                          ") within " + std::to_string(timeout.count()) + " s");
  }
  parser.finish();
  (void)script.drain_stderr(deadline_after(std::chrono::seconds(1)));
  auto status = script.wait(deadline_after(std::chrono::seconds(5)));
  if (!status) status = script.terminate(std::chrono::seconds(1));

  ScriptOutcome outcome;
  outcome.stats = parser.stats();
  if (status->signaled) {
    outcome.warning = "perf script was " + status->describe() + " while reading " +
                      data.filename().string() + " (" + megabytes(data) +
                      "); this snapshot has no perf samples. This is known to happen on some GPU "
                      "hosts";
    return outcome;
  }
  if (!status->success()) {
    return Error(ErrorKind::kUnavailable,
                 "perf script " + status->describe() + ": " + last_line(script.stderr_tail()));
  }
  outcome.complete = true;
  return outcome;
}

}  // namespace dormant::profilers::perf
