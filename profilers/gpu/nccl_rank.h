// The rank of a process that is one of a collective job's ranks (it has NCCL loaded), as its
// launcher numbered it in its environment: torchrun's RANK, Open MPI's OMPI_COMM_WORLD_RANK,
// PMI_RANK (MPICH, Intel MPI), PMIX_RANK, Slurm's SLURM_PROCID, the first of them that is there.
// GPU stacks carry it as `[rank r]`, so that a host's ranks can be told apart in one flamegraph.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "profilers/system/process_maps.h"

namespace dormant::profilers::gpu {

// From an environment block as /proc/PID/environ holds it (NUL-separated); a rank that is not a
// plain decimal number below 2^24 is none.
std::optional<uint32_t> rank_in_environment(std::string_view environment);

bool maps_nccl(const std::vector<system::Mapping>& mappings);

// The rank of process `pid` if it maps NCCL and its environment names one.
std::optional<uint32_t> nccl_rank(int pid, const std::vector<system::Mapping>& mappings,
                                  const std::filesystem::path& proc = "/proc");

}  // namespace dormant::profilers::gpu
