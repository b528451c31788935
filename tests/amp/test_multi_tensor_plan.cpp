#include "amp/multi_tensor_plan.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

namespace {

using mpbench::amp::Launch;
using mpbench::amp::plan_launches;

void expect_exact_cover(const std::vector<int64_t>& sizes, int max_tensors, int max_blocks, int64_t chunk) {
  const std::vector<Launch> launches = plan_launches(sizes, max_tensors, max_blocks, chunk);
  std::map<std::pair<int, int32_t>, int> seen;
  for (const Launch& launch : launches) {
    ASSERT_FALSE(launch.blocks.empty());
    ASSERT_LE(int(launch.tensors.size()), max_tensors);
    ASSERT_LE(int(launch.blocks.size()), max_blocks);
    for (const auto& block : launch.blocks) {
      ASSERT_LT(block.tensor_slot, int(launch.tensors.size()));
      ++seen[{launch.tensors[block.tensor_slot], block.chunk}];
    }
  }
  std::size_t expected_chunks = 0;
  for (int t = 0; t < int(sizes.size()); ++t) {
    const int64_t chunks = (sizes[t] + chunk - 1) / chunk;
    for (int32_t c = 0; c < chunks; ++c) ASSERT_EQ((seen[{t, c}]), 1) << "tensor " << t << " chunk " << c;
    expected_chunks += std::size_t(chunks);
  }
  EXPECT_EQ(seen.size(), expected_chunks);
}

TEST(MultiTensorPlan, CoversEveryChunkOnce) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> sizes(1 + rng() % 120);
    for (int64_t& s : sizes) s = rng() % 4 == 0 ? 0 : int64_t(rng() % 5000);
    expect_exact_cover(sizes, 1 + int(rng() % 8), 1 + int(rng() % 12), 1 + int64_t(rng() % 700));
  }
}

TEST(MultiTensorPlan, HandWorked) {
  // Chunks of 10, at most 2 tensors and 3 blocks per launch.
  const std::vector<int64_t> sizes = {25, 0, 5, 40};
  const std::vector<Launch> launches = plan_launches(sizes, 2, 3, 10);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].tensors, (std::vector<int>{0}));        // chunks 0,1,2 of tensor 0
  EXPECT_EQ(launches[1].tensors, (std::vector<int>{2, 3}));     // tensor 2, chunks 0,1 of tensor 3
  EXPECT_EQ(launches[1].blocks.size(), 3u);
  EXPECT_EQ(launches[2].tensors, (std::vector<int>{3}));        // chunks 2,3 of tensor 3
  EXPECT_EQ(launches[2].blocks[0].chunk, 2);
  EXPECT_TRUE(plan_launches(std::vector<int64_t>{0, 0}, 4, 4, 8).empty());
}

}  // namespace
