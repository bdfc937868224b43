#include "profilers/ebpf/unwind_tables.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include <bpf/bpf.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bpf/unwind.h"
#include "common/deadline.h"

namespace dormant::profilers::ebpf {
namespace {

constexpr uint64_t kPage = 4096;

bool is_vdso(const system::Mapping& mapping) { return mapping.path == "[vdso]"; }

// Tells two readings of a process's mappings apart.
uint64_t digest(const std::vector<system::Mapping>& mappings) {
  uint64_t hash = mappings.size();
  for (const system::Mapping& mapping : mappings) {
    hash = (hash ^ mapping.start ^ (mapping.inode << 17)) * 0x9e3779b97f4a7c15ULL;
  }
  return hash;
}

// This process's vDSO, the same code every 64-bit process of this kernel maps.
Result<std::span<const std::byte>> own_vdso() {
  auto start = static_cast<uint64_t>(::getauxval(AT_SYSINFO_EHDR));
  if (start == 0) return Error(ErrorKind::kUnavailable, "this kernel maps no vDSO");
  auto mappings = system::executable_mappings(::getpid());
  if (!mappings) return mappings.error();
  for (const system::Mapping& mapping : *mappings) {
    if (mapping.start != start || !is_vdso(mapping)) continue;
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(start),
                                      mapping.end - mapping.start);
  }
  return Error(ErrorKind::kUnavailable, "the vDSO is not among this process's mappings");
}

}  // namespace

nlohmann::json UnwindTableCounts::to_json() const {
  return {{"files_loaded", files_loaded},
          {"rows", rows},
          {"kernel_bytes", kernel_bytes},
          {"files_waiting", files_waiting},
          {"files_read", files_read},
          {"files_without_table", files_without_table},
          {"files_given_up", files_given_up},
          {"files_without_room", files_without_room},
          {"files_left_out", files_left_out},
          {"mappings_left_out", mappings_left_out},
          {"processes_left_out", processes_left_out}};
}

UnwindTables::UnwindTables(int files_fd, int processes_fd, UnwindLimits limits,
                           const std::atomic<bool>* cancel)
    : cancel_(cancel), files_fd_(files_fd), processes_fd_(processes_fd), limits_(limits) {}

UnwindTables::~UnwindTables() = default;

Result<system::UnwindTable> UnwindTables::read_table(pid_t pid,
                                                     const system::Mapping& mapping) const {
  if (is_vdso(mapping)) {
    auto image = own_vdso();
    if (!image) return image.error();
    return system::UnwindTable::read_image(*image, "[vdso]");
  }
  system::UnwindTableLimits limits;
  limits.cancel = cancel_;
  std::optional<Result<system::UnwindTable>> first;
  for (const std::string& path : system::mapped_file_paths(pid, mapping)) {
    auto table = system::UnwindTable::read(path, limits);
    if (table || table.error().kind() == ErrorKind::kUnavailable) return table;
    if (!first) first = std::move(table);
  }
  return std::move(first).value_or(Error::parse(mapping.path + ": no file to read"));
}

Result<void> UnwindTables::put_in_kernel(File& file, const system::UnwindTable& table) {
  const auto& rows = table.rows();
  // Row 0 holds the count of the rows after it, in its pc: the walk's search needs it.
  uint64_t entries = rows.size() + 1;
  uint64_t bytes = (entries * sizeof(dormant_unwind_row) + kPage - 1) / kPage * kPage;
  if (!make_room(bytes, file.last_used)) {
    return Error(ErrorKind::kUnavailable,
                 "its " + std::to_string(bytes >> 10) + " kB of rows do not fit in the " +
                     std::to_string(limits_.max_table_bytes >> 10) + " kB of unwind tables");
  }
  LIBBPF_OPTS(bpf_map_create_opts, options, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
  UniqueFd map(bpf_map_create(BPF_MAP_TYPE_ARRAY, "dormant_unwind", sizeof(uint32_t),
                              sizeof(dormant_unwind_row), static_cast<uint32_t>(entries),
                              &options));
  if (!map) return Error::from_errno("creating an unwind table's map");
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, map.get(), 0);
  if (memory == MAP_FAILED) return Error::from_errno("mapping an unwind table's map");
  dormant_unwind_row count{static_cast<uint32_t>(rows.size()), 0, 0, 0};
  std::memcpy(memory, &count, sizeof(count));
  std::memcpy(static_cast<dormant_unwind_row*>(memory) + 1, rows.data(),
              rows.size() * sizeof(dormant_unwind_row));
  ::munmap(memory, bytes);
  int map_fd = map.get();
  if (bpf_map_update_elem(files_fd_, &file.id, &map_fd, BPF_ANY) != 0) {
    return Error::from_errno("adding an unwind table to the sampler's files");
  }
  file.map = std::move(map);
  file.rows = static_cast<uint32_t>(rows.size());
  file.kernel_bytes = bytes;
  kernel_bytes_ += bytes;
  return ok();
}

bool UnwindTables::make_room(uint64_t bytes, uint64_t now) {
  if (bytes > limits_.max_table_bytes) return false;
  while (kernel_bytes_ + bytes > limits_.max_table_bytes) {
    File* oldest = nullptr;
    for (auto& [key, file] : files_) {
      if (file.state != FileState::kLoaded || file.last_used >= now) continue;
      if (oldest == nullptr || file.last_used < oldest->last_used) oldest = &file;
    }
    if (oldest == nullptr) return false;
    give_up(*oldest);
  }
  return true;
}

void UnwindTables::give_up(File& file) {
  (void)bpf_map_delete_elem(files_fd_, &file.id);
  file.map.reset();
  kernel_bytes_ -= file.kernel_bytes;
  file.kernel_bytes = 0;
  file.state = FileState::kWaiting;  // read again when a process is added that maps it
  ++counts_.files_given_up;
}

UnwindTables::File* UnwindTables::file_of(pid_t pid, const system::Mapping& mapping) {
  if (!mapping.is_file() && !is_vdso(mapping)) return nullptr;  // anonymous or JIT code
  FileKey key = is_vdso(mapping) ? FileKey{0, 0} : FileKey{mapping.device, mapping.inode};
  auto found = files_.find(key);
  if (found == files_.end()) {
    if (files_.size() >= limits_.max_files) {
      ++counts_.files_left_out;
      return nullptr;
    }
    found = files_.emplace(key, File{}).first;
    File& file = found->second;
    file.id = next_id_++;
    if (is_vdso(mapping)) {
      auto image = own_vdso();
      if (image) {
        auto segments = system::LoadSegments::read_image(*image, "[vdso]");
        if (segments) file.segments = std::move(*segments);
      }
    } else {
      for (const std::string& path : system::mapped_file_paths(pid, mapping)) {
        auto segments = system::LoadSegments::read(path, mapping.path);
        if (!segments) continue;
        file.segments = std::move(*segments);
        break;
      }
    }
    if (!file.segments) {
      file.state = FileState::kUnusable;
      ++counts_.files_without_table;
    }
  }
  File& file = found->second;
  file.last_used = uses_;
  if (file.state == FileState::kWaiting) {
    file.state = FileState::kQueued;
    queue_.push_back({key, pid, mapping});
  }
  return file.state == FileState::kUnusable ? nullptr : &file;
}

void UnwindTables::add_process(pid_t pid, uint32_t generation,
                               const std::vector<system::Mapping>& mappings) {
  auto process = std::make_unique<dormant_unwind_process>();
  std::lock_guard lock(mutex_);
  auto known = images_.find(pid);
  // Generations only grow: an older image's mappings, read again late, never replace a newer's.
  if (known != images_.end() && known->second.generation > generation) return;
  ++uses_;
  for (const system::Mapping& mapping : mappings) {
    if (process->count == DORMANT_UNWIND_MAX_MAPPINGS) {
      ++counts_.mappings_left_out;
      continue;
    }
    dormant_unwind_mapping& entry = process->mappings[process->count++];
    entry.start = mapping.start;
    entry.end = mapping.end;
    File* file = file_of(pid, mapping);
    auto bias = file ? file->segments->bias(mapping.start, mapping.offset) : std::nullopt;
    if (bias) {
      entry.bias = *bias;
      entry.file = file->id;
    }
  }
  auto [previous, first] = images_.try_emplace(pid, Image{generation, 0});
  if (!first && previous->second.generation != generation) {
    dormant_unwind_process_key replaced{static_cast<uint32_t>(pid), previous->second.generation};
    (void)bpf_map_delete_elem(processes_fd_, &replaced);
    previous->second.generation = generation;
  }
  previous->second.mappings_digest = digest(mappings);
  dormant_unwind_process_key key{static_cast<uint32_t>(pid), generation};
  if (bpf_map_update_elem(processes_fd_, &key, process.get(), BPF_ANY) != 0) {
    ++counts_.processes_left_out;
  }
}

bool UnwindTables::load_queued(std::chrono::milliseconds budget) {
  Deadline deadline = deadline_after(budget);
  for (bool read_any = false;; read_any = true) {
    QueuedTable next;
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty() || (cancel_ != nullptr && *cancel_)) {
        // A table's rows were read into the heap and copied out: the pages they took go back.
        if (read_any) ::malloc_trim(0);
        return false;
      }
      if (SteadyClock::now() >= deadline) return true;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    auto table = read_table(next.pid, next.mapping);  // the long part, outside the lock
    std::lock_guard lock(mutex_);
    File& file = files_.at(next.key);
    ++counts_.files_read;
    if (!table) {
      spdlog::debug("ebpf: {} is walked by frame pointer: {}", next.mapping.path,
                    table.error().message());
      file.state = FileState::kUnusable;
      ++counts_.files_without_table;
      continue;
    }
    if (auto put = put_in_kernel(file, *table); !put) {
      spdlog::info("ebpf: {} is walked by frame pointer: {}", next.mapping.path,
                   put.error().message());
      file.state = FileState::kUnusable;  // not read again: it would not fit again
      ++counts_.files_without_room;
      continue;
    }
    file.state = FileState::kLoaded;
  }
}

void UnwindTables::refresh(
    const std::function<std::vector<system::Mapping>(pid_t, uint32_t)>& read) {
  std::vector<std::pair<pid_t, Image>> images;
  {
    std::lock_guard lock(mutex_);
    images.assign(images_.begin(), images_.end());
  }
  for (const auto& [pid, image] : images) {
    std::vector<system::Mapping> mappings = read(pid, image.generation);
    if (!mappings.empty() && digest(mappings) != image.mappings_digest) {
      add_process(pid, image.generation, mappings);
    }
  }
}

void UnwindTables::forget_processes(const std::vector<pid_t>& pids) {
  std::lock_guard lock(mutex_);
  for (pid_t pid : pids) {
    auto known = images_.find(pid);
    if (known == images_.end()) continue;
    dormant_unwind_process_key key{static_cast<uint32_t>(pid), known->second.generation};
    (void)bpf_map_delete_elem(processes_fd_, &key);
    images_.erase(known);
  }
}

UnwindTableCounts UnwindTables::counts() const {
  std::lock_guard lock(mutex_);
  UnwindTableCounts counts = counts_;
  for (const auto& [key, file] : files_) {
    if (file.state == FileState::kLoaded) {
      ++counts.files_loaded;
      counts.rows += file.rows;
    }
    counts.files_waiting += file.state == FileState::kQueued;
  }
  counts.kernel_bytes = kernel_bytes_;
  return counts;
}

}  // namespace dormant::profilers::ebpf
