#include "agent/upload_body.h"

#include "agent/profile_facts.h"
#include "common/iso_time.h"
#include "wire/protocol.h"

namespace dormant::agent {

Result<UploadBody> make_upload_body(const module::Snapshot& snapshot, const std::string& hostname,
                                    std::chrono::system_clock::time_point start,
                                    const module::SnapshotTimes& times, size_t max_bytes) {
  wire::ProfileUpload upload;
  upload.start_time = iso_utc(start);
  upload.end_time = iso_utc(times.end);
  upload.hostname = hostname;
  upload.cpu_avg = times.cpu_avg;
  upload.mem_avg = times.mem_avg;
  upload.spawn_time = agent_start().time;
  UploadBody body;
  auto room = [&](const std::string& collapsed) -> Result<double> {
    upload.profile = collapsed;
    auto compressed = wire::compress_upload(upload);
    if (!compressed) return std::move(compressed).take_error();
    body.upload = std::move(*compressed);
    return static_cast<double>(max_bytes) /
           static_cast<double>(body.upload.gzip_head.size() + wire::kGpidMemberBytes);
  };
  auto fitted = snapshot.collapsed_fitting(room);
  if (!fitted) {
    return std::move(fitted).take_error().with_context("the upload of at most " +
                                                       std::to_string(max_bytes) + " bytes");
  }
  body.dropped_stacks = fitted->dropped_stacks;
  return body;  // the last body measured is the one that fits
}

}  // namespace dormant::agent
