#include "profilers/ebpf/cpu_sampler.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unordered_map>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_sampler.skel.h"

#include "bpf/cpu_sampler.h"
#include "bpf/python.h"
#include "bpf/runtime_frames.h"
#include "bpf/unwind.h"
#include "common/unique_fd.h"
#include "profilers/ebpf/followed_pids.h"
#include "profilers/ebpf/kernel_probes.h"
#include "profilers/ebpf/libbpf_log.h"

namespace dormant::profilers::ebpf {

static_assert(CpuSampler::kMaxStackDepth == DORMANT_MAX_STACK_DEPTH);

namespace {

constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

// The effective capability set of this process, from /proc/self/status.
uint64_t effective_capabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with("CapEff:")) continue;
    std::string_view digits(line);
    digits.remove_prefix(std::min(digits.find_first_not_of(" \t", 7), digits.size()));
    uint64_t capabilities = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), capabilities, 16);
    return capabilities;
  }
  return 0;
}

bool has(uint64_t capabilities, int capability) { return (capabilities >> capability) & 1; }

Result<UniqueFd> open_sampling_event(int cpu, int frequency_hz, bool cycles) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
  attr.config = cycles ? uint64_t{PERF_COUNT_HW_CPU_CYCLES} : uint64_t{PERF_COUNT_SW_CPU_CLOCK};
  attr.freq = 1;
  attr.sample_freq = static_cast<uint64_t>(frequency_hz);
  int fd =
      static_cast<int>(::syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) return Error::from_errno("perf_event_open(cpu " + std::to_string(cpu) + ")");
  return UniqueFd(fd);
}

// Why user stacks cannot be walked by the unwind tables here; ok() when they can.
Result<void> can_walk_by_tables(const CpuSamplerOptions& options, bool unallocated_maps) {
  if (!options.walk_by_tables)
    return Error(ErrorKind::kUnavailable, "asked for (--ebpf-unwind fp)");
#if !defined(__x86_64__)
  return Error(ErrorKind::kUnavailable, "the unwind tables know x86_64 only");
#else
  if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, nullptr) != 1) {
    return Error(ErrorKind::kUnavailable, "the kernel has no bpf_loop (Linux 5.17+)");
  }
  if (!unallocated_maps) {
    return Error(ErrorKind::kUnavailable,
                 "the kernel takes only preallocated maps in perf_event programs (before 6.1)");
  }
  return ok();
#endif
}

uint64_t random_seed() {
  std::random_device device;
  return (uint64_t{device()} << 32) | device();
}

int on_process_event(void* context, void* data, size_t size) {
  if (size < sizeof(dormant_process_event)) return 0;
  dormant_process_event event;
  std::memcpy(&event, data, sizeof(event));
  ProcessImage image;
  image.pid = static_cast<int>(event.tgid);
  image.generation = event.generation;
  image.user_ip = event.user_ip;
  image.comm.assign(event.comm, strnlen(event.comm, sizeof(event.comm)));
  const SamplerEvents* events = *static_cast<const SamplerEvents**>(context);
  if (events && events->on_image) events->on_image(image);
  return 0;
}

int on_python_code(void* context, void* data, size_t size) {
  if (size < sizeof(dormant_python_code)) return 0;
  dormant_python_code event;
  std::memcpy(&event, data, sizeof(event));
  const SamplerEvents* events = *static_cast<const SamplerEvents**>(context);
  if (events && events->on_python_code) {
    events->on_python_code({static_cast<int>(event.tgid), event.generation, event.code});
  }
  return 0;
}

int on_runtime_frame(void* context, void* data, size_t size) {
  if (size < sizeof(dormant_runtime_frame)) return 0;
  dormant_runtime_frame event;
  std::memcpy(&event, data, sizeof(event));
  const SamplerEvents* events = *static_cast<const SamplerEvents**>(context);
  if (events && events->on_runtime_frame) {
    events->on_runtime_frame(
        {static_cast<int>(event.tgid), event.generation, event.marked, event.word});
  }
  return 0;
}

// Each CPU's value of a one-slot per-CPU array; none when it cannot be read.
template <typename Value>
std::vector<Value> per_cpu_values(const ::bpf_map* map) {
  int possible = libbpf_num_possible_cpus();
  std::vector<Value> values(static_cast<size_t>(std::max(possible, 1)));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(map), &zero, values.data()) != 0) return {};
  return values;
}

// Takes every entry out of a hash map, `chunk` at a time (more when one bucket holds more), handing
// each to `take`. Returns 0 once the map has been read through, else the errno that stopped it;
// what was taken before is handed over either way.
template <typename Key, typename Value>
int take_in_batches(int fd, uint32_t chunk,
                    const std::function<void(const Key&, const Value&)>& take) {
  constexpr uint32_t kMaxChunk = 1 << 20;
  std::vector<Key> keys(chunk);
  std::vector<Value> values(chunk);
  uint64_t batch[4] = {};  // the kernel's opaque position in the map (a bucket index)
  uint64_t next_batch[4] = {};
  for (bool first = true;;) {
    uint32_t count = chunk;
    LIBBPF_OPTS(bpf_map_batch_opts, options);
    int result = bpf_map_lookup_and_delete_batch(fd, first ? nullptr : batch, next_batch,
                                                 keys.data(), values.data(), &count, &options);
    int error = errno;
    for (uint32_t i = 0; i < count; ++i) take(keys[i], values[i]);
    if (result != 0 && error == ENOSPC && count == 0 && chunk < kMaxChunk) {
      chunk *= 2;  // the next bucket holds more than a chunk: read it again, whole
      keys.resize(chunk);
      values.resize(chunk);
      continue;
    }
    if (result != 0) return error == ENOENT ? 0 : error;
    std::memcpy(batch, next_batch, sizeof(batch));
    first = false;
  }
}

using Stacks = std::unordered_map<uint64_t, std::vector<uint64_t>>;

void add_stack(Stacks& stacks, uint64_t id, const dormant_stack& stack) {
  size_t depth = std::min<size_t>(stack.depth, DORMANT_MAX_STACK_DEPTH);
  stacks.try_emplace(id, stack.ips, stack.ips + depth);
}

// One set's two stack maps: a sample key's user stack id is in one, its kernel stack id in the
// other.
struct StackMaps {
  int user_fd;
  int kernel_fd;

  // Each of the key's stack ids with the map that holds it.
  std::array<std::pair<uint64_t, int>, 3> of(const dormant_sample_key& key) const {
    return {
        {{key.user_stack, user_fd}, {key.kernel_stack, kernel_fd}, {key.python_stack, user_fd}}};
  }
};

// Takes every stack out of an idle set's stack maps, those `keys` name and any other (a stack whose
// count found the counts map full), so that the maps start the set's next turn empty.
Stacks take_stacks(StackMaps maps, const std::vector<dormant_sample_key>& keys) {
  Stacks stacks;
  // Whatever error ends the batches, the stacks the keys name are taken one by one below.
  for (int fd : {maps.user_fd, maps.kernel_fd}) {
    (void)take_in_batches<uint64_t, dormant_stack>(
        fd, 256,
        [&](const uint64_t& id, const dormant_stack& stack) { add_stack(stacks, id, stack); });
  }
  for (const dormant_sample_key& key : keys) {
    for (auto [id, fd] : maps.of(key)) {
      if (id == DORMANT_STACK_NONE || id == DORMANT_STACK_LOST || stacks.contains(id)) continue;
      dormant_stack stack;
      if (bpf_map_lookup_elem(fd, &id, &stack) != 0) continue;
      (void)bpf_map_delete_elem(fd, &id);
      add_stack(stacks, id, stack);
    }
  }
  return stacks;
}

PidFilter pid_filter(::cpu_sampler& skeleton) {
  return {skeleton.maps.target_pids, skeleton.progs.follow_child, skeleton.progs.forget_child};
}

}  // namespace

void CpuSampler::SkeletonDeleter::operator()(::cpu_sampler* skeleton) const {
  cpu_sampler::destroy(skeleton);
}
void CpuSampler::LinkDeleter::operator()(::bpf_link* link) const { bpf_link__destroy(link); }
void CpuSampler::RingDeleter::operator()(::ring_buffer* ring) const { ring_buffer__free(ring); }

Result<CpuSampler::Skeleton> CpuSampler::load_skeleton(const CpuSamplerOptions& options,
                                                       bool allocate_as_filled, bool by_tables) {
  Skeleton skeleton;
  auto opened = with_libbpf_log("open the eBPF sampler", [&] {
    skeleton.reset(cpu_sampler::open());
    return skeleton ? 0 : -errno;
  });
  if (!opened) return opened.error();
  skeleton->rodata->stack_hash_seed = random_seed();
  skeleton->rodata->filter = !options.pids.empty()         ? DORMANT_FILTER_PIDS
                             : !options.cgroup_ids.empty() ? DORMANT_FILTER_CGROUPS
                                                           : DORMANT_FILTER_ALL;
  auto at_least_one = [](size_t n) { return static_cast<uint32_t>(std::max<size_t>(n, 1)); };
  ::bpf_map* stack_maps[] = {skeleton->maps.user_stacks_0, skeleton->maps.kernel_stacks_0,
                             skeleton->maps.user_stacks_1, skeleton->maps.kernel_stacks_1};
  ::bpf_map* count_maps[] = {skeleton->maps.counts_0, skeleton->maps.counts_1};
  for (::bpf_map* map : stack_maps) bpf_map__set_max_entries(map, options.max_stacks);
  for (::bpf_map* map : count_maps) bpf_map__set_max_entries(map, options.max_counted);
  bpf_map__set_max_entries(skeleton->maps.processes, options.max_processes);
  size_pid_filter(pid_filter(*skeleton), options.pids.size(), !options.pids.empty());
  bpf_map__set_max_entries(skeleton->maps.target_cgroups, at_least_one(options.cgroup_ids.size()));
  bpf_map__set_max_entries(skeleton->maps.unwind_processes,
                           by_tables ? options.max_unwind_processes : 1);
  bpf_map__set_max_entries(skeleton->maps.unwind_files, by_tables ? options.max_unwind_files : 1);
#if defined(__x86_64__)
  bpf_program__set_autoload(skeleton->progs.on_cpu_sample, !by_tables);
  bpf_program__set_autoload(skeleton->progs.on_cpu_sample_cfi, by_tables);
#endif
  if (allocate_as_filled) {
    auto allocate_as_filled = [](::bpf_map* map) {
      bpf_map__set_map_flags(map, bpf_map__map_flags(map) | BPF_F_NO_PREALLOC);
    };
    std::for_each(std::begin(stack_maps), std::end(stack_maps), allocate_as_filled);
    std::for_each(std::begin(count_maps), std::end(count_maps), allocate_as_filled);
    allocate_as_filled(skeleton->maps.processes);
  }
  auto loaded =
      with_libbpf_log("load the eBPF sampler", [&] { return cpu_sampler::load(skeleton.get()); });
  if (!loaded) return loaded.error();
  return skeleton;
}

Result<std::unique_ptr<CpuSampler>> CpuSampler::make(const CpuSamplerOptions& options) {
  uint64_t capabilities = effective_capabilities();
  if (!has(capabilities, kCapSysAdmin) &&
      !(has(capabilities, kCapBpf) && has(capabilities, kCapPerfmon))) {
    return Error(ErrorKind::kUnavailable,
                 "the eBPF sampler needs CAP_BPF and CAP_PERFMON (or root); this process has "
                 "neither CAP_SYS_ADMIN nor both of them");
  }
  std::error_code no_btf;
  if (!std::filesystem::exists("/sys/kernel/btf/vmlinux", no_btf)) {
    return Error(ErrorKind::kUnavailable,
                 "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing; it needs "
                 "CONFIG_DEBUG_INFO_BTF=y), which the eBPF sampler needs to load");
  }
  std::unique_ptr<CpuSampler> sampler(new CpuSampler());
  // Preallocated, the maps hold 40 MB of kernel memory from the start at their default sizes,
  // most of it for stacks a session never has.
  auto accepted = perf_event_programs_accept_unallocated_maps();
  if (!accepted) {
    spdlog::warn(
        "ebpf: cannot tell whether the verifier takes maps that allocate as they fill "
        "({}): the sampler's maps hold all their entries from the start",
        accepted.error().message());
  } else if (!*accepted) {
    spdlog::info(
        "ebpf: the verifier takes only preallocated hash maps in perf_event programs, as "
        "before 6.1: the sampler's maps hold all their entries from the start");
  }
  auto tables = can_walk_by_tables(options, accepted.value_or(false));
  sampler->walks_by_tables_ = tables.ok();
  if (!tables) sampler->why_frame_pointers_ = tables.error().message();
  auto loaded = load_skeleton(options, accepted.value_or(false), sampler->walks_by_tables_);
  if (!loaded) return loaded.error();
  sampler->skeleton_ = std::move(*loaded);
  ::cpu_sampler& skeleton = *sampler->skeleton_;

  // The named processes and those they start.
  auto followed = fill_pid_filter(pid_filter(skeleton), options.pids, !options.pids.empty(),
                                  "the eBPF sampler's");
  if (!followed) return followed.error();
  for (::bpf_link* link : *followed) sampler->follow_links_.emplace_back(link);
  uint8_t yes = 1;
  for (uint64_t cgroup : options.cgroup_ids) {
    if (bpf_map__update_elem(skeleton.maps.target_cgroups, &cgroup, sizeof(cgroup), &yes,
                             sizeof(yes), BPF_ANY) != 0) {
      return Error::from_errno("filling the eBPF sampler's cgroup filter");
    }
  }

  ::bpf_program* sample_program = skeleton.progs.on_cpu_sample;
#if defined(__x86_64__)
  if (sampler->walks_by_tables_) sample_program = skeleton.progs.on_cpu_sample_cfi;
#endif
  int possible = libbpf_num_possible_cpus();
  if (possible <= 0) return Error::from_errno("counting the possible CPUs", -possible);
  bool cycles = true;
  for (int cpu = 0; cpu < possible; ++cpu) {
    auto event = open_sampling_event(cpu, options.frequency_hz, cycles);
    if (!event && cycles && sampler->links_.empty()) {
      cycles = false;  // no hardware PMU (a VM, say): the cpu-clock software event
      event = open_sampling_event(cpu, options.frequency_hz, cycles);
    }
    if (!event && event.error().sys_errno() == ENODEV) continue;  // an offline CPU
    if (!event) return Error(event.error()).with_context("the eBPF sampler's sampling event");
    ::bpf_link* link = bpf_program__attach_perf_event(sample_program, event->get());
    if (link == nullptr) {
      return Error::from_errno("attaching the eBPF sampler to CPU " + std::to_string(cpu));
    }
    (void)event->release();  // the link closes it
    sampler->links_.emplace_back(link);
  }
  if (sampler->links_.empty()) {
    return Error(ErrorKind::kUnavailable, "the eBPF sampler found no online CPU to sample");
  }
  sampler->event_ = cycles ? "cycles" : "cpu-clock";

  sampler->ring_.reset(ring_buffer__new(bpf_map__fd(skeleton.maps.process_events), on_process_event,
                                        &sampler->events_, nullptr));
  if (!sampler->ring_) return Error::from_errno("reading the eBPF sampler's process events");
  if (ring_buffer__add(sampler->ring_.get(), bpf_map__fd(skeleton.maps.python_code_events),
                       on_python_code, &sampler->events_) != 0) {
    return Error::from_errno("reading the eBPF sampler's Python code events");
  }
  if (ring_buffer__add(sampler->ring_.get(), bpf_map__fd(skeleton.maps.runtime_frame_events),
                       on_runtime_frame, &sampler->events_) != 0) {
    return Error::from_errno("reading the eBPF sampler's runtime frame events");
  }
  return sampler;
}

CpuSampler::~CpuSampler() {
  ring_.reset();
  follow_links_.clear();
  links_.clear();
  skeleton_.reset();
}

Result<int> CpuSampler::poll_images(std::chrono::milliseconds timeout, int wake_fd,
                                    const SamplerEvents& events) {
  pollfd waits[] = {{ring_buffer__epoll_fd(ring_.get()), POLLIN, 0}, {wake_fd, POLLIN, 0}};
  int ready = ::poll(
      waits, 2, timeout < std::chrono::milliseconds(0) ? -1 : static_cast<int>(timeout.count()));
  if (ready < 0 && errno != EINTR) {
    return Error::from_errno("waiting for the eBPF sampler's process events");
  }
  if (waits[1].revents != 0) {
    uint64_t wakes = 0;
    (void)::read(wake_fd, &wakes, sizeof(wakes));
  }
  if (ready <= 0 || waits[0].revents == 0) return 0;
  events_ = &events;
  int consumed = ring_buffer__consume(ring_.get());
  events_ = nullptr;
  if (consumed < 0)
    return Error::from_errno("reading the eBPF sampler's process events", -consumed);
  return consumed;
}

Result<uint32_t> CpuSampler::flip_sets() {
  uint32_t idle = skeleton_->bss->active_set;
  __atomic_store_n(&skeleton_->bss->active_set, 1 - idle, __ATOMIC_SEQ_CST);
  // The kernel waits for every running program before it answers an update of a map of maps.
  uint32_t zero = 0;
  int slot = bpf_map__fd(skeleton_->maps.fence_slot);
  if (bpf_map_update_elem(bpf_map__fd(skeleton_->maps.program_fence), &zero, &slot, BPF_ANY) != 0) {
    // The set stays as it is, its samples taken by a later drain.
    return Error::from_errno("waiting for the eBPF sampler's running programs");
  }
  return idle;
}

Result<void> CpuSampler::drain(const std::function<void(const CountedStack&)>& on_stack) {
  auto idle = flip_sets();
  if (!idle) return idle.error();
  auto& maps = skeleton_->maps;
  int counts_fd = bpf_map__fd(*idle == 0 ? maps.counts_0 : maps.counts_1);
  StackMaps stack_maps{bpf_map__fd(*idle == 0 ? maps.user_stacks_0 : maps.user_stacks_1),
                       bpf_map__fd(*idle == 0 ? maps.kernel_stacks_0 : maps.kernel_stacks_1)};
  std::vector<dormant_sample_key> keys;
  std::vector<uint64_t> counts;
  int error = take_in_batches<dormant_sample_key, uint64_t>(
      counts_fd, 1024, [&](const dormant_sample_key& key, const uint64_t& count) {
        keys.push_back(key);
        counts.push_back(count);
      });
  // What was taken out of the kernel is delivered, not lost with an error; the rest waits for
  // the set's next drain.
  if (error != 0) {
    if (keys.empty()) return Error::from_errno("draining the eBPF sampler's counts", error);
    spdlog::warn("ebpf: draining the counts stopped early: {}", std::strerror(error));
  }
  Stacks stacks = take_stacks(stack_maps, keys);
  auto frames_of = [&](uint64_t id, std::span<const uint64_t>& frames, bool& lost) {
    if (id == DORMANT_STACK_NONE) return;
    auto found = stacks.find(id);
    if (found == stacks.end()) {
      lost = true;
      return;
    }
    frames = found->second;
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    const dormant_sample_key& key = keys[i];
    CountedStack stack;
    stack.pid = static_cast<int>(key.tgid);
    stack.generation = key.generation;
    stack.count = counts[i];
    frames_of(key.user_stack, stack.user, stack.user_lost);
    frames_of(key.kernel_stack, stack.kernel, stack.kernel_lost);
    bool python_lost = false;  // the native frames stay: the interpreter's, named as such
    frames_of(key.python_stack, stack.python, python_lost);
    on_stack(stack);
  }
  return ok();
}

void CpuSampler::forget_processes(const std::vector<int>& pids) {
  int processes_fd = bpf_map__fd(skeleton_->maps.processes);
  for (int pid : pids) {
    auto key = static_cast<uint32_t>(pid);
    (void)bpf_map_delete_elem(processes_fd, &key);
  }
}

int CpuSampler::python_processes_fd() const {
  return bpf_map__fd(skeleton_->maps.python_processes);
}

int CpuSampler::hotspot_processes_fd() const {
  return bpf_map__fd(skeleton_->maps.hotspot_processes);
}

int CpuSampler::v8_processes_fd() const { return bpf_map__fd(skeleton_->maps.v8_processes); }

int CpuSampler::unwind_files_fd() const { return bpf_map__fd(skeleton_->maps.unwind_files); }
int CpuSampler::unwind_processes_fd() const {
  return bpf_map__fd(skeleton_->maps.unwind_processes);
}

UnwindWalks CpuSampler::unwind_walks() const {
  UnwindWalks walks;
  for (const auto& cpu : per_cpu_values<dormant_unwind_counts>(skeleton_->maps.unwind_counts)) {
    walks.frames_by_table += cpu.frames_by_table;
    walks.frames_by_frame_pointer += cpu.frames_by_fp;
    walks.frames_by_java += cpu.frames_by_java;
    walks.walks_without_process += cpu.no_process;
    walks.steps_without_table += cpu.no_table;
    walks.walks_complete += cpu.complete;
  }
  return walks;
}

SamplerDrops CpuSampler::take_drops() {
  SamplerDrops drops;
  for (const auto& cpu : per_cpu_values<dormant_drops>(skeleton_->maps.drops)) {
    drops.counts_full += cpu.counts_full;
    drops.stacks_full += cpu.stacks_full;
    drops.processes_full += cpu.processes_full;
    drops.events_lost += cpu.events_lost;
  }
  // The counters only grow; what is new is the difference from the previous call.
  SamplerDrops since = drops;
  since.counts_full -= reported_.counts_full;
  since.stacks_full -= reported_.stacks_full;
  since.processes_full -= reported_.processes_full;
  since.events_lost -= reported_.events_lost;
  reported_ = drops;
  return since;
}

}  // namespace dormant::profilers::ebpf
