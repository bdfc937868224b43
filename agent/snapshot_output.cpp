#include "agent/snapshot_output.h"

#include <fstream>

#include <spdlog/spdlog.h>

#include "agent/run_arguments.h"
#include "common/gzip.h"
#include "common/iso_time.h"
#include "common/json_text.h"
#include "heartbeat/protocol.h"

namespace dormant::agent {
namespace {

uint64_t uptime_ms() {
  std::ifstream uptime("/proc/uptime");
  double seconds = 0;
  uptime >> seconds;
  return static_cast<uint64_t>(seconds * 1000);
}

}  // namespace

const AgentStart& agent_start() {
  static const AgentStart start{
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      uptime_ms()};
  return start;
}

module::ProfileFacts profile_facts(const config::AgentConfig& config, HostInfo host) {
  module::ProfileFacts facts;
  facts.host = std::move(host);
  facts.agent_version = DORMANT_VERSION;
  facts.spawn_time = agent_start().time;
  facts.spawn_uptime_ms = agent_start().uptime_ms;
  facts.run_arguments = run_arguments(config);
  facts.profiling_mode = std::string(config::to_string(config.mode));
  return facts;
}

Result<UploadBody> make_upload_body(const module::Snapshot& snapshot, const std::string& hostname,
                                    std::chrono::system_clock::time_point start,
                                    const module::SnapshotTimes& times, size_t max_bytes) {
  heartbeat::ProfileUpload upload;
  upload.start_time = iso_utc(start);
  upload.end_time = iso_utc(times.end);
  upload.hostname = hostname;
  upload.cpu_avg = times.cpu_avg;
  upload.mem_avg = times.mem_avg;
  upload.spawn_time = agent_start().time;
  UploadBody body;
  auto room = [&](const std::string& collapsed) -> Result<double> {
    upload.profile = collapsed;
    auto compressed = gzip_compress(json_text(heartbeat::to_json(upload)));
    if (!compressed) return std::move(compressed).take_error();
    body.gzip_json = std::move(*compressed);
    return static_cast<double>(max_bytes) / static_cast<double>(body.gzip_json.size());
  };
  auto fitted = snapshot.collapsed_fitting(room);
  if (!fitted) {
    return std::move(fitted).take_error().with_context("the upload of at most " +
                                                       std::to_string(max_bytes) + " bytes");
  }
  body.dropped_stacks = fitted->dropped_stacks;
  return body;  // the last body measured is the one that fits
}

SnapshotOutput::SnapshotOutput(const config::AgentConfig& config, std::string hostname,
                               ProfileSpool* spool, std::function<void()> spooled)
    : hostname_(std::move(hostname)),
      flamegraph_(config.flamegraph),
      spool_(spool),
      spooled_(std::move(spooled)) {
  if (!config.output_dir.empty()) local_.emplace(config.output_dir, config.rotating_output);
}

bool SnapshotOutput::write(const module::Snapshot& snapshot,
                           std::chrono::system_clock::time_point start,
                           const module::SnapshotTimes& times) {
  bool delivered = true;
  if (local_) {
    std::string svg;
    if (flamegraph_) {
      svg = snapshot.flamegraph_svg("Dormant: " + hostname_, iso_utc(times.end) + " UTC");
    }
    auto written = local_->write(snapshot.collapsed(), svg, times.end);
    if (written) {
      spdlog::info(
          "wrote {} ({} samples){}", written->collapsed.string(), snapshot.samples(),
          written->flamegraph.empty() ? "" : ", flamegraph " + written->flamegraph.string());
    } else {
      spdlog::error("could not write the profile: {}", written.error().message());
      delivered = false;
    }
  }
  if (spool_) {
    auto body = make_upload_body(snapshot, hostname_, start, times);
    Result<void> spooled =
        body ? spool_->add(std::move(body->gzip_json)) : Result<void>(body.error());
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

SnapshotLoopResult run_snapshot_loop(
    module::ProfilingSession& session, SnapshotOutput& output, std::chrono::seconds duration,
    bool continuous, const std::function<bool(SteadyClock::time_point until)>& stop_requested) {
  SnapshotLoopResult result;
  bool stopping = stop_requested(SteadyClock::now());
  while (!stopping) {
    auto begin = std::chrono::system_clock::now();
    HostUsageMeter usage;
    stopping = stop_requested(SteadyClock::now() + duration) || !continuous;
    module::SnapshotTimes times;
    times.cpu_avg = usage.cpu_percent();
    times.mem_avg = HostUsageMeter::memory_percent();
    times.end = std::chrono::system_clock::now();
    auto snapshot = session.snapshot(times);
    stopping = stopping || stop_requested(SteadyClock::now());
    if (snapshot->samples() > 0 || !stopping || result.snapshots == 0) {
      result.all_delivered = output.write(*snapshot, begin, times) && result.all_delivered;
    }
    ++result.snapshots;
  }
  return result;
}

}  // namespace dormant::agent
