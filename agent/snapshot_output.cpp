#include "agent/snapshot_output.h"

#include <spdlog/spdlog.h>

#include "agent/module_loader.h"
#include "agent/upload_body.h"
#include "common/iso_time.h"
#include "common/text.h"

namespace dormant::agent {

SnapshotOutput::SnapshotOutput(const SessionPlan& plan, std::string hostname, ProfileSpool* spool,
                               std::function<void()> spooled)
    : hostname_(std::move(hostname)), spool_(spool), spooled_(std::move(spooled)) {
  if (!plan.output_dir.empty()) {
    local_.emplace(plan.output_dir, plan.rotating_output, plan.formats,
                   installed_file("", kPprofTool));
  }
}

bool SnapshotOutput::write(const module::Snapshot& snapshot,
                           std::chrono::system_clock::time_point start,
                           const module::SnapshotTimes& times) {
  bool delivered = true;
  if (local_) {
    std::string svg;
    if (local_->formats().svg) {
      svg = snapshot.flamegraph_svg("Dormant: " + hostname_, iso_utc(times.end) + " UTC");
    }
    auto written = local_->write(snapshot.collapsed(), svg, start, times.end);
    if (written) {
      std::vector<std::string> files;
      for (const auto& file : written->files) files.push_back(file.string());
      spdlog::info("wrote {} ({} samples)", join(files, ", "), snapshot.samples());
    } else {
      spdlog::error("could not write the profile: {}", written.error().message());
      delivered = false;
    }
  }
  if (spool_) {
    auto body = make_upload_body(snapshot, hostname_, start, times);
    Result<void> spooled = body ? spool_->add(body->upload) : Result<void>(body.error());
    if (!spooled) {
      spdlog::error("could not queue the profile for upload: {}", spooled.error().message());
      delivered = false;
    } else {
      if (body->dropped_stacks > 0) {
        spdlog::warn("the profile was too large to upload whole: dropped its {} lightest stacks",
                     body->dropped_stacks);
      }
      if (spooled_) spooled_();
    }
  }
  return delivered;
}

}  // namespace dormant::agent
