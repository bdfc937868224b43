#include "profilers/ebpf/ebpf_profiler.h"

#include <algorithm>
#include <map>
#include <utility>

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bpf/runtime_frames.h"
#include "profilers/system/processes.h"

namespace dormant::profilers::ebpf {
namespace {

// A process is announced at its first sample, which may come while the dynamic loader is still
// mapping its libraries; when that sample was in the loader, its maps are read once more this
// much later.
constexpr std::chrono::milliseconds kRereadAfter{20};
// How long the reader reads tables before it looks for announcements again.
constexpr std::chrono::milliseconds kTableSlice{20};

std::string drops_text(const SamplerDrops& drops) {
  std::string text;
  auto add = [&](uint64_t count, const char* what) {
    if (count == 0) return;
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + what;
  };
  add(drops.counts_full, "samples not counted (the counts map was full or out of memory)");
  add(drops.stacks_full, "stacks lost (a stack map was full or out of memory)");
  add(drops.processes_full, "samples of processes the process map had no room for");
  add(drops.events_lost, "process announcements lost");
  return text;
}

}  // namespace

EbpfProfiler::EbpfProfiler(EbpfProfilerOptions options)
    : options_(std::move(options)),
      container_names_(options_.docker_root),
      wake_reader_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      wake_reader_errno_(wake_reader_ ? 0 : errno) {}

void EbpfProfiler::wake_reader() {
  uint64_t one = 1;
  (void)::write(wake_reader_.get(), &one, sizeof(one));
}

Result<void> EbpfProfiler::start() {
  if (!wake_reader_) return Error::from_errno("eventfd for the eBPF reader", wake_reader_errno_);
  if (auto allowed = system::check_process_limit("ebpf", options_.target.skip_above_processes);
      !allowed) {
    return allowed.error();
  }
  CpuSamplerOptions sampler_options;
  sampler_options.frequency_hz = options_.target.frequency_hz;
  sampler_options.max_stacks = options_.ebpf.max_stacks;
  sampler_options.max_counted = options_.ebpf.max_counted;
  sampler_options.max_processes = options_.ebpf.max_processes;
  sampler_options.walk_by_tables = options_.ebpf.walk_by_tables;
  // cgroups first, as for perf
  if (!options_.target.pids.empty() && !options_.target.use_cgroups) {
    auto split = system::split_live_pids(options_.target.pids);
    if (split.live.empty()) {
      return Error(ErrorKind::kUnavailable, "ebpf skipped: none of the pids to profile runs");
    }
    sampler_options.pids = split.live;
  }
  sampler_options.cgroup_ids = options_.cgroup_ids;
  if (options_.target.use_cgroups) {
    auto picks = system::cgroups_to_profile(
        "ebpf", system::choose_unified_cgroups(system::cgroup_limits_of(options_.target)));
    if (!picks) return picks.error();
    for (const auto& pick : *picks) sampler_options.cgroup_ids.push_back(pick.id);
  }
  auto kernel = system::KernelSymbols::load();
  if (!kernel) spdlog::warn("ebpf: kernel frames stay unnamed: {}", kernel.error().message());
  auto sampler = CpuSampler::make(sampler_options);
  if (!sampler) return sampler.error();
  sampler_ = std::move(*sampler);
  system::SymbolizerLimits limits;
  limits.max_images = sampler_options.max_processes;
  symbolizer_ = std::make_unique<system::Symbolizer>(
      kernel ? std::optional(std::move(*kernel)) : std::nullopt, limits);
  python_processes_ = std::make_unique<PythonProcesses>(sampler_->python_processes_fd(),
                                                        options_.ebpf.max_python_processes);
  hotspot_processes_ = std::make_unique<HotSpotProcesses>(sampler_->hotspot_processes_fd(),
                                                          options_.ebpf.max_runtime_processes);
  v8_processes_ = std::make_unique<V8Processes>(sampler_->v8_processes_fd(),
                                                options_.ebpf.max_runtime_processes);
  if (sampler_->walks_by_tables()) {
    unwind_tables_ = std::make_unique<UnwindTables>(
        sampler_->unwind_files_fd(), sampler_->unwind_processes_fd(),
        UnwindLimits{.max_table_bytes = options_.ebpf.unwind_table_bytes}, &stopping_);
  } else {
    spdlog::info("ebpf: user stacks are walked by frame pointer only: {}",
                 sampler_->why_frame_pointers());
  }
  stopping_ = false;
  reader_ = std::thread([this] { read_process_images(); });
  spdlog::info("ebpf: sampling {} at {} Hz on {} CPUs ({})", sampler_->event(),
               options_.target.frequency_hz, sampler_->cpus(),
               !sampler_options.pids.empty() ? std::to_string(sampler_options.pids.size()) + " pids"
               : !sampler_options.cgroup_ids.empty()
                   ? std::to_string(sampler_options.cgroup_ids.size()) + " cgroups"
                   : "whole host");
  return ok();
}

void EbpfProfiler::read_process_images() {
  pthread_setname_np(pthread_self(), "ebpf-images");
  while (!stopping_) {
    auto timeout = CpuSampler::kNoTimeout;  // stop() and abort() wake it
    if (tables_waiting_) {
      timeout = std::chrono::milliseconds(0);
    } else if (!young_.empty()) {
      // Rounded up: a wait rounded down to 0 ms would spin until the re-read is due.
      timeout = std::max(std::chrono::ceil<std::chrono::milliseconds>(young_.front().reread_at -
                                                                      SteadyClock::now()),
                         std::chrono::milliseconds(0));
    }
    // These run under libbpf's C frames: nothing may unwind through them.
    auto on_image = [this](const ProcessImage& image) {
      try {
        remember(image);
        if (symbolizer_->may_be_loading(image.pid, image.generation, image.user_ip)) {
          young_.push_back({image, SteadyClock::now() + kRereadAfter});
        }
      } catch (const std::exception& thrown) {
        spdlog::warn("ebpf: cannot remember process {}: {}", image.pid, thrown.what());
      }
    };
    auto on_code = [this](const PythonCode& code) {
      try {  // named now, while the process lives: it may be gone by the snapshot
        auto image = python_processes_->image(code.pid, code.generation);
        if (image) python_names_.remember(code.pid, image->offsets, image->code_type, code.code);
      } catch (const std::exception& thrown) {
        spdlog::warn("ebpf: cannot name a Python frame of {}: {}", code.pid, thrown.what());
      }
    };
    auto on_runtime_frame = [this](const RuntimeFrame& frame) {
      try {  // named now, while the process lives: it may be gone by the snapshot
        remember(frame);
      } catch (const std::exception& thrown) {
        spdlog::warn("ebpf: cannot name a runtime frame of {}: {}", frame.pid, thrown.what());
      }
    };
    SamplerEvents events{on_image, on_code, on_runtime_frame};
    auto polled = sampler_->poll_images(timeout, wake_reader_.get(), events);
    if (!polled) {
      spdlog::error("ebpf: {}; processes are now named at the snapshot only",
                    polled.error().message());
      return;
    }
    reread_young_images();
    // Tables are read between announcements, a slice at a time, so that a new process gets its
    // mappings (and Python frames) at once and its tables soon after.
    tables_waiting_ = unwind_tables_ && unwind_tables_->load_queued(kTableSlice);
  }
}

void EbpfProfiler::reread_young_images() {
  auto now = SteadyClock::now();
  while (!young_.empty() && young_.front().reread_at <= now) {
    remember(young_.front().image);
    young_.pop_front();
  }
}

void EbpfProfiler::remember(const ProcessImage& image) {
  bool read = symbolizer_->remember(image.pid, image.generation, image.comm);
  if (!read) return;
  std::vector<system::Mapping> mappings = symbolizer_->mappings(image.pid, image.generation);
  if (unwind_tables_) unwind_tables_->add_process(image.pid, image.generation, mappings);
  python_processes_->add_process(image.pid, image.generation, mappings);
  hotspot_processes_->add_process(image.pid, image.generation, mappings);
  v8_processes_->add_process(image.pid, image.generation, mappings);
}

void EbpfProfiler::remember(const RuntimeFrame& frame) {
  if (((frame.marked >> DORMANT_RUNTIME_KIND_SHIFT) & 7) == DORMANT_V8_FUNCTION) {
    auto layout = v8_processes_->layout(frame.pid, frame.generation);
    if (layout) javascript_names_.remember(frame.pid, *layout, frame.word);
    return;
  }
  auto vm = hotspot_processes_->vm(frame.pid, frame.generation);
  if (vm) java_names_.remember(frame.pid, *vm, frame.marked, frame.word);
}

Result<profile::StackTable> EbpfProfiler::snapshot() {
  if (!sampler_) return Error(ErrorKind::kUnavailable, "ebpf is not running");
  profile::StackTable stacks;
  std::vector<std::string> frames;
  std::vector<std::string_view> views;
  uint64_t truncated = 0;
  std::map<std::pair<int, uint32_t>, std::string> containers;  // by image, read once per snapshot
  auto drained = sampler_->drain([&](const CountedStack& stack) {
    frames.clear();
    if (stack.user.size() >= CpuSampler::kMaxStackDepth) {
      frames.push_back("[truncated]");
      truncated += stack.count;
    }
    if (stack.user_lost) frames.push_back("[lost user stack]");
    // First: for an image whose announcement was lost, this reads its maps now.
    std::string comm = symbolizer_->comm(stack.pid, stack.generation);
    size_t user_begin = frames.size();
    append_user_frames(stack, frames);
    if (!stack.python.empty()) add_python_frames(stack, user_begin, frames);
    if (stack.kernel_lost) frames.push_back("[lost kernel stack]");
    symbolizer_->append_kernel_frames(stack.kernel, frames);
    if (frames.empty()) frames.push_back("[unknown]");
    views.assign(frames.begin(), frames.end());
    auto [container, added] = containers.try_emplace({stack.pid, stack.generation});
    if (added && stack.pid > 0) container->second = container_names_.of_pid(stack.pid);
    stacks.add(container->second, comm, views, stack.count);
  });
  if (!drained) return drained.error();
  SamplerDrops drops = sampler_->take_drops();
  if (drops.total() > 0) {
    spdlog::warn("ebpf: this snapshot lost samples or stacks: {}", drops_text(drops));
    if (drops.counts_full > 0) {
      add_profiling_marker(stacks, name(),
                           "samples not counted, the counts map was full or out of memory",
                           drops.counts_full);
    }
  }
  if (truncated > 0) spdlog::info("ebpf: {} samples had user stacks cut at 127 frames", truncated);
  if (unwind_tables_) {
    unwind_tables_->refresh(
        [this](pid_t pid, uint32_t generation) { return symbolizer_->mappings(pid, generation); });
  }
  std::vector<pid_t> exited = symbolizer_->forget_exited();
  sampler_->forget_processes(exited);
  python_processes_->forget_processes(exited);
  python_names_.end_snapshot(exited);
  hotspot_processes_->forget_processes(exited);
  hotspot_processes_->retry_waiting();
  java_names_.end_snapshot(exited);
  v8_processes_->forget_processes(exited);
  javascript_names_.end_snapshot(exited);
  if (unwind_tables_) unwind_tables_->forget_processes(exited);
  return stacks;
}

void EbpfProfiler::append_user_frames(const CountedStack& stack, std::vector<std::string>& frames) {
  std::span<const uint64_t> user = stack.user;
  if (std::none_of(user.begin(), user.end(),
                   [](uint64_t word) { return (word & DORMANT_RUNTIME_FRAME) != 0; })) {
    symbolizer_->append_user_frames(stack.pid, stack.generation, user, frames);
    return;
  }
  RuntimesOf runtimes{hotspot_processes_->vm(stack.pid, stack.generation),
                      v8_processes_->layout(stack.pid, stack.generation)};
  // Runs of native frames and runtime frames (two words each), innermost first; named root first.
  struct Run {
    size_t begin;
    size_t end;
    bool runtime;
  };
  std::vector<Run> runs;
  for (size_t i = 0; i < user.size();) {
    bool runtime = (user[i] & DORMANT_RUNTIME_FRAME) != 0 && i + 1 < user.size();
    size_t end = runtime ? i + 2 : i + 1;
    if (!runtime && !runs.empty() && !runs.back().runtime) {
      runs.back().end = end;
    } else {
      runs.push_back({i, end, runtime});
    }
    i = end;
  }
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    if (run->runtime) {
      append_runtime_frame(stack, runtimes, user[run->begin], user[run->begin + 1], run->begin == 0,
                           frames);
    } else {
      symbolizer_->append_user_frames(stack.pid, stack.generation,
                                      user.subspan(run->begin, run->end - run->begin), frames,
                                      run->begin == 0);
    }
  }
}

void EbpfProfiler::append_runtime_frame(const CountedStack& stack, const RuntimesOf& runtimes,
                                        uint64_t marked, uint64_t word, bool innermost,
                                        std::vector<std::string>& frames) {
  uint64_t address = marked & DORMANT_RUNTIME_ADDRESS_MASK;
  if (((marked >> DORMANT_RUNTIME_KIND_SHIFT) & 7) == DORMANT_V8_FUNCTION) {
    // Where node writes a perf map (--perf-basic-prof), its names, as perf gives them.
    // A return address is looked up one byte back, inside the call.
    auto name =
        symbolizer_->perf_map_name(stack.pid, stack.generation, innermost ? address : address - 1);
    if (!name && runtimes.v8) name = javascript_names_.name(stack.pid, *runtimes.v8, word);
    if (name) {
      frames.push_back(std::move(*name));
      return;
    }
  } else if (runtimes.jvm) {
    for (std::string& name : java_names_.names(stack.pid, *runtimes.jvm, marked, word)) {
      frames.push_back(std::move(name));
    }
    return;
  }
  const uint64_t native[] = {address};
  symbolizer_->append_user_frames(stack.pid, stack.generation, native, frames, innermost);
}

void EbpfProfiler::add_python_frames(const CountedStack& stack, size_t user_begin,
                                     std::vector<std::string>& frames) {
  auto image = python_processes_->image(stack.pid, stack.generation);
  if (!image) return;
  auto groups = python_names_.groups(stack.pid, image->offsets, image->code_type, stack.python);
  system::merge_python_frames(frames, user_begin, frames.size(), std::move(groups));
}

void EbpfProfiler::abort() {
  stopping_ = true;
  wake_reader();
}

void EbpfProfiler::stop() {
  stopping_ = true;
  wake_reader();
  if (reader_.joinable()) reader_.join();
  young_.clear();
  python_processes_.reset();
  hotspot_processes_.reset();
  v8_processes_.reset();
  unwind_tables_.reset();
  sampler_.reset();
  symbolizer_.reset();
}

nlohmann::json EbpfProfiler::header_facts() const {
  if (!sampler_) return nullptr;
  nlohmann::json facts = {{"python", python_processes_->counts().to_json()},
                          {"java", hotspot_processes_->counts().to_json()},
                          {"javascript", v8_processes_->counts().to_json()}};
  if (!unwind_tables_) {
    facts["unwinding"] = "frame pointers";
    facts["why"] = sampler_->why_frame_pointers();
    return facts;
  }
  UnwindWalks walks = sampler_->unwind_walks();
  nlohmann::json tables = unwind_tables_->counts().to_json();
  tables["frames_by_table"] = walks.frames_by_table;
  tables["frames_by_frame_pointer"] = walks.frames_by_frame_pointer;
  tables["frames_by_java"] = walks.frames_by_java;
  tables["walks_before_tables"] = walks.walks_without_process;
  tables["steps_without_table"] = walks.steps_without_table;
  tables["walks_complete"] = walks.walks_complete;
  facts["unwinding"] = "tables";
  facts["unwind_tables"] = std::move(tables);
  return facts;
}

std::string_view EbpfProfiler::event() const {
  return sampler_ ? std::string_view(sampler_->event()) : std::string_view();
}

}  // namespace dormant::profilers::ebpf
