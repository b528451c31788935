#include "amp/loss_scaler.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using mpbench::amp::LossScaler;
using mpbench::amp::ScalerConfig;

std::vector<float> random_grads(std::mt19937& rng, std::size_t n, float spread) {
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> g(n);
  for (float& x : g) x = normal(rng);
  return g;
}

// Runs one step whose gradients are finite or not, as a training loop would.
void step(LossScaler& scaler, bool overflow, std::mt19937& rng) {
  std::vector<float> grads = random_grads(rng, 16, 1000.0f);
  if (overflow) grads[rng() % grads.size()] = std::numeric_limits<float>::infinity();
  const std::span<float> tensors[] = {grads};
  EXPECT_EQ(scaler.unscale(tensors), overflow);
  scaler.update();
}

TEST(LossScaler, GradScalerDefaults) {
  const ScalerConfig config;
  EXPECT_EQ(config.init_scale, 65536.0f);
  EXPECT_EQ(config.growth_factor, 2.0);
  EXPECT_EQ(config.backoff_factor, 0.5);
  EXPECT_EQ(config.growth_interval, 2000);
  const LossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  EXPECT_EQ(scaler.scale_loss(1.5f), 98304.0f);
}

TEST(LossScaler, OverflowAtFirstStepBacksOffAndSkips) {
  LossScaler scaler;
  std::mt19937 rng(1);
  std::vector<float> a = random_grads(rng, 1000, 1e4f);
  std::vector<float> b = random_grads(rng, 333, 1e2f);
  const std::vector<float> a_before = a;
  const std::vector<float> b_before = b;
  b[17] = std::numeric_limits<float>::quiet_NaN();
  const std::span<float> tensors[] = {a, b};
  EXPECT_TRUE(scaler.unscale(tensors));
  EXPECT_TRUE(scaler.found_inf());
  // Every tensor is still unscaled, before and after the NaN.
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], a_before[i] / 65536.0f);
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i != 17) {
      ASSERT_EQ(b[i], b_before[i] * (1.0f / 65536.0f));
    }
  }
  scaler.update();
  EXPECT_EQ(scaler.scale(), 32768.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
  EXPECT_EQ(scaler.state().steps, 1);
  EXPECT_FALSE(scaler.found_inf());
}

TEST(LossScaler, GrowsAfter2000CleanSteps) {
  LossScaler scaler;
  std::mt19937 rng(2);
  for (int i = 0; i < 1999; ++i) step(scaler, false, rng);
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 1999);
  step(scaler, false, rng);
  EXPECT_EQ(scaler.scale(), 131072.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  EXPECT_EQ(scaler.state().skipped_steps, 0);
}

TEST(LossScaler, OverflowAtStep2000ResetsTheCount) {
  LossScaler scaler;
  std::mt19937 rng(3);
  for (int i = 0; i < 1999; ++i) step(scaler, false, rng);
  step(scaler, true, rng);
  EXPECT_EQ(scaler.scale(), 32768.0f);
  for (int i = 0; i < 1999; ++i) step(scaler, false, rng);
  EXPECT_EQ(scaler.scale(), 32768.0f);
  step(scaler, false, rng);
  EXPECT_EQ(scaler.scale(), 65536.0f);
}

TEST(LossScaler, AlternatingStepsOnlyBackOff) {
  LossScaler scaler;
  std::mt19937 rng(4);
  for (int pair = 0; pair < 10; ++pair) {
    step(scaler, false, rng);
    EXPECT_EQ(scaler.state().growth_tracker, 1);
    step(scaler, true, rng);
    EXPECT_EQ(scaler.state().growth_tracker, 0);
  }
  EXPECT_EQ(scaler.scale(), 64.0f);  // 65536 / 2^10
  EXPECT_EQ(scaler.state().skipped_steps, 10);
  EXPECT_EQ(scaler.state().steps, 20);
}

TEST(LossScaler, GrowthThatWouldOverflowIsDropped) {
  ScalerConfig config;
  config.init_scale = std::ldexp(1.0f, 127);
  config.growth_interval = 3;
  LossScaler scaler(config);
  std::mt19937 rng(5);
  for (int i = 0; i < 3; ++i) step(scaler, false, rng);
  EXPECT_EQ(scaler.scale(), std::ldexp(1.0f, 127));
  EXPECT_EQ(scaler.state().growth_tracker, 0);
}

TEST(LossScaler, NoFloorWithoutApexOption) {
  // PyTorch has no minimum: 16 + 149 halvings reach the smallest subnormal, one more gives 0.
  LossScaler scaler;
  std::mt19937 rng(6);
  for (int i = 0; i < 165; ++i) step(scaler, true, rng);
  EXPECT_EQ(scaler.scale(), std::numeric_limits<float>::denorm_min());
  step(scaler, true, rng);
  EXPECT_EQ(scaler.scale(), 0.0f);
}

TEST(LossScaler, ApexFloorAndCap) {
  ScalerConfig config = LossScaler::apex_config(1.0f);
  EXPECT_EQ(config.max_scale, 16777216.0f);
  config.growth_interval = 1;
  LossScaler scaler(config);
  std::mt19937 rng(7);
  for (int i = 0; i < 8; ++i) step(scaler, false, rng);
  EXPECT_EQ(scaler.scale(), 16777216.0f);  // 2^16 * 2^8 = 2^24, the cap
  step(scaler, false, rng);
  EXPECT_EQ(scaler.scale(), 16777216.0f);
  for (int i = 0; i < 40; ++i) step(scaler, true, rng);
  EXPECT_EQ(scaler.scale(), 1.0f);  // the floor

  ScalerConfig capped_start;
  capped_start.max_scale = 1024.0f;
  EXPECT_EQ(LossScaler(capped_start).scale(), 1024.0f);  // apex starts at min(max, init)
}

TEST(LossScaler, StaticScaleNeverMovesButStillSkips) {
  LossScaler scaler(LossScaler::static_config(128.0f));
  std::mt19937 rng(8);
  for (int i = 0; i < 2500; ++i) step(scaler, i % 100 == 7, rng);
  EXPECT_EQ(scaler.scale(), 128.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 25);
}

TEST(LossScaler, UnscaleTwicePerStepIsAnError) {
  LossScaler scaler;
  std::vector<float> g = {1.0f, 2.0f};
  const std::span<float> tensors[] = {g};
  scaler.unscale(tensors);
  EXPECT_THROW(scaler.unscale(tensors), std::logic_error);
  scaler.update();
  EXPECT_NO_THROW(scaler.unscale(tensors));
}

TEST(LossScaler, RejectsFactorsGradScalerRejects) {
  ScalerConfig config;
  config.growth_factor = 1.0;
  EXPECT_THROW(LossScaler{config}, std::invalid_argument);
  config = {};
  config.backoff_factor = 1.0;
  EXPECT_THROW(LossScaler{config}, std::invalid_argument);
  config = {};
  config.init_scale = 0.0f;
  EXPECT_THROW(LossScaler{config}, std::invalid_argument);
}

// Against a plain transcription of GradScaler's documented rule over a long random sequence with
// a non-default interval and factors that are not powers of two.
TEST(LossScaler, MatchesDocumentedRuleOnRandomSequence) {
  ScalerConfig config;
  config.init_scale = 1000.0f;
  config.growth_factor = 1.7;
  config.backoff_factor = 0.3;
  config.growth_interval = 37;
  LossScaler scaler(config);
  std::mt19937 rng(9);
  float scale = 1000.0f;
  int tracker = 0;
  int overflows = 0;
  for (int i = 0; i < 20000; ++i) {
    const bool overflow = rng() % 60 == 0;
    overflows += overflow;
    step(scaler, overflow, rng);
    if (overflow) {
      scale = static_cast<float>(scale * 0.3);
      tracker = 0;
    } else if (++tracker == 37) {
      const float grown = static_cast<float>(scale * 1.7);
      if (std::isfinite(grown)) scale = grown;
      tracker = 0;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(scaler.scale()), std::bit_cast<uint32_t>(scale)) << "step " << i;
    ASSERT_EQ(scaler.state().growth_tracker, tracker) << "step " << i;
  }
  EXPECT_EQ(scaler.state().skipped_steps, overflows);
  EXPECT_GT(overflows, 100);
}

TEST(LossScaler, RestoreContinuesFromSavedState) {
  LossScaler first;
  std::mt19937 rng(10);
  for (int i = 0; i < 1500; ++i) step(first, false, rng);
  LossScaler second;
  second.restore(first.state());
  for (int i = 0; i < 500; ++i) step(second, false, rng);
  EXPECT_EQ(second.scale(), 131072.0f);
  EXPECT_EQ(second.state().steps, 2000);
}

}  // namespace
