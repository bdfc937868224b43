// Loads the profiler module (libdormant_profilers.so) for as long as sessions use it: the first
// session loads it, and once the last one lets go of it, it is unloaded and its mappings (and
// those of libbpf and libelf) leave the process.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>

#include "common/result.h"
#include "module/api/profiler_module.h"

namespace dormant::agent {

class LoadedModule {
 public:
  // dlopen()s `path` and checks that it is a module of this very build. The error carries the
  // loader's own message (a missing file, a missing library, another build).
  static Result<std::shared_ptr<LoadedModule>> load(const std::filesystem::path& path);
  ~LoadedModule();
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  module::ProfilerModule& profilers() { return *module_; }
  // A profiler's stop() that never returned still runs the module's code: it is never unloaded.
  void keep_loaded() { keep_loaded_ = true; }

 private:
  LoadedModule(void* handle, module::ProfilerModule* module) : handle_(handle), module_(module) {}

  void* handle_;
  module::ProfilerModule* module_;
  bool keep_loaded_ = false;
};

class ModuleLoader {
 public:
  explicit ModuleLoader(std::filesystem::path path) : path_(std::move(path)) {}
  // The module while some session holds it, else loads it. Safe from any thread.
  Result<std::shared_ptr<LoadedModule>> acquire();
  const std::filesystem::path& path() const { return path_; }

 private:
  const std::filesystem::path path_;
  std::mutex mutex_;
  std::weak_ptr<LoadedModule> loaded_;
};

// A file installed beside dormant-agent: `configured` when a flag names one, else `file` in the
// directory of this program's executable.
std::filesystem::path installed_file(const std::string& configured, const char* file);

// `configured` (--profiler-module), or when empty libdormant_profilers.so beside the executable.
std::filesystem::path module_path(const std::string& configured);

}  // namespace dormant::agent
