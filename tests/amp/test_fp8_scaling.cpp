#include "amp/fp8_scaling.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace mpbench::amp;
using mpbench::num::Format;

DelayedScalingConfig config(int history, int margin = 0, AmaxAlgo algo = AmaxAlgo::max,
                            Format format = Format::e4m3) {
  DelayedScalingConfig c;
  c.history_length = history;
  c.margin = margin;
  c.algo = algo;
  c.format = format;
  return c;
}

TEST(DelayedScaling, HandWorkedHistoryOfThree) {
  DelayedScaler scaler(config(3));
  EXPECT_EQ(scaler.scale(), 1.0f);
  const float amaxes[] = {2, 8, 1, 1, 1};
  const float expected_scales[] = {224, 56, 56, 56, 448};  // 448 / max of the last three amaxes
  for (int step = 0; step < 5; ++step) {
    scaler.record_amax(amaxes[step]);
    scaler.update();
    EXPECT_EQ(scaler.scale(), expected_scales[step]) << "step " << step;
  }
  EXPECT_EQ(scaler.history(), (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(scaler.scale_inv(), 1.0f / 448);
}

TEST(DelayedScaling, MarginAndMostRecent) {
  DelayedScaler with_margin(config(4, 2));
  with_margin.record_amax(7);
  with_margin.update();
  EXPECT_EQ(with_margin.scale(), 448.0f / 4 / 7);
  DelayedScaler recent(config(16, 0, AmaxAlgo::most_recent, Format::e5m2));
  for (float amax : {64.0f, 4.0f}) {
    recent.record_amax(amax);
    recent.update();
  }
  EXPECT_EQ(recent.scale(), 57344.0f / 4);
}

TEST(DelayedScaling, UnusableAmaxKeepsPreviousScale) {
  DelayedScaler scaler(config(2));
  scaler.record_amax(4);
  scaler.update();
  EXPECT_EQ(scaler.scale(), 112.0f);
  scaler.record_amax(std::numeric_limits<float>::quiet_NaN());
  scaler.update();
  EXPECT_EQ(scaler.scale(), 112.0f);  // NaN in the window
  scaler.record_amax(2);
  scaler.update();
  EXPECT_EQ(scaler.scale(), 112.0f);  // NaN still in the window of two
  scaler.record_amax(2);
  scaler.update();
  EXPECT_EQ(scaler.scale(), 224.0f);
  DelayedScaler zeros(config(1));
  zeros.record_amax(0);
  zeros.update();
  EXPECT_EQ(zeros.scale(), 1.0f);
  DelayedScaler tiny(config(1));
  tiny.record_amax(1e-40f);
  tiny.update();
  EXPECT_EQ(tiny.scale(), std::numeric_limits<float>::max());
}

TEST(DelayedScaling, CountsSaturation) {
  DelayedScaler scaler(config(1));
  const std::vector<float> x = {500, -1000, 448, 464, 465, 1, std::numeric_limits<float>::infinity(), -0.5f};
  std::vector<uint8_t> q(x.size());
  const QuantizeStats stats = scaler.quantize(x, q);
  EXPECT_EQ(stats.saturated, 4u);  // 500, -1000, 465, inf; 464 ties down to 448
  EXPECT_EQ(q[0], 0x7E);
  EXPECT_EQ(q[1], 0xFE);
  EXPECT_EQ(q[3], 0x7E);
  EXPECT_EQ(q[6], 0x7E);
  EXPECT_EQ(q[7], 0xB0);
  EXPECT_TRUE(std::isinf(stats.amax));
  EXPECT_EQ(scaler.saturated_total(), 4u);
  EXPECT_EQ(stats.underflowed, 0u);
  uint32_t saturated = 0;
  EXPECT_EQ(quantize_fp8(std::numeric_limits<float>::quiet_NaN(), 1.0f, true, saturated), 0x7F);
  EXPECT_EQ(quantize_fp8(-70000.0f, 1.0f, false, saturated), 0xFB);
  EXPECT_EQ(quantize_fp8(61439.0f, 1.0f, false, saturated), 0x7B);
  EXPECT_EQ(saturated, 1u);
}

TEST(DelayedScaling, CountsUnderflow) {
  // Scale 1 (the first step): e4m3's smallest subnormal is 2^-9, so 2^-10 (a tie, to the even code
  // 0) and 2^-12 flush to zero and are counted; 1.5 * 2^-10 rounds up to 2^-9; zeros are not counted.
  DelayedScaler scaler(config(1));
  const std::vector<float> x = {0x1p-10f, -0x1p-12f, 0x1.8p-10f, 0.0f, -0.0f, 1.0f};
  std::vector<uint8_t> q(x.size());
  const QuantizeStats stats = scaler.quantize(x, q);
  EXPECT_EQ(stats.underflowed, 2u);
  EXPECT_EQ(q[1], 0x80);
  EXPECT_EQ(q[2], 0x01);
}

TEST(DelayedScaling, ScaledRoundTripIsAccurateAfterOneStep) {
  std::mt19937 rng(31);
  std::normal_distribution<float> normal(0.0f, 3e-3f);  // far below e4m3's normal range unscaled
  std::vector<float> x(20000);
  for (float& v : x) v = normal(rng);
  DelayedScaler scaler(config(8));
  std::vector<uint8_t> q(x.size());
  const QuantizeStats first = scaler.quantize(x, q);
  EXPECT_GT(first.amax, 0.0f);
  scaler.update();
  const QuantizeStats second = scaler.quantize(x, q);
  EXPECT_EQ(second.saturated, 0u);
  EXPECT_EQ(scaler.scale(), 448.0f / first.amax);
  int checked = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::fabs(x[i] * scaler.scale()) < 0.015625f) continue;  // e4m3 subnormals: absolute error
    const float back = dequantize_fp8(q[i], scaler.scale_inv(), true);
    ASSERT_LE(std::fabs(back - x[i]), std::fabs(x[i]) * 0.0625f * 1.0001f) << x[i];
    ++checked;
  }
  EXPECT_GT(checked, 15000);
}

TEST(DelayedScaling, RejectsBadConfig) {
  EXPECT_THROW(DelayedScaler(config(0)), std::invalid_argument);
  EXPECT_THROW(DelayedScaler(config(4, -1)), std::invalid_argument);
  EXPECT_THROW(DelayedScaler(config(4, 0, AmaxAlgo::max, Format::bf16)), std::invalid_argument);
}

}  // namespace
