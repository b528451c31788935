// What the CPU backend says it can do matches the CPU, and oneDNN's choice is recorded.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

namespace mpbench {
namespace {

TEST(CpuBackend, DescribesTheHost) {
  auto cpu = cpu::make_backend();
  EXPECT_EQ(cpu->device().backend, "cpu");
  EXPECT_EQ(cpu->device().name, describe_cpu().model);
  EXPECT_GT(cpu->device().l2_bytes, 0u);
  EXPECT_FALSE(cpu->environment()["onednn"]["version"].get<std::string>().empty());
}

TEST(CpuBackend, NoTensorCoreOnlyPrecisions) {
  auto cpu = cpu::make_backend();
  EXPECT_FALSE(cpu->gemm_unsupported(GemmPrecision::fp32));
  for (auto p : {GemmPrecision::tf32, GemmPrecision::fp16_acc16, GemmPrecision::fp8_e4m3}) {
    const auto why = cpu->gemm_unsupported(p);
    ASSERT_TRUE(why) << gemm_precision_info(p).name;
    EXPECT_FALSE(why->empty());
  }
}

TEST(CpuBackend, Bf16UsesTheBf16PathWhereTheCpuHasIt) {
  if (!describe_cpu().has("avx512_bf16") && !describe_cpu().has("amx_bf16"))
    GTEST_SKIP() << "this CPU has neither AVX512-BF16 nor AMX-BF16";
  auto cpu = cpu::make_backend();
  ASSERT_FALSE(cpu->gemm_unsupported(GemmPrecision::bf16));
  DeviceBuffer a = cpu->allocate(DType::bf16, 256 * 256), b = cpu->allocate(DType::bf16, 256 * 256);
  DeviceBuffer c = cpu->allocate(DType::bf16, 256 * 256);
  cpu->fill_uniform(a, 1, -1, 1);
  cpu->fill_uniform(b, 2, -1, 1);
  auto gemm = cpu->make_gemm(GemmPrecision::bf16, {256, 256, 256, 1}, a, b, c);
  const std::string impl = gemm->details()["implementation"];
  EXPECT_NE(impl.find("bf16"), std::string::npos) << impl;
}

TEST(CpuBackend, Fp16NeedsAvx512Fp16) {
  auto cpu = cpu::make_backend();
  const auto why = cpu->gemm_unsupported(GemmPrecision::fp16);
  if (describe_cpu().has("avx512_fp16") || describe_cpu().has("amx_fp16")) GTEST_SKIP() << "this CPU has fp16 matmul";
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("oneDNN"), std::string::npos);
}

TEST(CpuBackend, UnknownIsaIsAUsageError) { EXPECT_THROW(cpu::limit_isa("avx1024"), UsageError); }

TEST(CpuBackend, NoHostTransfersWithoutAGpu) {
  auto cpu = cpu::make_backend();
  std::string why;
  EXPECT_EQ(cpu->make_host_transfer(TransferDirection::host_to_device, 1024, &why), nullptr);
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace mpbench
