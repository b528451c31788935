#include <gtest/gtest.h>

#include "core/peaks.hpp"

namespace mpbench {
namespace {

TEST(Datasheet, FindsH200ByItsDriverName) {
  const auto row = find_datasheet("NVIDIA H200");
  ASSERT_TRUE(row);
  EXPECT_EQ(row->gpu, "H200 SXM");
  EXPECT_DOUBLE_EQ(peak_tflops(*row, GemmPrecision::bf16), 989);
  EXPECT_DOUBLE_EQ(peak_tflops(*row, GemmPrecision::fp8_e4m3), 1979);
  EXPECT_DOUBLE_EQ(row->memory_gb_per_s, 4800);
}

TEST(Datasheet, LongestPatternWins) {
  EXPECT_EQ(find_datasheet("NVIDIA H100 PCIe")->gpu, "H100 PCIe");
  EXPECT_EQ(find_datasheet("NVIDIA H100 80GB HBM3")->gpu, "H100 SXM");
  EXPECT_EQ(find_datasheet("NVIDIA L40S")->gpu, "L40S");
  EXPECT_EQ(find_datasheet("NVIDIA L4")->gpu, "L4");
}

TEST(Datasheet, UnknownDeviceHasNoRow) { EXPECT_FALSE(find_datasheet("AMD EPYC 9654")); }

TEST(Datasheet, EveryRowNamesItsSourceAndHasFp32) {
  for (const auto& row : datasheet_table()) {
    EXPECT_FALSE(row.source.empty()) << row.gpu;
    EXPECT_GT(row.fp32_tflops, 0) << row.gpu;
    EXPECT_GT(row.memory_gb_per_s, 0) << row.gpu;
    // Tensor Core fp16 is always faster than CUDA-core fp32 on these parts.
    EXPECT_GT(row.fp16_tflops, row.fp32_tflops) << row.gpu;
  }
}

TEST(Datasheet, NoFp8BeforeAda) {
  EXPECT_EQ(peak_tflops(*find_datasheet("Tesla V100-SXM2-16GB"), GemmPrecision::fp8_e4m3), 0);
  EXPECT_EQ(peak_tflops(*find_datasheet("NVIDIA A100-SXM4-80GB"), GemmPrecision::fp8_e4m3), 0);
}

}  // namespace
}  // namespace mpbench
