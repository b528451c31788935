#include <gtest/gtest.h>

#include "core/gemm.hpp"

namespace mpbench {
namespace {

TEST(GemmShape, ElementsAndBytesOfEachOperand) {
  const GemmShape s{3, 5, 7, 2};
  EXPECT_EQ(s.a_elements(), 2u * 3 * 7);
  EXPECT_EQ(s.b_elements(), 2u * 5 * 7);
  EXPECT_EQ(s.c_elements(), 2u * 3 * 5);
  EXPECT_DOUBLE_EQ(s.flops(), 2.0 * 2 * 3 * 5 * 7);
  EXPECT_EQ(gemm_operand_bytes(GemmPrecision::fp32, s), 4u * (42 + 70 + 30));
  EXPECT_EQ(gemm_operand_bytes(GemmPrecision::bf16, s), 2u * (42 + 70 + 30));
  EXPECT_EQ(gemm_operand_bytes(GemmPrecision::fp8_e4m3, s), 1u * (42 + 70) + 2u * 30);  // bf16 output
}

TEST(GemmShape, Fp8NeedsEveryDimensionAMultipleOf16) {
  EXPECT_FALSE(gemm_shape_rule(GemmPrecision::fp8_e4m3, {4096, 4096, 4096, 1}));
  for (const GemmShape s : {GemmShape{4095, 4096, 4096, 1}, GemmShape{4096, 4104, 4096, 1}, GemmShape{16, 16, 8, 1}})
    EXPECT_TRUE(gemm_shape_rule(GemmPrecision::fp8_e4m3, s)) << s.m << "x" << s.n << "x" << s.k;
  EXPECT_FALSE(gemm_shape_rule(GemmPrecision::bf16, {4095, 4097, 1, 1}));
}

}  // namespace
}  // namespace mpbench
