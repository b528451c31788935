#include "amp/format_info.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace {

using namespace mpbench::num;

TEST(FormatInfo, PublishedConstants) {
  const FormatInfo& fp16 = format_info(Format::fp16);
  EXPECT_EQ(fp16.max_finite, 65504.0);
  EXPECT_EQ(fp16.min_normal, std::ldexp(1.0, -14));
  EXPECT_EQ(fp16.min_subnormal, std::ldexp(1.0, -24));
  EXPECT_EQ(fp16.eps, std::ldexp(1.0, -10));
  EXPECT_EQ(fp16.bias, 15);
  EXPECT_TRUE(fp16.has_inf);

  const FormatInfo& bf16 = format_info(Format::bf16);
  EXPECT_EQ(bf16.max_finite, double(3.38953139e38f));
  EXPECT_EQ(bf16.min_normal, double(std::numeric_limits<float>::min()));
  EXPECT_EQ(bf16.min_subnormal, std::ldexp(1.0, -133));
  EXPECT_EQ(bf16.eps, 0.0078125);

  const FormatInfo& e4m3 = format_info(Format::e4m3);
  EXPECT_EQ(e4m3.max_finite, 448.0);
  EXPECT_EQ(e4m3.min_normal, 0.015625);
  EXPECT_EQ(e4m3.min_subnormal, std::ldexp(1.0, -9));
  EXPECT_EQ(e4m3.eps, 0.125);
  EXPECT_EQ(e4m3.bias, 7);
  EXPECT_FALSE(e4m3.has_inf);
  EXPECT_EQ(e4m3.storage_bits, 8);

  const FormatInfo& e5m2 = format_info(Format::e5m2);
  EXPECT_EQ(e5m2.max_finite, 57344.0);
  EXPECT_EQ(e5m2.min_subnormal, std::ldexp(1.0, -16));
  EXPECT_TRUE(e5m2.has_inf);

  const FormatInfo& fp32 = format_info(Format::fp32);
  EXPECT_EQ(fp32.max_finite, double(std::numeric_limits<float>::max()));
  EXPECT_EQ(fp32.min_subnormal, double(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(fp32.eps, double(std::numeric_limits<float>::epsilon()));

  const FormatInfo& tf32 = format_info(Format::tf32);
  EXPECT_EQ(tf32.storage_bits, 32);
  EXPECT_EQ(tf32.significant_bits, 19);
  EXPECT_EQ(tf32.eps, std::ldexp(1.0, -10));
}

TEST(FormatInfo, TableAgreesWithConversions) {
  for (const FormatInfo& info : all_formats()) {
    const float max_finite = float(info.max_finite);
    EXPECT_EQ(round_to(info.format, max_finite), max_finite) << info.name;
    EXPECT_EQ(round_to(info.format, float(info.min_subnormal)), float(info.min_subnormal)) << info.name;
    EXPECT_EQ(round_to(info.format, float(info.min_subnormal / 2)), 0.0f) << info.name << " ties to even 0";
    EXPECT_EQ(round_to(info.format, float(1.0 + info.eps)), float(1.0 + info.eps)) << info.name;
    if (info.format != Format::fp32) {
      EXPECT_EQ(round_to(info.format, float(1.0 + info.eps / 2)), 1.0f) << info.name;
      const float past_max = float(info.max_finite * (1 + info.eps));
      const float overflowed = round_to(info.format, past_max);
      EXPECT_TRUE(info.has_inf ? std::isinf(overflowed) : std::isnan(overflowed)) << info.name;
    }
  }
}

TEST(FormatInfo, RoundingNeverMovesFartherThanHalfAnUlp) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(1.0f, 2.0f);
  for (const FormatInfo& info : all_formats()) {
    for (int i = 0; i < 10000; ++i) {
      const float x = unit(rng) * float(std::ldexp(1.0, int(rng() % 9) - 4));
      const double error = std::fabs(double(round_to(info.format, x)) - x) / x;
      ASSERT_LE(error, info.eps / 2) << info.name << " x=" << x;
    }
  }
}

TEST(FormatInfo, ParsesNamesAndAliases) {
  EXPECT_EQ(parse_format("fp16"), Format::fp16);
  EXPECT_EQ(parse_format("Half"), Format::fp16);
  EXPECT_EQ(parse_format("bfloat16"), Format::bf16);
  EXPECT_EQ(parse_format("float8_e4m3fn"), Format::e4m3);
  EXPECT_EQ(parse_format("FP8-E5M2"), Format::e5m2);
  EXPECT_EQ(parse_format("tf32"), Format::tf32);
  EXPECT_FALSE(parse_format("fp12").has_value());
  EXPECT_FALSE(parse_format("").has_value());
  EXPECT_EQ(format_names(), "fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2");
}

TEST(FormatInfo, EncodeGivesStoredBits) {
  EXPECT_EQ(encode(Format::fp16, 1.0f), 0x3C00u);
  EXPECT_EQ(encode(Format::bf16, -2.0f), 0xC000u);
  EXPECT_EQ(encode(Format::e4m3, 1000.0f, true), 0x7Eu);
  EXPECT_EQ(encode(Format::e4m3, 1000.0f, false), 0x7Fu);
  EXPECT_EQ(encode(Format::e5m2, 1.5f), 0x3Eu);
  EXPECT_EQ(encode(Format::tf32, 1.0f), 0x3F800000u >> 13);
  EXPECT_EQ(encode(Format::fp32, 1.0f), 0x3F800000u);
}

}  // namespace
