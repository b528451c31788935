// Tests of amp/nvfp4: e2m1 elements, e4m3 block scales and the fp32 tensor scale. The references
// are written here from the formats' fields and the rules in the header, by searching the value
// tables for the nearest value (ties to the even code); they use none of the helpers under test.
#include "amp/nvfp4.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/test_seed.hpp"

namespace {

using namespace mpbench::amp;

const float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// e2m1 from its fields: exponent bits 2..1 (bias 1), mantissa bit 0; exponent 0 is subnormal.
double ref_e2m1_magnitude(int code) {
  const int exponent = (code >> 1) & 3, mantissa = code & 1;
  if (exponent == 0) return 0.5 * mantissa;
  return std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
}

// e4m3 (e4m3fn) from its fields: 4 exponent bits (bias 7), 3 mantissa bits; 0x7F is NaN.
double ref_e4m3_magnitude(int code) {
  const int exponent = (code >> 3) & 15, mantissa = code & 7;
  if (exponent == 0) return std::ldexp(double(mantissa), -9);
  return std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
}

// The nearest of codes 0..max_code to |x| by value(code), ties to the even code; `beyond` is the
// value the next code would have (for the saturation test: |x| past the midpoint to it).
struct RefRounding {
  int code;
  bool saturated;
};
template <typename Value>
RefRounding ref_nearest(double magnitude, int max_code, double beyond, Value value) {
  if (magnitude >= (value(max_code) + beyond) / 2) return {max_code, true};
  int best = 0;
  for (int code = 1; code <= max_code; ++code) {
    const double d = std::abs(value(code) - magnitude), best_d = std::abs(value(best) - magnitude);
    if (d < best_d || (d == best_d && code % 2 == 0)) best = code;
  }
  return {best, false};
}

RefRounding ref_e2m1(float x) {
  const RefRounding r = ref_nearest(std::abs(double(x)), 7, 8.0, ref_e2m1_magnitude);
  return {std::signbit(x) ? r.code | 8 : r.code, r.saturated};
}

int ref_e4m3_scale(float v) { return ref_nearest(double(v), 0x7E, 480.0, ref_e4m3_magnitude).code; }

TEST(E2m1, EveryCodeDecodesToItsFieldValue) {
  for (int code = 0; code < 16; ++code) {
    const double want = (code & 8 ? -1 : 1) * ref_e2m1_magnitude(code & 7);
    EXPECT_EQ(double(e2m1_to_f32(uint8_t(code))), want) << code;
  }
  EXPECT_EQ(e2m1_to_f32(7), 6.0f);
  EXPECT_EQ(e2m1_to_f32(1), 0.5f);
  EXPECT_TRUE(std::signbit(e2m1_to_f32(8))) << "-0";
}

// Every bf16 pattern as an fp32 input, and the 8 fp32 values around each e2m1 value and each
// midpoint between two (and around 7, where saturation starts).
TEST(E2m1, EncodingIsTheNearestCodeTiesToEvenSaturating) {
  std::vector<float> inputs;
  for (uint32_t b = 0; b < 0x10000u; ++b) inputs.push_back(std::bit_cast<float>(b << 16));
  for (double point : {0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0}) {
    const uint32_t bits = std::bit_cast<uint32_t>(float(point));
    for (int d = -4; d <= 4; ++d) {
      if (point == 0 && d < 0) continue;
      const float x = std::bit_cast<float>(bits + d);
      inputs.push_back(x);
      inputs.push_back(-x);
    }
  }
  for (float x : inputs) {
    if (std::isnan(x)) continue;
    uint32_t saturated = 0;
    const uint8_t code = f32_to_e2m1(x, saturated);
    const RefRounding want = ref_e2m1(x);
    ASSERT_EQ(code, want.code) << x;
    ASSERT_EQ(saturated, want.saturated ? 1u : 0u) << x;
  }
  uint32_t saturated = 0;
  EXPECT_EQ(f32_to_e2m1(0.25f, saturated), 0) << "the tie goes to the even code, 0";
  EXPECT_EQ(f32_to_e2m1(0.75f, saturated), 2) << "to 1.0";
  EXPECT_EQ(f32_to_e2m1(2.5f, saturated), 4) << "to 2";
  EXPECT_EQ(f32_to_e2m1(5.0f, saturated), 6) << "to 4";
  EXPECT_EQ(f32_to_e2m1(6.9f, saturated), 7);
  EXPECT_EQ(saturated, 0u) << "below 7 rounds to 6 without the clamp";
  EXPECT_EQ(f32_to_e2m1(-kInf, saturated), 0xF);
  EXPECT_EQ(saturated, 1u);
}

// The reference quantization of one block, from the header's rules in fp32 (the rules' own
// arithmetic), with the table searches above for the e4m3 and e2m1 roundings.
struct RefBlock {
  int scale_code;
  std::vector<int> codes;
  int saturated = 0, underflowed = 0;
};

RefBlock ref_block(const float* x, int n, float s) {
  RefBlock r;
  float amax = 0;
  bool special = false;
  for (int i = 0; i < n; ++i) {
    special = special || !std::isfinite(x[i]);
    amax = std::max(amax, std::abs(x[i]));
  }
  if (special) {
    r.scale_code = 0x7F;
    r.codes.assign(n, 0);
    return r;
  }
  r.scale_code = ref_e4m3_scale(s * (amax * (1.0f / 6.0f)));
  const float v = float(ref_e4m3_magnitude(r.scale_code));
  const float encode = v == 0 ? 0.0f : 1.0f / (v * (1.0f / s));
  for (int i = 0; i < n; ++i) {
    const RefRounding e = ref_e2m1(x[i] * encode);
    r.codes.push_back(e.code);
    r.saturated += e.saturated;
    r.underflowed += (e.code & 7) == 0 && x[i] != 0;
  }
  return r;
}

// Puts every element of each block but its largest on an e2m1 midpoint (0.25 .. 5 units of the
// block's v / s, rounded to fp32): there the code depends on the rules' exact fp32 arithmetic
// (1 / (v * (1 / s)) rounds differently from s / v, and x * encode lands a few ulps either side).
// The block and tensor amax stay where they were, so the scales do too.
void place_on_midpoints(std::vector<float>& x, std::size_t rows, std::size_t cols, std::mt19937& rng) {
  constexpr double kMidpoints[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::abs(v));
  const float s = 2688.0f / amax;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t begin = r * cols; begin < (r + 1) * cols; begin += 16) {
      const std::size_t end = std::min(begin + 16, (r + 1) * cols);
      std::size_t top = begin;
      for (std::size_t i = begin; i < end; ++i)
        if (std::abs(x[i]) > std::abs(x[top])) top = i;
      const int scale = ref_e4m3_scale(s * (std::abs(x[top]) * (1.0f / 6.0f)));
      const double unit = ref_e4m3_magnitude(scale) / s;
      for (std::size_t i = begin; i < end; ++i) {
        const double m = kMidpoints[rng() % 7];
        if (i != top && m * unit < std::abs(x[top])) x[i] = float((rng() % 2 ? m : -m) * unit);
      }
    }
}

// Fresh random matrices over many binades (some blocks all zero, one tensor with a NaN), a tail
// block per row: codes, scales and counts are the reference's; the tensor scale is 448 * 6 / amax;
// dequantized values are within half an e2m1 step (times v / s) of x, or clamped at 6 v / s.
TEST(Nvfp4, RowsMatchTheReferenceOnRandomTensors) {
  const std::uint32_t seed = mpbench::testing_support::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (MPB_TEST_SEED)");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1, 1), binade(-30, 30);
  const std::size_t rows = 7, cols = 40;  // two full blocks and a tail of 8 per row
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::vector<float> x(rows * cols);
    const float spread = std::exp2(binade(rng));
    for (float& v : x) v = mantissa(rng) * spread * std::exp2(binade(rng) / 4);
    if (trial % 5 == 1) std::fill(x.begin() + 16, x.begin() + 32, 0.0f);  // a block of zeros
    if (trial % 2 == 0) place_on_midpoints(x, rows, cols, rng);
    if (trial == 3) x[50] = kNan;
    std::vector<uint8_t> codes(x.size()), scales(rows * nvfp4_blocks_per_row(cols));
    const Nvfp4Stats stats = nvfp4_quantize_rows(x, rows, cols, codes, scales);
    float amax = 0;
    for (float v : x) amax = std::max(amax, std::abs(v));
    const float s = trial == 3 ? 1.0f : 2688.0f / amax;
    ASSERT_EQ(stats.tensor_scale, s);
    uint64_t saturated = 0, underflowed = 0;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t b = 0; b < nvfp4_blocks_per_row(cols); ++b) {
        const std::size_t begin = r * cols + b * 16;
        const int n = int(std::min<std::size_t>(16, cols - b * 16));
        const RefBlock want = ref_block(x.data() + begin, n, s);
        ASSERT_EQ(scales[r * 3 + b], want.scale_code) << r << " " << b;
        for (int i = 0; i < n; ++i) ASSERT_EQ(codes[begin + i], want.codes[i]) << r << " " << b << " " << i;
        saturated += want.saturated;
        underflowed += want.underflowed;
      }
    EXPECT_EQ(stats.blocks.saturated, saturated);
    EXPECT_EQ(stats.blocks.underflowed, underflowed);
    EXPECT_EQ(stats.blocks.nan_blocks, trial == 3 ? 1u : 0u);
    std::vector<float> back(x.size());
    nvfp4_dequantize_rows(codes, scales, rows, cols, stats.tensor_scale, back);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const uint8_t scale = scales[(i / cols) * 3 + (i % cols) / 16];
      if (scale == 0x7F) {
        ASSERT_TRUE(std::isnan(back[i])) << i;
        continue;
      }
      const double unit = ref_e4m3_magnitude(scale) / s;  // one e2m1 unit of this block
      const double magnitude = std::abs(double(x[i])) / unit;
      const double step = magnitude < 2 ? 0.5 : magnitude < 4 ? 1.0 : 2.0;
      if (magnitude > 6) {
        ASSERT_FLOAT_EQ(std::abs(back[i]), float(6 * unit)) << "clamped " << i;
      } else {
        ASSERT_LE(std::abs(double(back[i]) - x[i]), step / 2 * unit * (1 + 1e-6) + 1e-45) << i;
      }
    }
  }
}

// A tensor whose amax is 2688 has s = 1, so the block values are those of the e4m3 scales.
TEST(Nvfp4, HandCases) {
  // Block 0: amax 2688 (scale 448, code 0x7E); the elements 2688 -> 6, 1344 -> 3, 300 -> 2688 *
  // 0.1116 = 0.67 units -> 0.5. Block 1: amax 0.0174 = 6 * 0.0029: s * 0.0029 lies between e4m3's
  // subnormals 2^-9 (0.00195) and 2^-8, nearer the first, so v = 2^-9 and 0.0174 / v = 8.9 saturates.
  // Block 2: zeros, scale code 0.
  std::vector<float> x(48, 0.0f);
  x[0] = 2688;
  x[1] = 1344;
  x[2] = -300;
  x[16] = 0.0174f;
  x[17] = 1e-4f;  // 0.05 units of v: underflows
  std::vector<uint8_t> codes(48), scales(3);
  const Nvfp4Stats stats = nvfp4_quantize_rows(x, 1, 48, codes, scales);
  EXPECT_EQ(stats.tensor_scale, 1.0f);
  EXPECT_EQ(scales[0], 0x7E);
  EXPECT_EQ(codes[0], 7);
  EXPECT_EQ(codes[1], 5);
  EXPECT_EQ(codes[2], 0x8 | 1) << "-0.67 units -> -0.5";
  EXPECT_EQ(scales[1], 1) << "2^-9, e4m3's smallest subnormal";
  EXPECT_EQ(codes[16], 7);
  EXPECT_EQ(codes[17], 0);
  EXPECT_EQ(scales[2], 0);
  EXPECT_EQ(stats.blocks.saturated, 1u);
  EXPECT_EQ(stats.blocks.underflowed, 1u);
  std::vector<float> back(48);
  nvfp4_dequantize_rows(codes, scales, 1, 48, stats.tensor_scale, back);
  EXPECT_EQ(back[0], 2688.0f);
  EXPECT_EQ(back[1], 1344.0f);
  EXPECT_EQ(back[2], -224.0f);
  EXPECT_EQ(back[16], 6.0f / 512);
  EXPECT_EQ(back[40], 0.0f);
  // amax 0, inf and NaN: s = 1; a tiny amax: FLT_MAX.
  EXPECT_EQ(nvfp4_tensor_scale(0.0f), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(kInf), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(kNan), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(1e-40f), std::numeric_limits<float>::max());
  EXPECT_EQ(nvfp4_tensor_scale(6.0f), 448.0f);
  // An infinite element: the block's scale is NaN, its codes zero, its values NaN.
  const float with_inf[2] = {1.0f, -kInf};
  uint8_t block_codes[2] = {9, 9};
  uint32_t saturated = 0, underflowed = 0;
  EXPECT_EQ(nvfp4_quantize_block(with_inf, 2, 1.0f, block_codes, saturated, underflowed), kNvfp4NanScale);
  EXPECT_EQ(block_codes[0], 0);
  EXPECT_TRUE(std::isnan(nvfp4_dequantize_element(block_codes[0], kNvfp4NanScale, 1.0f)));
  EXPECT_THROW(nvfp4_quantize_rows(x, 2, 48, codes, scales), std::invalid_argument);
}

}  // namespace
