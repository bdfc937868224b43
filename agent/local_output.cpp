#include "agent/local_output.h"

#include <algorithm>

#include <unistd.h>

#include "common/atomic_file.h"
#include "common/iso_time.h"
#include "common/private_directory.h"
#include "common/subprocess.h"

namespace dormant::agent {
namespace {

// Points `link` at `target` (a name in the same directory) without a moment where it is missing.
Result<void> replace_link(const std::filesystem::path& link, const std::filesystem::path& target) {
  std::filesystem::path temp = link;
  temp += ".tmp";
  ::unlink(temp.c_str());
  if (::symlink(target.filename().c_str(), temp.c_str()) != 0) {
    return Error::from_errno("symlink(" + temp.string() + ")");
  }
  if (::rename(temp.c_str(), link.c_str()) != 0) {
    return Error::from_errno("rename(" + temp.string() + ")");
  }
  return ok();
}

// Profiles show code and data of every process: only root reads them.
constexpr mode_t kProfileMode = 0600;

Result<void> write_linked(const std::filesystem::path& file, const std::string& content,
                          const std::filesystem::path& link) {
  if (auto saved = write_file_atomically(file, content, kProfileMode); !saved) {
    return saved.error();
  }
  return replace_link(link, file);
}

int64_t nanoseconds_of(std::chrono::system_clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

}  // namespace

Result<void> LocalOutput::write_pprof(const std::filesystem::path& collapsed_file,
                                      const std::filesystem::path& pprof_file,
                                      std::chrono::system_clock::time_point start,
                                      std::chrono::system_clock::time_point end) const {
  constexpr auto kConversionTime = std::chrono::seconds(60);
  auto converted = run_command(
      {pprof_tool_.string(), "--time-nanos",
       std::to_string(nanoseconds_of(start.time_since_epoch())), "--duration-nanos",
       std::to_string(nanoseconds_of(end - start)), collapsed_file.string(), pprof_file.string()},
      deadline_after(kConversionTime), 4096);
  if (!converted) return std::move(converted).take_error().with_context("running dormant-pprof");
  if (!converted->status.success()) {
    return Error(ErrorKind::kSystem, pprof_tool_.string() + " " + converted->status.describe() +
                                         ": " + converted->stderr_text);
  }
  return replace_link(directory_ / "last_profile.pb.gz", pprof_file);
}

Result<WrittenProfile> LocalOutput::write(const std::string& collapsed,
                                          const std::string& flamegraph_svg,
                                          std::chrono::system_clock::time_point start,
                                          std::chrono::system_clock::time_point end) {
  if (auto made = make_private_directory(directory_); !made) {
    return std::move(made).take_error().with_context("-o");
  }
  std::error_code error;
  // Milliseconds, so that a snapshot cut short right after another keeps its own file.
  std::string stem = "profile_" + iso_utc(end, /*with_millis=*/true);
  WrittenProfile written;
  // pprof is made from the collapsed file, which goes again when it was not asked for.
  std::filesystem::path collapsed_file = directory_ / (stem + ".col");
  if (formats_.collapsed || formats_.pprof) {
    auto saved = formats_.collapsed
                     ? write_linked(collapsed_file, collapsed, directory_ / "last_profile.col")
                     : write_file_atomically(collapsed_file, collapsed, kProfileMode);
    if (!saved) return saved.error();
    if (formats_.collapsed) written.files.push_back(collapsed_file);
  }
  if (formats_.pprof) {
    std::filesystem::path pprof_file = directory_ / (stem + ".pb.gz");
    auto converted = write_pprof(collapsed_file, pprof_file, start, end);
    if (!formats_.collapsed) std::filesystem::remove(collapsed_file, error);
    if (!converted) return converted.error();
    written.files.push_back(pprof_file);
  }
  if (formats_.svg && !flamegraph_svg.empty()) {
    std::filesystem::path svg_file = directory_ / (stem + ".svg");
    if (auto saved = write_linked(svg_file, flamegraph_svg, directory_ / "last_flamegraph.svg");
        !saved) {
      return saved.error();
    }
    written.files.push_back(svg_file);
  }
  if (rotating_) {
    for (const auto& old : previous_.files) {
      if (std::find(written.files.begin(), written.files.end(), old) == written.files.end()) {
        std::filesystem::remove(old, error);
      }
    }
  }
  previous_ = written;
  return written;
}

}  // namespace dormant::agent
