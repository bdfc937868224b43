#include "agent/snapshot_output.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/run_arguments.h"
#include "common/gzip.h"
#include "common/json_text.h"
#include "heartbeat/protocol.h"
#include "profile/collapsed.h"

namespace dormant::agent {
namespace {

uint64_t uptime_ms() {
  std::ifstream uptime("/proc/uptime");
  double seconds = 0;
  uptime >> seconds;
  return static_cast<uint64_t>(seconds * 1000);
}

// The `keep` stacks with the most samples.
profile::StackTable heaviest(const profile::StackTable& stacks, size_t keep) {
  std::vector<std::pair<uint64_t, size_t>> order;  // count, position in for_each's order
  stacks.for_each(
      [&](const profile::StackView& stack) { order.emplace_back(stack.count, order.size()); });
  if (keep >= order.size()) return stacks;
  std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(keep), order.end(),
                   std::greater<>());
  std::vector<bool> keeps(order.size());
  for (size_t i = 0; i < keep; ++i) keeps[order[i].second] = true;
  profile::StackTable kept;
  size_t position = 0;
  std::vector<std::string_view> frames;
  stacks.for_each([&](const profile::StackView& stack) {
    if (!keeps[position++]) return;
    frames.clear();
    for (profile::StringId id : stack.frame_ids) frames.push_back(stacks.string(id));
    kept.add(stack.container, stack.comm, frames, stack.count);
  });
  return kept;
}

}  // namespace

const AgentStart& agent_start() {
  static const AgentStart start{
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      uptime_ms()};
  return start;
}

Result<UploadBody> make_upload_body(const profile::StackTable& stacks, nlohmann::json header,
                                    const std::string& hostname,
                                    std::chrono::system_clock::time_point start,
                                    std::chrono::system_clock::time_point end, double cpu_avg,
                                    double mem_avg, size_t max_bytes) {
  heartbeat::ProfileUpload upload;
  upload.start_time = profile::iso_utc(start);
  upload.end_time = profile::iso_utc(end);
  upload.hostname = hostname;
  upload.cpu_avg = cpu_avg;
  upload.mem_avg = mem_avg;
  upload.spawn_time = agent_start().time;
  const profile::StackTable* sent = &stacks;
  profile::StackTable trimmed;
  UploadBody body;
  for (int attempt = 0;; ++attempt) {
    upload.profile = profile::write_collapsed(*sent, header);
    auto compressed = gzip_compress(json_text(heartbeat::to_json(upload)));
    if (!compressed) return std::move(compressed).take_error();
    if (compressed->size() <= max_bytes) {
      body.gzip_json = std::move(*compressed);
      return body;
    }
    if (attempt == 8 || sent->distinct_stacks() <= 1) {
      return Error::invalid_argument("the profile does not fit in " + std::to_string(max_bytes) +
                                     " bytes even with its lightest stacks dropped");
    }
    // Aim below the limit by the share that was over it, with a margin.
    double share = 0.9 * static_cast<double>(max_bytes) / static_cast<double>(compressed->size());
    size_t keep = std::max<size_t>(
        1, static_cast<size_t>(share * static_cast<double>(sent->distinct_stacks())));
    trimmed = heaviest(stacks, keep);
    sent = &trimmed;
    body.dropped_stacks = stacks.distinct_stacks() - trimmed.distinct_stacks();
    header["truncated"] = {
        {"reason", "the compressed profile was larger than " + std::to_string(max_bytes) +
                       " bytes; the stacks with the fewest samples were dropped"},
        {"dropped_stacks", body.dropped_stacks},
        {"dropped_samples", stacks.total_samples() - trimmed.total_samples()}};
  }
}

SnapshotOutput::SnapshotOutput(const config::AgentConfig& config, HostInfo host,
                               ProfileSpool* spool)
    : host_(std::move(host)), spool_(spool) {
  info_.agent_version = DORMANT_VERSION;
  info_.spawn_time = agent_start().time;
  info_.spawn_uptime_ms = agent_start().uptime_ms;
  info_.run_arguments = run_arguments(config);
  info_.profiling_mode = std::string(config::to_string(config.mode));
  if (!config.output_dir.empty()) {
    local_.emplace(config.output_dir, config.rotating_output, config.flamegraph);
  }
}

bool SnapshotOutput::write(const profile::StackTable& stacks,
                           std::chrono::system_clock::time_point start, double cpu_avg) {
  info_.current_time = std::chrono::system_clock::now();
  info_.cpu_avg = cpu_avg;
  info_.mem_avg = HostUsageMeter::memory_percent();
  info_.containers = stacks.containers();
  nlohmann::json header = profile::make_profile_header(host_, info_);
  bool delivered = true;
  if (local_) {
    auto written = local_->write(stacks, header, info_.current_time, "Dormant: " + host_.hostname);
    if (written) {
      spdlog::info(
          "wrote {} ({} samples){}", written->collapsed.string(), stacks.total_samples(),
          written->flamegraph.empty() ? "" : ", flamegraph " + written->flamegraph.string());
    } else {
      spdlog::error("could not write the profile: {}", written.error().message());
      delivered = false;
    }
  }
  if (spool_) {
    auto body = make_upload_body(stacks, std::move(header), host_.hostname, start,
                                 info_.current_time, info_.cpu_avg, info_.mem_avg);
    Result<void> spooled =
        body ? spool_->add(std::move(body->gzip_json)) : Result<void>(body.error());
    if (!spooled) {
      spdlog::error("could not queue the profile for upload: {}", spooled.error().message());
      delivered = false;
    } else if (body->dropped_stacks > 0) {
      spdlog::warn("the profile was too large to upload whole: dropped its {} lightest stacks",
                   body->dropped_stacks);
    }
  }
  return delivered;
}

}  // namespace dormant::agent
