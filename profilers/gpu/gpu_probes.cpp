#include "profilers/gpu/gpu_probes.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "gpu_probes.skel.h"

#include "bpf/followed_pids.h"
#include "profilers/ebpf/followed_pids.h"
#include "profilers/ebpf/libbpf_log.h"
#include "profilers/gpu/launch_batches.h"

namespace dormant::profilers::gpu {

int GpuProbes::on_ring_event(void* context, void* data, size_t size) {
  static_cast<GpuProbes*>(context)->hand_out(data, size);
  return 0;
}

// Events come cut after what they use (bpf/gpu_probes.h): each is copied whole, zeros after its
// end, and a batch of launches is read launch by launch as far as it holds together.
void GpuProbes::hand_out(const void* data, size_t size) {
  if (on_event_ == nullptr || size < 2 * sizeof(uint32_t)) return;
  uint32_t header[2];  // type, tgid
  std::memcpy(header, data, sizeof(header));
  GpuEvent event;
  event.pid = static_cast<int>(header[1]);
  if (header[0] == DORMANT_GPU_LAUNCH) {
    static thread_local dormant_gpu_launch_event batch;
    constexpr size_t kBatchHeader = offsetof(dormant_gpu_launch_event, launches.data);
    if (size < kBatchHeader) return;
    batch.launches.count = 0;
    std::memcpy(&batch, data, std::min(size, sizeof(batch)));
    size_t bytes =
        std::min<size_t>({batch.launches.bytes, size - kBatchHeader, sizeof(batch.launches.data)});
    bool whole = for_each_launch(batch.launches.data, bytes, batch.launches.count,
                                 [&](const dormant_cupti_launch& launch) {
                                   event.launch = &launch;
                                   (*on_event_)(event);
                                 });
    if (!whole) ++malformed_;
  } else if (header[0] == DORMANT_GPU_ACTIVITY) {
    static thread_local dormant_gpu_activity_event activity;
    if (size < offsetof(dormant_gpu_activity_event, name)) return;
    activity = {};
    std::memcpy(&activity, data, std::min(size, sizeof(activity)));
    activity.name[DORMANT_GPU_NAME_LEN - 1] = 0;
    event.activity = &activity.activity;
    event.name = activity.name;
    (*on_event_)(event);
  } else if (header[0] == DORMANT_GPU_DROPPED) {
    dormant_gpu_dropped_event dropped;
    if (size < sizeof(dropped)) return;
    std::memcpy(&dropped, data, sizeof(dropped));
    event.dropped = dropped.dropped;
    (*on_event_)(event);
  }
}

void GpuProbes::SkeletonDeleter::operator()(::gpu_probes* skeleton) const {
  gpu_probes::destroy(skeleton);
}
void GpuProbes::LinkDeleter::operator()(::bpf_link* link) const { bpf_link__destroy(link); }
void GpuProbes::RingDeleter::operator()(::ring_buffer* ring) const { ring_buffer__free(ring); }

Result<std::unique_ptr<GpuProbes>> GpuProbes::make(const std::vector<int>& pids,
                                                   uint64_t records_per_second) {
  std::unique_ptr<GpuProbes> probes(new GpuProbes());
  auto opened = ebpf::with_libbpf_log("open the GPU probes", [&] {
    probes->skeleton_.reset(gpu_probes::open());
    return probes->skeleton_ ? 0 : -errno;
  });
  if (!opened) return opened.error();
  ::gpu_probes& skeleton = *probes->skeleton_;
  // Following children reads task_struct, by the kernel's BTF; the probes themselves need none.
  std::error_code no_btf;
  bool follow = !pids.empty() && std::filesystem::exists("/sys/kernel/btf/vmlinux", no_btf);
  if (!pids.empty() && !follow) {
    spdlog::warn("gpu: the kernel has no BTF: processes the profiled ones start are not followed");
  }
  skeleton.rodata->filter_pids = pids.empty() ? 0 : 1;
  skeleton.rodata->records_per_second = records_per_second;
  ebpf::PidFilter filter{skeleton.maps.target_pids, skeleton.progs.follow_child,
                         skeleton.progs.forget_child};
  ebpf::size_pid_filter(filter, pids.size(), follow);
  auto loaded =
      ebpf::with_libbpf_log("load the GPU probes", [&] { return gpu_probes::load(&skeleton); });
  if (!loaded) return loaded.error();
  auto followed = ebpf::fill_pid_filter(filter, pids, follow, "the GPU probes'");
  if (!followed) return followed.error();
  for (::bpf_link* link : *followed) probes->follow_links_.emplace_back(link);
  probes->ring_.reset(
      ring_buffer__new(bpf_map__fd(skeleton.maps.events), on_ring_event, probes.get(), nullptr));
  if (!probes->ring_) return Error::from_errno("reading the GPU probes' ring buffer");
  return probes;
}

GpuProbes::~GpuProbes() {
  ring_.reset();
  follow_links_.clear();
  links_.clear();
  skeleton_.reset();
}

Result<void> GpuProbes::attach(const LibraryFile& library, int pid) {
  std::string path = library.path();
  std::string what = "attach to " + library.name;
  if (pid >= 0) what += " in process " + std::to_string(pid);
  for (::bpf_program* program : {skeleton_->progs.on_launch, skeleton_->progs.on_activity}) {
    const char* probe = program == skeleton_->progs.on_launch ? DORMANT_CUPTI_LAUNCH_PROBE
                                                              : DORMANT_CUPTI_ACTIVITY_PROBE;
    ::bpf_link* link = nullptr;
    auto attached = ebpf::with_libbpf_log(what, [&] {
      link = bpf_program__attach_usdt(program, pid, path.c_str(), "dormant_cupti", probe, nullptr);
      return link ? 0 : -errno;
    });
    if (!attached) return attached.error();
    links_.emplace_back(link);
  }
  return ok();
}

std::vector<int> GpuProbes::filtered_pids() const {
  std::vector<int> pids;
  int map = bpf_map__fd(skeleton_->maps.target_pids);
  uint32_t key = 0;
  const uint32_t* previous = nullptr;
  while (bpf_map_get_next_key(map, previous, &key) == 0 &&
         pids.size() < DORMANT_MAX_FOLLOWED_PIDS * 2) {
    pids.push_back(static_cast<int>(key));
    previous = &key;
  }
  return pids;
}

Result<void> GpuProbes::wait(std::chrono::milliseconds timeout, int wake_fd) {
  pollfd waits[] = {{ring_buffer__epoll_fd(ring_.get()), POLLIN, 0}, {wake_fd, POLLIN, 0}};
  int ready = ::poll(waits, 2, static_cast<int>(timeout.count()));
  if (ready < 0 && errno != EINTR) return Error::from_errno("waiting for the GPU probes' events");
  if (waits[1].revents != 0) {
    uint64_t wakes = 0;
    (void)::read(wake_fd, &wakes, sizeof(wakes));
  }
  return ok();
}

Result<int> GpuProbes::consume(const std::function<void(const GpuEvent&)>& on_event) {
  std::lock_guard lock(consume_mutex_);
  on_event_ = &on_event;
  int consumed = ring_buffer__consume(ring_.get());
  on_event_ = nullptr;
  if (consumed < 0) return Error::from_errno("reading the GPU probes' events", -consumed);
  return consumed;
}

GpuLosses GpuProbes::take_losses() {
  int possible = libbpf_num_possible_cpus();
  std::vector<dormant_gpu_losses> per_cpu(static_cast<size_t>(std::max(possible, 1)));
  uint32_t zero = 0;
  GpuLosses total;
  if (bpf_map_lookup_elem(bpf_map__fd(skeleton_->maps.losses), &zero, per_cpu.data()) != 0) {
    return total;
  }
  for (const dormant_gpu_losses& cpu : per_cpu) {
    total.launches_lost += cpu.launches_lost;
    total.activities_lost += cpu.activities_lost;
    total.unreadable += cpu.unreadable;
  }
  total.unreadable += malformed_;
  GpuLosses since{total.launches_lost - reported_.launches_lost,
                  total.activities_lost - reported_.activities_lost,
                  total.unreadable - reported_.unreadable};
  reported_ = total;
  return since;
}

void GpuProbes::forget_processes(const std::vector<int>& exited) {
  if (exited.empty()) return;
  int rates = bpf_map__fd(skeleton_->maps.record_rates);
  for (int pid : exited) {
    auto key = static_cast<uint32_t>(pid);
    (void)bpf_map_delete_elem(rates, &key);
    past_rate_reported_.erase(pid);
  }
  int names = bpf_map__fd(skeleton_->maps.names_sent);
  std::vector<name_key> gone;
  name_key key{};
  const name_key* previous = nullptr;
  for (size_t walked = 0;
       walked < DORMANT_GPU_NAMES_SENT && bpf_map_get_next_key(names, previous, &key) == 0;
       ++walked) {
    if (std::find(exited.begin(), exited.end(), int(key.tgid)) != exited.end()) {
      gone.push_back(key);
    }
    previous = &key;
  }
  for (const name_key& name : gone) (void)bpf_map_delete_elem(names, &name);
}

std::vector<GpuProbes::PastRate> GpuProbes::take_past_rate() {
  std::vector<PastRate> since;
  std::unordered_map<int, PastRate> now;
  int map = bpf_map__fd(skeleton_->maps.record_rates);
  uint32_t key = 0;
  const uint32_t* previous = nullptr;
  while (bpf_map_get_next_key(map, previous, &key) == 0 &&
         now.size() < DORMANT_GPU_RATED_PROCESSES) {
    previous = &key;
    dormant_gpu_record_rate rate{};
    if (bpf_map_lookup_elem(map, &key, &rate) != 0 || rate.past_records == 0) continue;
    int pid = static_cast<int>(key);
    if (now.contains(pid)) continue;  // the walk began again: an entry was deleted meanwhile
    PastRate total{pid, rate.past_records, rate.past_ns};
    auto reported = past_rate_reported_.find(pid);
    // The bucket may be new since (an exited process's, forgotten, and its pid reused).
    PastRate before =
        reported != past_rate_reported_.end() && reported->second.records <= total.records
            ? reported->second
            : PastRate{pid, 0, 0};
    if (total.records > before.records) {
      since.push_back({pid, total.records - before.records, total.ns - before.ns});
    }
    now.emplace(pid, total);
  }
  past_rate_reported_ = std::move(now);
  return since;
}

}  // namespace dormant::profilers::gpu
