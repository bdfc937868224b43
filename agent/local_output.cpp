#include "agent/local_output.h"

#include <unistd.h>

#include "common/atomic_file.h"
#include "common/iso_time.h"

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

}  // namespace

Result<WrittenProfile> LocalOutput::write(const std::string& collapsed,
                                          const std::string& flamegraph_svg,
                                          std::chrono::system_clock::time_point end) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) {
    return Error(ErrorKind::kSystem,
                 "cannot create " + directory_.string() + ": " + error.message());
  }
  // Milliseconds, so that a snapshot cut short right after another keeps its own file.
  std::string stem = "profile_" + iso_utc(end, /*with_millis=*/true);
  WrittenProfile written;
  written.collapsed = directory_ / (stem + ".col");
  if (auto saved = write_file_atomically(written.collapsed, collapsed); !saved) {
    return saved.error();
  }
  if (auto linked = replace_link(directory_ / "last_profile.col", written.collapsed); !linked) {
    return linked.error();
  }
  if (!flamegraph_svg.empty()) {
    written.flamegraph = directory_ / (stem + ".svg");
    if (auto saved = write_file_atomically(written.flamegraph, flamegraph_svg); !saved) {
      return saved.error();
    }
    if (auto linked = replace_link(directory_ / "last_flamegraph.svg", written.flamegraph);
        !linked) {
      return linked.error();
    }
  }
  if (rotating_) {
    for (const auto& old : {previous_.collapsed, previous_.flamegraph}) {
      if (!old.empty() && old != written.collapsed && old != written.flamegraph) {
        std::filesystem::remove(old, error);
      }
    }
  }
  previous_ = written;
  return written;
}

}  // namespace dormant::agent
