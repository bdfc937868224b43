#include "profilers/gpu/nccl_rank.h"

#include <algorithm>

#include <fcntl.h>

#include "common/atomic_file.h"
#include "common/text.h"
#include "common/unique_fd.h"

namespace dormant::profilers::gpu {
namespace {

constexpr std::string_view kRankVariables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                               "PMIX_RANK", "SLURM_PROCID"};
constexpr uint32_t kMaxRank = 1u << 24;
constexpr size_t kMaxEnvironmentBytes = 4u << 20;

std::optional<uint32_t> plain_number(std::string_view text) {
  auto value = parse_integer(text);
  if (!value || *value < 0 || *value >= kMaxRank) return std::nullopt;
  return static_cast<uint32_t>(*value);
}

}  // namespace

std::optional<uint32_t> rank_in_environment(std::string_view environment) {
  for (std::string_view wanted : kRankVariables) {
    size_t at = 0;
    while (at < environment.size()) {
      size_t end = std::min(environment.find('\0', at), environment.size());
      std::string_view entry = environment.substr(at, end - at);
      at = end + 1;
      if (entry.size() > wanted.size() && entry.starts_with(wanted) &&
          entry[wanted.size()] == '=') {
        return plain_number(entry.substr(wanted.size() + 1));
      }
    }
  }
  return std::nullopt;
}

bool maps_nccl(const std::vector<system::Mapping>& mappings) {
  return std::any_of(mappings.begin(), mappings.end(), [](const system::Mapping& mapping) {
    std::string_view path = mapping.path;
    std::string_view file = path.substr(path.rfind('/') + 1);
    return mapping.is_file() && file.starts_with("libnccl.so");
  });
}

std::optional<uint32_t> nccl_rank(int pid, const std::vector<system::Mapping>& mappings,
                                  const std::filesystem::path& proc) {
  if (!maps_nccl(mappings)) return std::nullopt;
  auto path = proc / std::to_string(pid) / "environ";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  auto environment = read_rest(fd.get(), path.string(), kMaxEnvironmentBytes);
  if (!environment) return std::nullopt;
  return rank_in_environment(*environment);
}

}  // namespace dormant::profilers::gpu
