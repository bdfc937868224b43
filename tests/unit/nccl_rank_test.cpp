#include "profilers/gpu/nccl_rank.h"

#include <string>

#include <gtest/gtest.h>

namespace dormant::profilers::gpu {
namespace {

using namespace std::string_literals;

TEST(NcclRank, EachLaunchersVariableNamesTheRank) {
  EXPECT_EQ(rank_in_environment("PATH=/bin\0RANK=3\0"s), 3u);
  EXPECT_EQ(rank_in_environment("OMPI_COMM_WORLD_RANK=12\0"s), 12u);
  EXPECT_EQ(rank_in_environment("PMI_RANK=5"s), 5u);
  EXPECT_EQ(rank_in_environment("PMIX_RANK=6\0"s), 6u);
  EXPECT_EQ(rank_in_environment("SLURM_PROCID=7\0"s), 7u);
  // torchrun's global rank before Open MPI's, wherever each stands.
  EXPECT_EQ(rank_in_environment("OMPI_COMM_WORLD_RANK=1\0RANK=9\0"s), 9u);
}

TEST(NcclRank, NamesThatOnlyLookLikeItAndNumbersThatAreNotAreNone) {
  EXPECT_EQ(rank_in_environment("LOCAL_RANK=1\0RANKING=2\0"s), std::nullopt);
  for (std::string value : {"", "3x", "-1", " 3", "0x10", "16777216", "99999999999999999999"}) {
    EXPECT_EQ(rank_in_environment("RANK=" + value + '\0'), std::nullopt) << value;
  }
  EXPECT_EQ(rank_in_environment(""), std::nullopt);
  EXPECT_EQ(rank_in_environment("RANK"), std::nullopt);
}

TEST(NcclRank, OnlyAProcessThatMapsNcclIsARank) {
  system::Mapping nccl{0x1000, 0x2000, 0, 1, 42, "/opt/venv/nvidia/nccl/lib/libnccl.so.2"};
  system::Mapping other{0x3000, 0x4000, 0, 1, 43, "/usr/lib/libnccl-net.so"};
  system::Mapping pseudo{0x5000, 0x6000, 0, 0, 0, "libnccl.so.2"};
  EXPECT_TRUE(maps_nccl({other, nccl}));
  EXPECT_FALSE(maps_nccl({other, pseudo}));
  EXPECT_FALSE(nccl_rank(::getpid(), {other}).has_value());
}

}  // namespace
}  // namespace dormant::profilers::gpu
