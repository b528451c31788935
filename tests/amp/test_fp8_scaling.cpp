#include "amp/fp8_scaling.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/test_seed.hpp"

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

// ---- the vectorized loops against the scalar per-element functions --------------------------------

using mpbench::testing_support::test_seed;

// quantize_fp8 with the underflow count the whole-tensor loops add: the scalar oracle.
struct ScalarCode {
  uint8_t code;
  uint32_t saturated;
  uint32_t underflowed;
};
ScalarCode scalar_quantize(float x, float scale, bool e4m3) {
  uint32_t saturated = 0;
  const uint8_t code = quantize_fp8(x, scale, e4m3, saturated);
  return {code, saturated, uint32_t((code & 0x7Fu) == 0 && x != 0.0f)};
}

void expect_branchless_matches(float x, float scale, bool e4m3) {
  const ScalarCode want = scalar_quantize(x, scale, e4m3);
  uint32_t saturated = 0, underflowed = 0;
  const uint8_t code = e4m3 ? quantize_fp8_branchless<true>(x, scale, saturated, underflowed)
                            : quantize_fp8_branchless<false>(x, scale, saturated, underflowed);
  ASSERT_EQ(code, want.code) << "x=" << x << " bits 0x" << std::hex << mpbench::num::float_to_bits(x) << " scale "
                             << scale << (e4m3 ? " e4m3" : " e5m2");
  ASSERT_EQ(saturated, want.saturated) << x;
  ASSERT_EQ(underflowed, want.underflowed) << x;
}

// Every sign and exponent with the mantissas where rounding decides (0, 1, just below, at and
// above the half-way point of e4m3's and e5m2's last place, all ones), then a stride through all
// 2^32 patterns (NaN payloads, infinities, fp32 subnormals), at scale 1 and a power of two.
TEST(Fp8Branchless, MatchesQuantizeFp8OverEveryBinade) {
  const uint32_t mantissas[] = {0u,       1u,       0x7FFFFu, 0x80000u, 0x80001u, 0xFFFFFu, 0x100000u,
                                0x17FFFFu, 0x180000u, 0x180001u, 0x2FFFFFu, 0x300000u, 0x7FFFFFu};
  for (bool e4m3 : {true, false}) {
    for (float scale : {1.0f, 0x1p-3f}) {
      for (uint32_t top = 0; top < 512; ++top)
        for (uint32_t m : mantissas)
          expect_branchless_matches(mpbench::num::bits_to_float((top << 23) | m), scale, e4m3);
      for (uint64_t bits = 0; bits < (1ull << 32); bits += 4099)
        expect_branchless_matches(mpbench::num::bits_to_float(uint32_t(bits)), scale, e4m3);
    }
  }
}

// The subnormal range rounds in quanta of 2^-9 (e4m3) or 2^-16 (e5m2): every half quantum (the ties)
// and its neighbours, under random scales as the recipes make them.
TEST(Fp8Branchless, MatchesQuantizeFp8OnSubnormalTiesAndRandomScales) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (bool e4m3 : {true, false}) {
    const float quantum = e4m3 ? 0x1p-9f : 0x1p-16f;
    for (int half_quanta = 0; half_quanta <= 40; ++half_quanta) {
      const float tie = float(half_quanta) * 0.5f * quantum;
      for (float x : {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 1.0f), -tie})
        expect_branchless_matches(x, 1.0f, e4m3);
    }
    for (int i = 0; i < 200000; ++i) {
      // A positive finite scale from any binade, and any input pattern.
      const float scale = mpbench::num::bits_to_float(1u + any_bits(rng) % 0x7F7FFFFFu);
      expect_branchless_matches(mpbench::num::bits_to_float(any_bits(rng)), scale, e4m3);
    }
  }
}

// Tensors over many binades with NaN, infinities, zeros and fp32 subnormals mixed in.
std::vector<float> special_tensor(std::size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> binade(-149, 20);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> percent(0, 99);
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, inf, -inf,
                            std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(), -0x1p-130f, 448.0f, 464.0f, 57344.0f, 61440.0f};
  std::vector<float> x(n);
  for (float& v : x) {
    const int p = percent(rng);
    if (p < 3) v = specials[std::size_t(rng()) % std::size(specials)];
    else v = (p % 2 ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), binade(rng));
  }
  return x;
}

bool same_bits(float a, float b) { return mpbench::num::float_to_bits(a) == mpbench::num::float_to_bits(b); }

// Lengths around the vector widths, the 16384-element chunks and the threading threshold, so the
// loops' tails and the threaded path run; both instruction sets the CPU has.
TEST(Fp8TensorLoops, MatchScalarFunctionsOnRandomTensors) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937 rng(seed);
  const Fp8LoopIsa initial = fp8_loop_isa();
  for (Fp8LoopIsa isa : {Fp8LoopIsa::baseline, Fp8LoopIsa::avx512}) {
    if (set_fp8_loop_isa(isa) != isa) continue;  // this CPU has no AVX-512
    SCOPED_TRACE(isa == Fp8LoopIsa::avx512 ? "avx512" : "baseline");
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(15), std::size_t(17),
                          std::size_t(31), std::size_t(33), std::size_t(1003), std::size_t(16385),
                          kFp8ParallelElements + 45}) {
      const std::vector<float> x = special_tensor(n, rng);
      uint32_t want_amax = 0;
      for (float v : x) want_amax = fold_amax_bits(want_amax, v);
      ASSERT_EQ(amax_bits(x), want_amax) << n;
      for (bool e4m3 : {true, false}) {
        const float scale = std::ldexp(std::uniform_real_distribution<float>(1.0f, 2.0f)(rng), int(rng() % 40) - 20);
        std::vector<uint8_t> q(n);
        const Fp8TensorCounts counts = quantize_fp8_tensor(x, scale, e4m3, q);
        uint64_t saturated = 0, underflowed = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const ScalarCode want = scalar_quantize(x[i], scale, e4m3);
          ASSERT_EQ(q[i], want.code) << "n " << n << " element " << i << " x=" << x[i];
          saturated += want.saturated;
          underflowed += want.underflowed;
        }
        EXPECT_EQ(counts.saturated, saturated) << n;
        EXPECT_EQ(counts.underflowed, underflowed) << n;
        std::vector<float> back(n);
        dequantize_fp8_tensor(q, 1.0f / scale, e4m3, back);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_TRUE(same_bits(back[i], dequantize_fp8(q[i], 1.0f / scale, e4m3))) << "n " << n << " element " << i;
      }
    }
  }
  set_fp8_loop_isa(initial);
}

// DelayedScaler::quantize (the threaded loops) against quantize_fp8 with its scale, element by
// element, amax and counts included.
TEST(DelayedScaling, QuantizeMatchesTheScalarFunction) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937 rng(seed);
  for (Format format : {Format::e4m3, Format::e5m2}) {
    DelayedScaler scaler(config(4, 0, AmaxAlgo::max, format));
    scaler.record_amax(3.0f);
    scaler.update();  // a scale other than 1
    std::vector<float> x = special_tensor(kFp8ParallelElements + 77, rng);
    for (float& v : x)
      if (std::isnan(v)) v = 1.0f;  // a finite amax: NaN's is checked in CountsSaturation's style below
    std::vector<uint8_t> q(x.size());
    const QuantizeStats stats = scaler.quantize(x, q);
    float amax = 0;
    uint64_t saturated = 0, underflowed = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const ScalarCode want = scalar_quantize(x[i], scaler.scale(), format == Format::e4m3);
      ASSERT_EQ(q[i], want.code) << i;
      amax = std::max(amax, std::fabs(x[i]));
      saturated += want.saturated;
      underflowed += want.underflowed;
    }
    EXPECT_EQ(stats.amax, amax);
    EXPECT_EQ(stats.saturated, saturated);
    EXPECT_EQ(stats.underflowed, underflowed);
    x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(scaler.quantize(x, q).amax));
  }
}

TEST(DelayedScaling, RejectsBadConfig) {
  EXPECT_THROW(DelayedScaler(config(0)), std::invalid_argument);
  EXPECT_THROW(DelayedScaler(config(4, -1)), std::invalid_argument);
  EXPECT_THROW(DelayedScaler(config(4, 0, AmaxAlgo::max, Format::bf16)), std::invalid_argument);
}

}  // namespace
