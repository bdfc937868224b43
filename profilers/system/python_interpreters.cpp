#include "profilers/system/python_interpreters.h"

#include <spdlog/spdlog.h>

namespace dormant::profilers::system {

const PythonBinary* PythonInterpreters::binary(pid_t pid, const Mapping& mapping) {
  if (!mapping.is_file() || !PythonBinary::named_like_python(mapping.path)) return nullptr;
  auto [found, added] = binaries_.try_emplace(FileKey{mapping.device, mapping.inode});
  if (added) {
    std::optional<Result<PythonBinary>> read;
    for (const std::string& path : mapped_file_paths(pid, mapping)) {
      read = PythonBinary::read(path, mapping.path);
      if (*read) break;
    }
    if (read && *read) {
      found->second = std::move(**read);
    } else if (read) {
      spdlog::debug("no Python frames from {}: {}", mapping.path, read->error().message());
    }
  }
  return found->second ? &*found->second : nullptr;
}

Result<std::optional<PythonImage>> PythonInterpreters::find(pid_t pid,
                                                            const std::vector<Mapping>& mappings) {
  for (const Mapping& mapping : mappings) {
    const PythonBinary* python = binary(pid, mapping);
    if (python == nullptr) continue;
    auto base = python->load_base(mapping.start, mapping.offset);
    if (!base) continue;
    if (python->offsets() == nullptr) {
      return Error(ErrorKind::kUnavailable,
                   "Python 3." + std::to_string(python->minor()) +
                       ", whose frames this agent cannot read: " + python->layout_error());
    }
    return std::optional(PythonImage{*python->offsets(), *base + python->runtime_address(),
                                     *base + python->code_type_address(), python->minor()});
  }
  return std::optional<PythonImage>();
}

}  // namespace dormant::profilers::system
