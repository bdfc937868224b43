#include "agent/module_loader.h"

#include <cstring>

#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dormant::agent {
namespace {

constexpr char kModuleFile[] = "libdormant_profilers.so";

std::string loader_error(const char* what, const std::filesystem::path& path) {
  const char* message = ::dlerror();
  return "cannot load the profiler module " + path.string() + ": " + (message ? message : what);
}

}  // namespace

Result<std::shared_ptr<LoadedModule>> LoadedModule::load(const std::filesystem::path& path) {
  // The agent runs as root: code it loads must be no one else's to change.
  struct stat status {};
  if (::stat(path.c_str(), &status) == 0 &&
      ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0 ||
       (status.st_uid != 0 && status.st_uid != ::geteuid()))) {
    return Error(ErrorKind::kSystem, "cannot load the profiler module " + path.string() +
                                         ": another user or group may change it");
  }
  // RTLD_LOCAL: the module's symbols never resolve anything else's.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return Error(ErrorKind::kSystem, loader_error("dlopen failed", path));
  auto close = [&](std::string message) {
    ::dlclose(handle);
    return Error(ErrorKind::kSystem, std::move(message));
  };
  ::dlerror();
  auto* entry_point = reinterpret_cast<decltype(&dormant_profiler_module_v1)>(
      ::dlsym(handle, DORMANT_MODULE_ENTRY_POINT));
  if (entry_point == nullptr) {
    return close(loader_error("no " DORMANT_MODULE_ENTRY_POINT " in it", path));
  }
  // The build id is the entry's first member: nothing else of it is used before the id matches.
  const module::ModuleEntry* entry = entry_point();
  if (entry == nullptr || entry->build_id == nullptr || entry->module == nullptr ||
      std::strcmp(entry->build_id, DORMANT_MODULE_BUILD_ID) != 0) {
    return close("cannot load the profiler module " + path.string() +
                 ": it is from another build of Dormant (build id " +
                 (entry && entry->build_id ? std::string(entry->build_id).substr(0, 12) : "none") +
                 ", this agent's " + std::string(DORMANT_MODULE_BUILD_ID).substr(0, 12) + ")");
  }
  spdlog::debug("profiler module {} loaded", path.string());
  return std::shared_ptr<LoadedModule>(new LoadedModule(handle, entry->module));
}

LoadedModule::~LoadedModule() {
  if (keep_loaded_) {
    spdlog::warn("the profiler module stays loaded: a profiler's stop() still runs in it");
    return;
  }
  if (::dlclose(handle_) != 0) spdlog::error("dlclose of the profiler module: {}", ::dlerror());
  spdlog::debug("profiler module unloaded");
}

Result<std::shared_ptr<LoadedModule>> ModuleLoader::acquire() {
  std::lock_guard lock(mutex_);
  if (auto loaded = loaded_.lock()) return loaded;
  auto loaded = LoadedModule::load(path_);
  if (loaded) loaded_ = *loaded;
  return loaded;
}

std::filesystem::path installed_file(const std::string& configured, const char* file) {
  if (!configured.empty()) return configured;
  std::error_code error;
  auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return file;
  return executable.parent_path() / file;
}

std::filesystem::path module_path(const std::string& configured) {
  return installed_file(configured, kModuleFile);
}

}  // namespace dormant::agent
