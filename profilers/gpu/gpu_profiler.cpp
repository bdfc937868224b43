#include "profilers/gpu/gpu_profiler.h"

#include <cstring>
#include <ctime>
#include <unordered_set>

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dormant_cupti/launch_apis.h"
#include "dormant_cupti/name_hash.h"

#include "common/procfs.h"
#include "common/text.h"
#include "common/within_deadline.h"
#include "profilers/gpu/gpu_attachment.h"
#include "profilers/gpu/gpu_probes.h"
#include "profilers/gpu/nccl_rank.h"
#include "profilers/system/demangle.h"
#include "profilers/system/process_memory.h"
#include "profilers/system/processes.h"

namespace dormant::profilers::gpu {
namespace {

constexpr std::chrono::milliseconds kReadEvery{100};
constexpr char kKeySeparator = '\x1f';  // between a weighted stack's container, comm and frames
constexpr const char* kNameNotRead = "kernel name not read";
constexpr const char* kPastBoundFrame = "[GPU work past the bounds on records: its time alone]";

const char* copy_direction(uint32_t copy_kind) {
  switch (copy_kind) {
    case 1:
      return "HtoD";
    case 2:
      return "DtoH";
    case 3:
      return "HtoA";
    case 4:
      return "AtoH";
    case 5:
      return "AtoA";
    case 6:
      return "AtoD";
    case 7:
      return "DtoA";
    case 8:
      return "DtoD";
    case 9:
      return "HtoH";
    case 10:
      return "PtoP";
    default:
      return "unknown";
  }
}

// A kernel's name is cut past `name_bytes`, ending in the hash of the name as it came.
std::string gpu_frame(const dormant_cupti_activity& activity, const char* name, size_t name_bytes) {
  switch (activity.kind) {
    case DORMANT_CUPTI_KERNEL:
      return std::string("[GPU] ") +
             (name[0] != 0 ? cupti::cut_name(system::demangle(name), name, name_bytes)
                           : "unnamed kernel");
    case DORMANT_CUPTI_MEMCPY:
      return std::string("[GPU] memcpy ") + copy_direction(activity.copy_kind);
    case DORMANT_CUPTI_MEMSET:
      return "[GPU] memset";
    default:
      return "[GPU] unknown work";
  }
}

// Whether a launch stack's frame is of CUDA's runtime linked into the program (nvcc's default):
// its internal namespace, or an API of the launch table (whose frame the stack ends with anyway).
bool in_static_runtime(std::string_view frame) {
  if (frame.starts_with("cudart::") || frame.starts_with("__cudart")) return true;
  std::string_view name = frame.substr(0, frame.find_first_of("(<"));
  return std::any_of(std::begin(cupti::kLaunchApis), std::end(cupti::kLaunchApis),
                     [name](const cupti::LaunchApi& api) { return api.name == name; });
}

// CUPTI's clock on Linux.
uint64_t cupti_clock_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return uint64_t(now.tv_sec) * 1'000'000'000 + uint64_t(now.tv_nsec);
}

std::string place_frame(uint32_t stream, uint32_t graph) {
  return graph != 0 ? "[graph " + std::to_string(graph) + "]"
                    : "[stream " + std::to_string(stream) + "]";
}

}  // namespace

GpuProfiler::GpuProfiler(GpuProfilerOptions options)
    : options_(std::move(options)),
      container_names_(options_.docker_root),
      wake_reader_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      join_(options_.join),
      weights_(options_.target.frequency_hz) {}

GpuProfiler::~GpuProfiler() { stop(); }

void GpuProfiler::attach_in(int pid, std::string& failures) {
  bool any = attach_files(*probes_, files_, pid, failures);
  attached_pids_.insert(pid);  // tried once, whatever came of it
  std::lock_guard lock(mutex_);
  if (any) ++counts_.processes_attached;
}

// The processes the named ones started since the last look, each attached to in turn.
void GpuProfiler::attach_followed() {
  std::string failures;
  for (int pid : probes_->filtered_pids()) {
    if (attached_pids_.contains(pid)) continue;
    if (attached_pids_.size() >= kMaxAttachedProcesses) {
      std::lock_guard lock(mutex_);
      if (counts_.processes_not_attached++ == 0) {
        spdlog::warn("gpu: more than {} processes to attach to: the rest are not",
                     kMaxAttachedProcesses);
      }
      attached_pids_.insert(pid);  // counted once
      continue;
    }
    attach_in(pid, failures);
    spdlog::info("gpu: following process {}, started by a profiled one", pid);
  }
  if (!failures.empty()) spdlog::warn("gpu: {}", failures);
}

Result<void> GpuProfiler::start() {
  if (!wake_reader_) return Error::from_errno("eventfd for the GPU reader");
  session_start_ns_ = last_snapshot_ns_ = cupti_clock_ns();  // before recording can begin
  auto attached = within_deadline<GpuAttachment>(
      options_.gpu.start_deadline, "attaching to " DORMANT_CUPTI_LIBRARY_NAME,
      [libraries = std::vector<std::filesystem::path>(options_.gpu.libraries.begin(),
                                                      options_.gpu.libraries.end()),
       pids = options_.target.pids, rate = options_.gpu.records_per_second] {
        return attach_gpu_probes(libraries, pids, rate);
      });
  if (!attached) return attached.error();
  files_ = std::move(attached->files);
  probes_ = std::move(attached->probes);
  attached_pids_.insert(attached->pids_tried.begin(), attached->pids_tried.end());
  counts_.processes_attached = attached->processes_attached;
  counts_.library_files_refused = attached->files_refused;
  if (!attached->failures.empty()) spdlog::warn("gpu: {}", attached->failures);
  symbolizer_ = std::make_unique<system::Symbolizer>(std::nullopt);
  stopping_ = false;
  reader_ = std::thread([this] { read_events(); });
  spdlog::info("gpu: attached to {} {} file(s){}", files_.size(), DORMANT_CUPTI_LIBRARY_NAME,
               options_.target.pids.empty() ? ""
                                            : " in " + std::to_string(options_.target.pids.size()) +
                                                  " process(es) and those they start");
  return ok();
}

void GpuProfiler::read_events() {
  pthread_setname_np(pthread_self(), "gpu-events");
  while (!stopping_) {
    auto waited = probes_->wait(kReadEvery, wake_reader_.get());
    if (!waited) {
      spdlog::error("gpu: {}; events are read at snapshots only", waited.error().message());
      return;
    }
    take_events();
    if (!options_.target.pids.empty()) attach_followed();
  }
}

void GpuProfiler::take_events() {
  auto now = JoinClock::now();
  uint64_t latest_ns = cupti_clock_ns() + kClockSlackNs;
  std::lock_guard lock(mutex_);  // once for all the events there are
  auto consumed = probes_->consume([this, now, &latest_ns](const GpuEvent& event) {
    try {  // under libbpf's C frames: nothing may unwind through them
      on_event(event, now, latest_ns);
    } catch (const std::exception& thrown) {
      spdlog::warn("gpu: an event was not taken: {}", thrown.what());
    }
  });
  if (!consumed) spdlog::warn("gpu: {}", consumed.error().message());
  join_.retire_graphs(now);
  fold_joined();
}

uint32_t GpuProfiler::intern_stack(int pid, const dormant_cupti_launch& launch) {
  const auto* frames = reinterpret_cast<const uint64_t*>(launch.frames);
  const auto* python = reinterpret_cast<const uint64_t*>(launch.python);
  std::string& key = key_;
  key.assign(reinterpret_cast<const char*>(&pid), sizeof(pid));
  key.append(reinterpret_cast<const char*>(&launch.depth), sizeof(launch.depth));
  key.append(reinterpret_cast<const char*>(frames), launch.depth * sizeof(uint64_t));
  key.append(reinterpret_cast<const char*>(python), launch.python_depth * sizeof(uint64_t));
  auto found = stack_ids_.find(key);
  if (found != stack_ids_.end()) return found->second;
  if (stacks_.size() >= kMaxStacks) {
    ++counts_.stacks_not_kept;
    return kStackNotKept;
  }
  auto id = static_cast<uint32_t>(stacks_.size());
  stacks_.push_back({pid, std::vector<uint64_t>(frames, frames + launch.depth),
                     std::vector<uint64_t>(python, python + launch.python_depth)});
  stack_ids_.emplace(key, id);
  name_python_frames(pid, stacks_.back().python);
  return id;
}

// Whether a process newly seen runs CPython, from the mappings the symbolizer read.
void GpuProfiler::find_python(int pid, const std::vector<system::Mapping>& mappings) {
  auto found = python_interpreters_.find(pid, mappings);
  if (!found) {
    spdlog::info("gpu: process {} runs {}", pid, found.error().message());
  } else if (*found) {
    python_images_[pid] = **found;
  }
}

// Names a new stack's Python frames now, while its process lives.
void GpuProfiler::name_python_frames(int pid, const std::vector<uint64_t>& python) {
  auto image = python_images_.find(pid);
  if (python.empty() || image == python_images_.end()) return;
  for (uint64_t code : python) {
    python_names_.remember(pid, image->second.offsets, image->second.code_type,
                           code & ~DORMANT_CUPTI_PYTHON_ENTRY);
  }
}

uint32_t GpuProfiler::intern_name(const dormant_cupti_activity& activity, const char* name) {
  std::string& raw = key_;  // the kind, then the name (or a memcpy's direction)
  raw.assign(1, static_cast<char>('0' + std::min<uint32_t>(activity.kind, 9)));
  if (activity.kind == DORMANT_CUPTI_MEMCPY) {
    raw += static_cast<char>(std::min<uint32_t>(activity.copy_kind, 255));
  } else {
    raw += name;
  }
  auto found = name_ids_.find(raw);
  if (found != name_ids_.end()) return found->second;
  // names_[0] stands for every name beyond
  if (names_.size() >= kMaxNames || names_bytes_ >= kMaxNameBytes) return 0;
  if (names_.empty()) names_.push_back("[GPU] more kernel names than kept");
  auto id = static_cast<uint32_t>(names_.size());
  names_.push_back(gpu_frame(activity, name, options_.gpu.kernel_name_bytes));
  names_bytes_ += names_.back().size() + raw.size();
  name_ids_.emplace(raw, id);
  return id;
}

uint32_t GpuProfiler::work_name(int pid, const dormant_cupti_activity& activity, const char* name) {
  if (activity.kind != DORMANT_CUPTI_KERNEL || activity.name == 0) {
    return intern_name(activity, name);
  }
  std::pair key{pid, activity.name};
  if (name[0] != 0) {
    uint32_t id = intern_name(activity, name);
    bool sent_once =
        ::strnlen(name, DORMANT_GPU_SHORT_NAME_BYTES + 1) > DORMANT_GPU_SHORT_NAME_BYTES;
    if (sent_once && kernel_names_.size() < kMaxNameAddresses) kernel_names_[key] = id;
    return id;
  }
  auto found = kernel_names_.find(key);
  if (found != kernel_names_.end()) return found->second;
  // The record that brought the name was lost (or it was not kept): the name is read from the
  // program, a bounded number of times a snapshot.
  std::optional<std::string> read;
  if (name_reads_left_ > 0) {
    --name_reads_left_;
    read = system::read_process_string(pid, activity.name, DORMANT_CUPTI_MAX_NAME_BYTES);
  }
  if (!read || read->empty()) return intern_name(activity, kNameNotRead);
  uint32_t id = intern_name(activity, read->c_str());
  if (kernel_names_.size() < kMaxNameAddresses) kernel_names_[key] = id;
  return id;
}

uint32_t GpuProfiler::intern_place(const dormant_cupti_activity& activity) {
  Place place{activity.device_id, activity.stream_id, activity.graph_id};
  auto found = place_ids_.find(place);
  if (found != place_ids_.end()) return found->second;
  if (places_.empty()) places_.push_back({UINT32_MAX, UINT32_MAX, 0});
  if (places_.size() > kMaxPlaces) return 0;
  auto id = static_cast<uint32_t>(places_.size());
  places_.push_back(place);
  place_ids_.emplace(place, id);
  return id;
}

void GpuProfiler::on_event(const GpuEvent& event, JoinClock::time_point now, uint64_t& latest_ns) {
  if (event.launch) {
    const dormant_cupti_launch& launch = *event.launch;
    auto [known, added] = known_pids_.try_emplace(event.pid);
    if (added) {  // its maps, while it runs
      auto stat = procfs::process_stat(event.pid);
      known->second = symbolizer_->remember(event.pid, 0,
                                            stat && !stat->comm.empty() ? stat->comm : "[unknown]");
      std::vector<system::Mapping> mappings = symbolizer_->mappings(event.pid, 0);
      find_python(event.pid, mappings);
      if (auto rank = nccl_rank(event.pid, mappings)) ranks_[event.pid] = *rank;
    }
    if (!known->second) counts_.launches_without_mappings += 1;
    if (launch.python_depth > 0 && python_images_.contains(event.pid)) {
      counts_.launches_with_python += 1;
    }
    Launch joined;
    joined.pid = event.pid;
    joined.tid = static_cast<int>(launch.tid);
    joined.correlation_id = launch.correlation_id;
    joined.nested_correlation_id = launch.nested_correlation_id;
    joined.cbid = launch.cbid;
    if (launch.depth == DORMANT_CUPTI_STACK_NOT_TAKEN) {
      joined.stack = kStackNotTaken;
      ++counts_.launch_stacks_not_taken;
    } else {
      joined.stack = intern_stack(event.pid, launch);
    }
    const cupti::LaunchApi* api = cupti::find_launch_api(joined.cbid);
    joined.graph = api != nullptr && cupti::submits_many(*api);
    join_.add_launch(joined, now);
  } else if (event.activity) {
    const dormant_cupti_activity& activity = *event.activity;
    // The events of one call keep coming while it reads them: the clock is read again for one
    // that seems to come from the future.
    if (activity.start_ns >= latest_ns) latest_ns = cupti_clock_ns() + kClockSlackNs;
    if (activity.end_ns <= session_start_ns_ || activity.start_ns >= latest_ns) {
      ++counts_.records_outside_session;
      return;
    }
    uint64_t start = std::max<uint64_t>(activity.start_ns, session_start_ns_);
    uint64_t end = std::min<uint64_t>(std::max<uint64_t>(activity.end_ns, start), latest_ns);
    device_times_.add(activity.device_id, activity.kind == DORMANT_CUPTI_KERNEL, start, end);
    join_.add_work({event.pid, activity.correlation_id, work_name(event.pid, activity, event.name),
                    intern_place(activity), end - start},
                   now);
  } else {
    counts_.dropped_records += event.dropped;
  }
}

std::vector<std::string> GpuProfiler::launch_frames(const JoinedWork& joined) {
  std::vector<std::string> frames;
  if (!joined.launched) {
    frames.push_back("[GPU work whose launch was not seen]");
  } else if (joined.stack == kStackNotKept) {
    frames.push_back("[launch stack not kept]");
  } else if (joined.stack == kStackNotTaken) {
    frames.push_back("[launch stack not taken]");
  } else {
    const LaunchStack& stack = stacks_[joined.stack];
    symbolizer_->append_user_frames(stack.pid, 0, stack.frames, frames);
    while (!frames.empty() && in_static_runtime(frames.back())) frames.pop_back();
    auto python = python_images_.find(stack.pid);
    if (!stack.python.empty() && python != python_images_.end()) {
      std::vector<uint64_t> pairs;  // as the sampler's Python stacks are: code, instruction
      for (uint64_t code : stack.python) pairs.insert(pairs.end(), {code, 0});
      auto groups =
          python_names_.groups(stack.pid, python->second.offsets, python->second.code_type, pairs);
      system::merge_python_frames(frames, 0, frames.size(), std::move(groups));
    }
    const cupti::LaunchApi* api = cupti::find_launch_api(joined.cbid);
    frames.push_back(api ? std::string(api->name) : "CUDA API " + std::to_string(joined.cbid));
  }
  return frames;
}

std::string GpuProfiler::work_key(const std::pair<std::string, std::string>& process,
                                  const std::string& launch, const GpuWork& work) const {
  const Place& place = places_.at(work.where);
  bool known = work.where != 0;
  auto rank = ranks_.find(work.pid);
  return process.first + kKeySeparator + process.second + kKeySeparator +
         (known ? "[GPU " + std::to_string(place.device) + "]" : "[GPU ?]") +
         (rank != ranks_.end() ? kKeySeparator + ("[rank " + std::to_string(rank->second) + "]")
                               : "") +
         launch + kKeySeparator + (known ? place_frame(place.stream, place.graph) : "[stream ?]") +
         kKeySeparator + names_.at(work.what);
}

uint64_t GpuProfiler::process_device(const GpuWork& work) const {
  uint32_t device = work.where == 0 ? UINT32_MAX : places_.at(work.where).device;
  return (uint64_t(uint32_t(work.pid)) << 32) | device;
}

std::unordered_map<uint64_t, double> GpuProfiler::shares_within_wall_time(
    const std::unordered_map<uint64_t, uint64_t>& sums) {
  uint64_t allowed = last_snapshot_ns_ - session_start_ns_ + kWallSlackNs;
  std::unordered_map<uint64_t, double> shares;
  for (const auto& [key, sum] : sums) {
    uint64_t& handed = handed_ns_[key];
    uint64_t kept = std::min(sum, allowed > handed ? allowed - handed : 0);
    handed += kept;
    counts_.gpu_ns_past_wall += sum - kept;
    shares[key] = sum == 0 ? 1.0 : static_cast<double>(kept) / static_cast<double>(sum);
  }
  return shares;
}

void GpuProfiler::fold_joined() {
  for (const JoinedWork& joined : join_.take_joined()) totals_.add(joined);
  flood_ns_ += join_.take_ns_past_bound();
}

Result<profile::StackTable> GpuProfiler::snapshot() {
  if (!probes_) return Error(ErrorKind::kUnavailable, "gpu is not running");
  take_events();
  profile::StackTable table;
  std::lock_guard lock(mutex_);
  std::unordered_map<int, bool> gone;  // pending entries are many, their processes few
  join_.expire(JoinClock::now(), [&gone](int pid) {
    auto [known, added] = gone.try_emplace(pid);
    if (added) known->second = !system::is_live_process(pid);
    return known->second;
  });
  if (last_snapshot_) join_.finish();
  last_snapshot_ns_ = cupti_clock_ns();
  fold_joined();
  std::vector<JoinedWork> all_joined = totals_.take();
  auto past_bound = totals_.take_past_bound();  // by process
  for (const GpuProbes::PastRate& past : probes_->take_past_rate()) {
    counts_.records_past_rate += past.records;
    past_bound.emplace_back(past.pid, past.ns);
  }
  uint64_t flood_ns = std::exchange(flood_ns_, 0);
  std::unordered_map<uint64_t, uint64_t> sums;  // by process and device, for their shares
  for (const JoinedWork& one : all_joined) sums[process_device(one.work)] += one.work.duration_ns;
  for (const auto& [pid, ns] : past_bound) sums[process_device({pid, 0, 0, 0, 0})] += ns;
  if (flood_ns > 0) sums[kFloodKey] += flood_ns;
  auto shares = shares_within_wall_time(sums);
  std::unordered_map<int, std::pair<std::string, std::string>> processes;  // container, comm
  auto process_of = [&](int pid) -> const std::pair<std::string, std::string>& {
    auto [process, added] = processes.try_emplace(pid);
    if (added) process->second = {container_names_.of_pid(pid), symbolizer_->comm(pid, 0)};
    return process->second;
  };
  // Many pieces of work share a launch stack: each is named once a snapshot, by stack and API.
  std::unordered_map<uint64_t, std::string> launches;
  bool any_untaken = std::any_of(all_joined.begin(), all_joined.end(), [](const JoinedWork& one) {
    return one.launched && one.stack == kStackNotTaken;
  });
  for (const JoinedWork& joined : all_joined) {
    int pid = joined.work.pid;
    uint64_t launch = joined.launched
                          ? (uint64_t{joined.stack} << 32) | static_cast<uint32_t>(joined.cbid)
                          : UINT64_MAX;
    auto [named, first] = launches.try_emplace(launch);
    if (first) {
      for (const std::string& frame : launch_frames(joined)) named->second += kKeySeparator + frame;
    }
    auto ns = static_cast<uint64_t>(static_cast<double>(joined.work.duration_ns) *
                                    shares[process_device(joined.work)]);
    std::string key = work_key(process_of(pid), named->second, joined.work);
    counts_.gpu_ns += ns;
    WorkGroup group{pid, joined.tid, joined.work.what, joined.work.where};
    if (joined.launched && joined.stack == kStackNotTaken) {
      untaken_stacks_.untaken(group, std::move(key), ns);
      continue;
    }
    if (any_untaken && joined.launched) untaken_stacks_.taken(group, key, ns);
    weights_.add(key, ns);
  }
  for (const auto& [key, ns] : untaken_stacks_.share_out()) weights_.add(key, ns);
  // Floods: their time as one frame, under the process where it is known.
  for (const auto& [pid, past_ns] : past_bound) {
    auto ns = static_cast<uint64_t>(static_cast<double>(past_ns) *
                                    shares[process_device({pid, 0, 0, 0, 0})]);
    const auto& [container, comm] = process_of(pid);
    weights_.add(container + kKeySeparator + comm + kKeySeparator + kPastBoundFrame, ns);
    counts_.gpu_ns += ns;
  }
  if (auto ns = static_cast<uint64_t>(static_cast<double>(flood_ns) * shares[kFloodKey]); ns > 0) {
    weights_.add(std::string(1, kKeySeparator) + "[unknown]" + kKeySeparator + kPastBoundFrame, ns);
    counts_.gpu_ns += ns;
  }
  for (const auto& [key, samples] : weights_.take()) {
    if (samples == 0) continue;
    std::vector<std::string_view> parts = split(key, kKeySeparator);
    table.add(parts[0], parts[1], std::span(parts).subspan(2), samples);
  }
  GpuLosses lost = probes_->take_losses();
  counts_.lost.launches_lost += lost.launches_lost;
  counts_.lost.activities_lost += lost.activities_lost;
  counts_.lost.unreadable += lost.unreadable;
  counts_.pending_launches = join_.pending_launches();
  counts_.pending_work = join_.pending_work();
  if (lost.launches_lost + lost.activities_lost > 0) {
    spdlog::warn("gpu: the ring buffer was full: {} launches and {} GPU records lost",
                 lost.launches_lost, lost.activities_lost);
  }
  std::vector<pid_t> exited = symbolizer_->forget_exited();
  probes_->forget_processes(exited);
  for (int pid : exited) {
    known_pids_.erase(pid);
    python_images_.erase(pid);
    ranks_.erase(pid);
  }
  std::unordered_set<int> ended(exited.begin(), exited.end());
  std::erase_if(kernel_names_,
                [&ended](const auto& entry) { return ended.contains(entry.first.first); });
  name_reads_left_ = kMaxNameReads;
  std::erase_if(handed_ns_,
                [&ended](const auto& entry) { return ended.contains(int(entry.first >> 32)); });
  python_names_.end_snapshot(exited);
  if (join_.pending_launches() == 0) {  // no launch refers to a stack: start the table again
    stacks_.clear();
    stack_ids_.clear();
  }
  return table;
}

void GpuProfiler::before_last_snapshot() {
  std::lock_guard lock(mutex_);
  last_snapshot_ = true;
}

GpuCounts GpuProfiler::counts() const {
  std::lock_guard lock(mutex_);
  GpuCounts counts = counts_;
  counts.join = join_.counts();
  counts.devices_past_bound = device_times_.devices_past_bound();
  counts.records_past_bound = totals_.records_past_bound();
  return counts;
}

nlohmann::json GpuProfiler::header_facts() const {
  GpuCounts counts = this->counts();
  return {{"launches", counts.join.launches},
          {"gpu_records", counts.join.work},
          {"joined", counts.join.joined},
          {"unmatched_launches", counts.join.unmatched_launches},
          {"unmatched_gpu_records", counts.join.unmatched_work},
          {"over_capacity", counts.join.over_capacity},
          {"graph_launches_retired", counts.join.graphs_retired},
          {"gpu_records_past_bound", counts.join.past_bound + counts.records_past_bound},
          {"gpu_records_past_rate", counts.records_past_rate},
          {"pending_launches", counts.pending_launches},
          {"pending_gpu_records", counts.pending_work},
          {"gpu_ns", counts.gpu_ns},
          {"dropped_records", counts.dropped_records},
          {"lost_launches", counts.lost.launches_lost},
          {"lost_gpu_records", counts.lost.activities_lost + counts.lost.unreadable},
          {"launch_stacks_not_kept", counts.stacks_not_kept},
          {"launch_stacks_not_taken", counts.launch_stacks_not_taken},
          {"launches_without_mappings", counts.launches_without_mappings},
          {"launches_with_python", counts.launches_with_python},
          {"processes_attached", counts.processes_attached},
          {"processes_not_attached", counts.processes_not_attached},
          {"library_files_refused", counts.library_files_refused},
          {"gpu_records_outside_session", counts.records_outside_session},
          {"gpu_ns_past_wall_time", counts.gpu_ns_past_wall},
          {"gpu_devices", device_facts()},
          {"gpu_devices_past_bound", counts.devices_past_bound}};
}

// Each device's time in the session so far: idle is its wall time less its busy time.
nlohmann::json GpuProfiler::device_facts() const {
  std::lock_guard lock(mutex_);
  uint64_t wall = last_snapshot_ns_ - session_start_ns_;
  auto devices = nlohmann::json::object();
  for (const auto& [id, time] : device_times_.totals()) {
    uint64_t busy = std::min(time.busy_ns, wall);
    devices[std::to_string(id)] = {{"kernel_ns", time.kernel_ns},
                                   {"copy_ns", time.copy_ns},
                                   {"busy_ns", busy},
                                   {"idle_ns", wall - busy},
                                   {"wall_ns", wall}};
  }
  return devices;
}

void GpuProfiler::abort() {
  stopping_ = true;
  uint64_t one = 1;
  (void)::write(wake_reader_.get(), &one, sizeof(one));
}

void GpuProfiler::stop() {
  abort();
  if (reader_.joinable()) reader_.join();
  probes_.reset();
  files_.clear();
  symbolizer_.reset();
}

}  // namespace dormant::profilers::gpu
