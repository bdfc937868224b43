#include "profilers/perf/perf_record.h"

#include <algorithm>
#include <thread>

#include <signal.h>

#include "common/atomic_file.h"
#include "common/procfs.h"

namespace dormant::profilers::perf {
namespace {

constexpr std::chrono::milliseconds kPollInterval{20};
constexpr std::chrono::milliseconds kSignalRepeat{500};
constexpr size_t kStderrTailBytes = 4096;

std::string file_tail(const std::filesystem::path& path) {
  std::string text = read_file(path).value_or("");
  if (text.size() > kStderrTailBytes) text.erase(0, text.size() - kStderrTailBytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

Result<std::unique_ptr<PerfRecord>> PerfRecord::start(const PerfRecordOptions& options) {
  std::filesystem::path output = options.directory / (options.name + ".data");
  SpawnOptions spawn;
  spawn.argv = {options.perf_path,   "record", "-o", output.string(), "--switch-output=signal",
                "--no-buildid-cache"};
  spawn.argv.insert(spawn.argv.end(), options.args.begin(), options.args.end());
  spawn.stdout_to = Redirect::null();
  spawn.stderr_to = Redirect::file(options.directory / (options.name + ".log"));
  spawn.groups = options.groups;
  auto process = Subprocess::spawn(spawn);
  if (!process) return process.error();
  std::unique_ptr<PerfRecord> record(new PerfRecord(options, std::move(*process)));

  Deadline deadline = deadline_after(kStartTimeout);
  while (!std::filesystem::exists(output)) {
    if (auto status = record->exited()) {
      return Error(ErrorKind::kUnavailable,
                   options.name + " record " + status->describe() + ": " + record->stderr_tail());
    }
    if (SteadyClock::now() >= deadline) {
      std::string tail = record->stderr_tail();
      record->stop(std::chrono::milliseconds(500));
      return Error(ErrorKind::kTimeout,
                   options.name + " record did not start writing within 10 s: " + tail);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return record;
}

PerfRecord::PerfRecord(PerfRecordOptions options, std::unique_ptr<Subprocess> process)
    : options_(std::move(options)), process_(std::move(process)), started_(SteadyClock::now()) {}

PerfRecord::~PerfRecord() { stop(std::chrono::milliseconds(500)); }

std::vector<std::filesystem::path> PerfRecord::rotated_files() const {
  std::vector<std::filesystem::path> files;
  std::error_code ignored;
  std::string prefix = options_.name + ".data.";
  for (const auto& entry : std::filesystem::directory_iterator(options_.directory, ignored)) {
    if (entry.path().filename().string().starts_with(prefix)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // perf names them by time
  return files;
}

Result<std::vector<std::filesystem::path>> PerfRecord::rotate() {
  std::vector<std::filesystem::path> before = rotated_files();
  Deadline deadline = deadline_after(kDumpTimeout);
  // perf ignores a SIGUSR2 that comes before it is ready to switch (right after it starts), so
  // the signal is repeated until a new file shows up.
  for (auto next_signal = SteadyClock::now();; std::this_thread::sleep_for(kPollInterval)) {
    if (auto status = exited()) {
      return Error(ErrorKind::kUnavailable, options_.name + " record " + status->describe() +
                                                " while switching output: " + stderr_tail());
    }
    std::vector<std::filesystem::path> files = rotated_files();
    if (files.size() > before.size() || (!files.empty() && files.back() != before.back())) {
      return files;
    }
    if (SteadyClock::now() >= deadline) {
      return Error(ErrorKind::kTimeout,
                   options_.name + " record did not switch its output file within 30 s");
    }
    if (SteadyClock::now() >= next_signal) {
      ::kill(process_->pid(), SIGUSR2);
      next_signal = SteadyClock::now() + kSignalRepeat;
    }
  }
}

std::optional<ExitStatus> PerfRecord::exited() {
  return process_ ? process_->try_wait() : std::optional<ExitStatus>();
}

uint64_t PerfRecord::rss_bytes() const {
  auto memory = procfs::memory_usage(process_->pid());
  return memory ? memory->rss_kb * 1024 : 0;
}

std::string PerfRecord::stderr_tail() const { return file_tail(log_path()); }

void PerfRecord::stop(std::chrono::milliseconds grace) {
  if (!process_) return;
  process_->terminate(grace);
  process_.reset();
}

}  // namespace dormant::profilers::perf
