#include "amp/master_weights.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace {

using mpbench::amp::MasterWeights;
using mpbench::num::Format;
namespace num = mpbench::num;

// 1000 updates each below half an ulp of the weight: low-precision weights never move, the
// master accumulates them and the working copy follows.
void expect_master_keeps_small_updates(Format working, float update) {
  const std::vector<float> initial = {1.0f, -1.0f, 0.75f};
  MasterWeights weights(initial, working);
  std::vector<float> low_precision_only(initial);
  for (int step = 0; step < 1000; ++step) {
    for (std::size_t i = 0; i < initial.size(); ++i) {
      weights.master()[i] -= update;
      low_precision_only[i] = num::round_to(working, low_precision_only[i] - update);
    }
    weights.refresh();
  }
  for (std::size_t i = 0; i < initial.size(); ++i) {
    EXPECT_EQ(low_precision_only[i], initial[i]) << "update should be lost without a master copy";
    const float expected = initial[i] - 1000 * update;
    EXPECT_NEAR(weights.master()[i], expected, 1e-4f);
    EXPECT_EQ(weights.working_value(i), num::round_to(working, weights.master()[i]));
  }
}

TEST(MasterWeights, Fp16KeepsUpdatesBelowHalfAnUlp) { expect_master_keeps_small_updates(Format::fp16, 2e-4f); }

TEST(MasterWeights, Bf16KeepsUpdatesBelowHalfAnUlp) { expect_master_keeps_small_updates(Format::bf16, 1e-3f); }

TEST(MasterWeights, RefreshRoundsToNearestEven) {
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> initial(4096);
  for (float& w : initial) w = normal(rng);
  for (Format f : {Format::fp16, Format::bf16}) {
    MasterWeights weights(initial, f);
    EXPECT_EQ(weights.working_format(), f);
    for (std::size_t i = 0; i < initial.size(); ++i) {
      const uint16_t expected = f == Format::fp16 ? num::f32_to_f16_bits(initial[i]) : num::f32_to_bf16_bits(initial[i]);
      ASSERT_EQ(weights.working_bits()[i], expected);
    }
  }
}

TEST(MasterWeights, RejectsOtherFormats) {
  const std::vector<float> w = {1.0f};
  EXPECT_THROW(MasterWeights(w, Format::e4m3), std::invalid_argument);
  EXPECT_THROW(MasterWeights(w, Format::fp32), std::invalid_argument);
}

}  // namespace
