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

TEST(Datasheet, EachVariantByItsExactName) {
  EXPECT_EQ(find_datasheet("NVIDIA H100 PCIe")->gpu, "H100 PCIe");
  EXPECT_EQ(find_datasheet("NVIDIA H100 80GB HBM3")->gpu, "H100 SXM");
  EXPECT_EQ(find_datasheet("NVIDIA L40S")->gpu, "L40S");
  EXPECT_EQ(find_datasheet("NVIDIA L4")->gpu, "L4");
}

TEST(Datasheet, UnknownDeviceHasNoRow) { EXPECT_FALSE(find_datasheet("AMD EPYC 9654")); }

TEST(Datasheet, AVariantTheTableLacksGetsNoNeighboursFigures) {
  // Each differs from the row whose name it contains (bandwidth, clocks or power limit).
  for (const char* name : {"NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA A10", "NVIDIA L40", "NVIDIA A100-SXM4-40GB",
                           "NVIDIA A100-PCIE-40GB", "Tesla V100-PCIE-16GB", "NVIDIA H100", "NVIDIA H20", "NVIDIA B200A"})
    EXPECT_FALSE(find_datasheet(name)) << name << " got the figures of " << find_datasheet(name)->gpu;
  EXPECT_EQ(find_datasheet("  nvidia h200 ")->gpu, "H200 SXM");
}

TEST(Datasheet, EveryDriverNameIsInOneRowOnly) {
  for (const auto& row : datasheet_table()) {
    ASSERT_FALSE(row.driver_names.empty()) << row.gpu;
    for (const auto& name : row.driver_names) EXPECT_EQ(find_datasheet(name)->gpu, row.gpu) << name;
  }
}

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
