#include "profilers/system/symbolizer.h"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/procfs.h"
#include "profilers/system/processes.h"

namespace dormant::profilers::system {
namespace {

// The address a frame is looked up at: return addresses (every frame but the innermost) one byte
// back, inside the call.
uint64_t lookup_address(std::span<const uint64_t> user, size_t i, bool innermost_is_exact = true) {
  return i == 0 && innermost_is_exact ? user[i] : user[i] - 1;
}

const Mapping* mapping_at(const std::vector<Mapping>& mappings, uint64_t address) {
  auto after = std::upper_bound(
      mappings.begin(), mappings.end(), address,
      [](uint64_t wanted, const Mapping& mapping) { return wanted < mapping.start; });
  if (after == mappings.begin()) return nullptr;
  const Mapping& mapping = *std::prev(after);
  return address < mapping.end ? &mapping : nullptr;
}

// JIT code: in no mapping read (code mapped since), or in an anonymous one.
bool in_jit_code(const Mapping* mapping) { return mapping == nullptr || mapping->path.empty(); }

// The symbols of the file `mapping` of `pid` maps; the first path's error when none can be read.
Result<std::unique_ptr<ElfSymbols>> load_mapped_file(pid_t pid, const Mapping& mapping,
                                                     const MemoryGrant& grant) {
  std::optional<Result<std::unique_ptr<ElfSymbols>>> first;
  for (const std::string& path : mapped_file_paths(pid, mapping)) {
    // Debug files are looked for where the process's own files are: in its mount namespace
    // while it lives (through /proc/PID/root), on the host after.
    bool live = path.starts_with("/proc/");
    std::string root = live ? "/proc/" + std::to_string(pid) + "/root" : "";
    DebugFileSearch debug{root + "/usr/lib/debug", root + mapping.path};
    auto loaded = ElfSymbols::load(path, debug, grant);
    if (loaded) return loaded;
    if (!first) first = std::move(loaded);
  }
  return std::move(first).value_or(Error::parse(mapping.path + ": no file to read"));
}

}  // namespace

Symbolizer::Symbolizer(std::optional<KernelSymbols> kernel, SymbolizerLimits limits)
    : kernel_(std::move(kernel)), limits_(limits) {}

bool Symbolizer::remember(pid_t pid, uint32_t generation, std::string comm) {
  auto mappings = executable_mappings(pid);         // outside the lock: a snapshot may hold it
  bool read = mappings.ok() && !mappings->empty();  // an exiting process's maps are empty
  if (read) load_binaries(pid, *mappings);
  std::lock_guard lock(mutex_);
  auto known = images_.find({pid, generation});
  if (known != images_.end()) {
    if (read) known->second.mappings = std::move(*mappings);  // gone: keep what was read
    return read;
  }
  if (images_.size() >= limits_.max_images) return read;
  Image& image = images_[{pid, generation}];
  image.comm = std::move(comm);
  if (read) image.mappings = std::move(*mappings);
  return read;
}

void Symbolizer::load_binaries(pid_t pid, const std::vector<Mapping>& mappings) {
  // The binaries the process maps are marked used, and those missing listed, before any is read:
  // reading one gives up a binary used less recently where the cache holds one, and never one that
  // the loop comes to later and reads again, giving up the next, and so on.
  std::map<BinaryKey, const Mapping*> missing;
  {
    std::lock_guard lock(mutex_);
    uint64_t now = ++uses_;
    for (const Mapping& mapping : mappings) {
      if (!mapping.is_file()) continue;
      BinaryKey key{mapping.device, mapping.inode};
      auto known = binaries_.find(key);
      if (known != binaries_.end()) {
        known->second.last_used = now;
      } else {
        missing.try_emplace(key, &mapping);
      }
    }
  }
  for (const auto& [key, mapping] : missing) {
    // What the file's reading holds is counted with the symbols kept, as it is taken.
    size_t granted = 0;
    auto grant = [&](size_t bytes) {
      std::lock_guard lock(mutex_);
      if (bytes > limits_.max_binary_bytes - loading_bytes_) return false;
      make_room(bytes);
      loading_bytes_ += bytes;
      granted += bytes;
      return true;
    };
    auto loaded = load_mapped_file(pid, *mapping, grant);
    std::lock_guard lock(mutex_);
    loading_bytes_ -= granted;
    ++binaries_read_;
    if (binaries_.contains(key)) continue;  // read meanwhile for another process
    if (!loaded && loaded.error().kind() == ErrorKind::kParse) {
      spdlog::warn("symbols: {}: its frames stay unnamed", loaded.error().message());
    }
    if (limits_.max_binaries == 0) continue;
    std::unique_ptr<ElfSymbols> symbols = loaded ? std::move(*loaded) : nullptr;
    size_t bytes = symbols ? symbols->memory_bytes() : 0;
    if (bytes > limits_.max_binary_bytes) {
      spdlog::warn("symbols: {} takes {} MB, more than all symbols may: its frames stay unnamed",
                   mapping->path, bytes >> 20);
      symbols.reset();
      bytes = 0;
    }
    make_room(bytes);
    binary_bytes_ += bytes;
    binaries_[key] = Binary{std::move(symbols), ++uses_, bytes};
  }
}

void Symbolizer::make_room(size_t room, const Binary* kept) {
  auto over = [&] {
    return binary_bytes_ + loading_bytes_ + room > limits_.max_binary_bytes ||
           (kept == nullptr && binaries_.size() >= limits_.max_binaries);
  };
  while (!binaries_.empty() && over()) {
    auto oldest = std::min_element(
        binaries_.begin(), binaries_.end(),
        [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
    if (&oldest->second == kept) return;
    binary_bytes_ -= oldest->second.bytes;
    binaries_.erase(oldest);
  }
}

bool Symbolizer::may_be_loading(pid_t pid, uint32_t generation, uint64_t user_ip) const {
  std::lock_guard lock(mutex_);
  auto found = images_.find({pid, generation});
  if (user_ip == 0) return false;  // no user code: a kernel thread
  if (found == images_.end()) return true;
  const Mapping* mapping = mapping_at(found->second.mappings, user_ip);
  if (mapping == nullptr) return true;
  // ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-musl-x86_64.so.1
  return std::filesystem::path(mapping->path).filename().string().starts_with("ld-");
}

std::string Symbolizer::comm(pid_t pid, uint32_t generation) {
  if (pid == 0) return "swapper";
  {
    std::lock_guard lock(mutex_);
    auto found = images_.find({pid, generation});
    if (found != images_.end()) return found->second.comm;
  }
  auto stat = procfs::process_stat(pid);
  if (!stat || stat->comm.empty()) return "[unknown]";
  std::string name = stat->comm;
  remember(pid, generation, name);  // its process event was lost: read its maps now
  return name;
}

std::vector<Mapping> Symbolizer::mappings(pid_t pid, uint32_t generation) const {
  std::lock_guard lock(mutex_);
  auto found = images_.find({pid, generation});
  return found == images_.end() ? std::vector<Mapping>() : found->second.mappings;
}

void Symbolizer::read_perf_map(pid_t pid, Image& image, std::span<const uint64_t> user) {
  if (image.perf_map_read_in == snapshot_) return;
  bool jit = false;
  for (size_t i = 0; i < user.size() && !jit; ++i) {
    jit = in_jit_code(mapping_at(image.mappings, lookup_address(user, i)));
  }
  if (!jit) return;
  image.perf_map_read_in = snapshot_;
  auto perf_map = image.perf_map ? std::move(image.perf_map) : std::make_unique<PerfMap>();
  auto read = perf_map->read_more_of(pid);
  if (!read && read.error().kind() == ErrorKind::kInvalidArgument) {
    spdlog::debug("symbols: {}", read.error().message());
  }
  if (perf_map->bytes_read() > 0) image.perf_map = std::move(perf_map);  // read on from there
}

std::string Symbolizer::user_frame(const Image* image, uint64_t address) {
  const Mapping* mapping = image ? mapping_at(image->mappings, address) : nullptr;
  if (in_jit_code(mapping) && image != nullptr && image->perf_map) {
    if (auto name = image->perf_map->name_at(address)) return std::string(*name);
  }
  if (in_jit_code(mapping)) return "[unknown]";
  if (!mapping->is_file()) return mapping->path;  // [vdso], [vsyscall]
  auto binary = binaries_.find({mapping->device, mapping->inode});
  if (binary != binaries_.end() && binary->second.symbols) {
    Binary& found = binary->second;
    found.last_used = ++uses_;
    auto name = found.symbols->function_at_file_offset(address - mapping->start + mapping->offset);
    std::string text = name ? std::string(*name) : "";
    size_t bytes = found.symbols->memory_bytes();  // its demangled names come and go
    binary_bytes_ = binary_bytes_ - found.bytes + bytes;
    found.bytes = bytes;
    make_room(0, &found);
    if (name) return text;
  }
  return "(" + mapping->path + ")";
}

bool Symbolizer::should_read_again(pid_t pid, uint32_t generation, std::span<const uint64_t> user) {
  if (user.empty()) return false;
  std::lock_guard lock(mutex_);
  auto found = images_.find({pid, generation});
  if (found == images_.end() || found->second.read_again_in == snapshot_) return false;
  // The innermost frame only: it is where the code ran, where return addresses further out may
  // be garbage from code built without frame pointers.
  if (mapping_at(found->second.mappings, user[0]) != nullptr) return false;
  found->second.read_again_in = snapshot_;
  return true;
}

void Symbolizer::append_user_frames(pid_t pid, uint32_t generation, std::span<const uint64_t> user,
                                    std::vector<std::string>& frames, bool innermost_is_exact) {
  if (should_read_again(pid, generation, user)) {
    // The same image still, as far as its name tells: an exec would have brought other maps.
    auto stat = procfs::process_stat(pid);
    std::string comm = this->comm(pid, generation);
    if (stat && stat->comm == comm) remember(pid, generation, comm);
  }
  std::lock_guard lock(mutex_);
  auto found = images_.find({pid, generation});
  Image* image = found == images_.end() ? nullptr : &found->second;
  if (image != nullptr) read_perf_map(pid, *image, user);
  for (size_t i = user.size(); i-- > 0;)
    frames.push_back(user_frame(image, lookup_address(user, i, innermost_is_exact)));
}

std::optional<std::string> Symbolizer::perf_map_name(pid_t pid, uint32_t generation,
                                                     uint64_t address) {
  std::lock_guard lock(mutex_);
  auto found = images_.find({pid, generation});
  if (found == images_.end()) return std::nullopt;
  const uint64_t frame[] = {address};
  read_perf_map(pid, found->second, frame);
  if (!found->second.perf_map) return std::nullopt;
  auto name = found->second.perf_map->name_at(address);
  return name ? std::optional<std::string>(*name) : std::nullopt;
}

void Symbolizer::append_kernel_frames(std::span<const uint64_t> kernel,
                                      std::vector<std::string>& frames) {
  for (size_t i = kernel.size(); i-- > 0;) {
    auto name = kernel_ ? kernel_->function_at(kernel[i]) : std::nullopt;
    frames.push_back(name ? std::string(*name) + "_[k]" : "(kernel.kallsyms)");
  }
}

std::vector<pid_t> Symbolizer::forget_exited() {
  std::lock_guard lock(mutex_);
  ++snapshot_;
  std::vector<pid_t> exited;
  std::erase_if(images_, [&](const auto& entry) {
    pid_t pid = entry.first.first;
    if (is_live_process(pid)) return false;
    if (exited.empty() || exited.back() != pid) exited.push_back(pid);
    return true;
  });
  return exited;
}

size_t Symbolizer::images() const {
  std::lock_guard lock(mutex_);
  return images_.size();
}

size_t Symbolizer::binaries() const {
  std::lock_guard lock(mutex_);
  return binaries_.size();
}

size_t Symbolizer::binary_bytes() const {
  std::lock_guard lock(mutex_);
  return binary_bytes_;
}

uint64_t Symbolizer::binaries_read() const {
  std::lock_guard lock(mutex_);
  return binaries_read_;
}

}  // namespace dormant::profilers::system
