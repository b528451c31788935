// Tests of amp/block_scaling: e8m0 codes, OCP MX (MXFP8) block quantization and per-tensor current
// scaling. The references here are written in double from the formats' fields and the spec's
// rules; they use none of the helpers under test (no mx_scale_code, floor_log2_f32, encode, ...).
#include "amp/block_scaling.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/test_seed.hpp"

namespace {

using namespace mpbench::amp;
using mpbench::num::Format;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

// ---- an independent fp8 reference ---------------------------------------------------------------

// An fp8 format from its fields: magnitude codes 0..max_code are finite; `beyond` is the code after
// max_code, whose value (by the same field formula) is where rounding past the max would go.
struct RefFormat {
  int mantissa_bits;
  int bias;
  int max_code;
  int beyond;
  double value(int magnitude_code) const {
    const int exponent = magnitude_code >> mantissa_bits;
    const int mantissa = magnitude_code & ((1 << mantissa_bits) - 1);
    if (exponent == 0) return std::ldexp(double(mantissa), 1 - bias - mantissa_bits);
    return std::ldexp(1.0 + std::ldexp(double(mantissa), -mantissa_bits), exponent - bias);
  }
  double max_finite() const { return value(max_code); }
  int emax() const {  // exponent of the largest normal, from frexp
    int e = 0;
    std::frexp(max_finite(), &e);
    return e - 1;
  }
};

const RefFormat kRefE4m3{3, 7, 0x7E, 0x7F};  // 448; beyond 480 (S.1111.111 is NaN)
const RefFormat kRefE5m2{2, 15, 0x7B, 0x7C};  // 57344; beyond 65536 (S.11111.00 is inf)

const RefFormat& ref_format(bool e4m3) { return e4m3 ? kRefE4m3 : kRefE5m2; }

struct RefRounded {
  int magnitude_code;
  bool saturated;
};

// |v| (finite) to the nearest value of f, ties to the even code, saturating to max_code; saturated
// when the unclamped rounding would have gone past max_code.
RefRounded ref_round(double magnitude, const RefFormat& f) {
  if (magnitude > f.value(f.beyond)) return {f.max_code, true};
  int best = 0;
  for (int c = 1; c <= f.beyond; ++c) {
    const double d_best = std::fabs(magnitude - f.value(best));
    const double d = std::fabs(magnitude - f.value(c));
    if (d < d_best || (d == d_best && (c % 2) == 0)) best = c;
  }
  if (best == f.beyond) return {f.max_code, true};
  return {best, false};
}

// ---- the MX reference ---------------------------------------------------------------------------

struct RefMx {
  std::vector<uint8_t> scales;
  std::vector<uint8_t> codes;
  std::vector<double> values;  // dequantized, NaN for a NaN block
  uint64_t saturated = 0;
  uint64_t underflowed = 0;
  uint64_t nan_blocks = 0;
};

// OCP MX v1.0 Algorithm 1 in double: X = 2^(floor(log2(amax)) - emax_elem), floor(log2) by frexp;
// exponent clamped to e8m0's -127; amax 0 -> 2^-127; NaN or inf in the block -> NaN scale.
// Rounding up (Transformer Engine): the smallest power of two X with amax / X <= max finite.
void ref_mx_block(const float* x, int n, bool e4m3, RefMx& out, MxScaleRounding rounding = MxScaleRounding::down) {
  const RefFormat& f = ref_format(e4m3);
  bool special = false;
  double amax = 0;
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) special = true;
    else amax = std::max(amax, std::fabs(double(x[i])));
  }
  if (special) {
    out.scales.push_back(0xFF);
    out.nan_blocks += 1;
    for (int i = 0; i < n; ++i) {
      out.codes.push_back(0x7F);
      out.values.push_back(std::nan(""));
    }
    return;
  }
  int e = -127;
  if (amax > 0) {
    int frexp_exponent = 0;
    std::frexp(amax, &frexp_exponent);  // amax = m * 2^frexp_exponent, m in [0.5, 1)
    e = frexp_exponent - 1 - f.emax();
    if (rounding == MxScaleRounding::up && std::ldexp(amax, -e) > f.max_finite()) e += 1;
    e = std::max(e, -127);
  }
  out.scales.push_back(uint8_t(e + 127));
  for (int i = 0; i < n; ++i) {
    const double v = std::ldexp(double(x[i]), -e);  // exact in double
    const RefRounded r = ref_round(std::fabs(v), f);
    const bool negative = std::signbit(x[i]);
    out.codes.push_back(uint8_t((negative ? 0x80 : 0) | r.magnitude_code));
    out.values.push_back((negative ? -1.0 : 1.0) * std::ldexp(f.value(r.magnitude_code), e));
    if (r.saturated) out.saturated += 1;
    if (r.magnitude_code == 0 && x[i] != 0.0f) out.underflowed += 1;
  }
}

RefMx ref_mx_rows(const std::vector<float>& x, std::size_t rows, std::size_t cols, bool e4m3,
                  MxScaleRounding rounding) {
  RefMx ref;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t begin = 0; begin < cols; begin += 32) {
      ref_mx_block(x.data() + r * cols + begin, int(std::min<std::size_t>(32, cols - begin)), e4m3, ref, rounding);
    }
  }
  return ref;
}

Format fmt(bool e4m3) { return e4m3 ? Format::e4m3 : Format::e5m2; }

void expect_matches_reference(const std::vector<float>& x, std::size_t rows, std::size_t cols, bool e4m3,
                              MxScaleRounding rounding = MxScaleRounding::down) {
  const RefMx ref = ref_mx_rows(x, rows, cols, e4m3, rounding);
  std::vector<uint8_t> q(x.size());
  std::vector<uint8_t> scales(rows * mx_blocks_per_row(cols));
  const BlockQuantizeStats stats = mx_quantize_rows(x, rows, cols, fmt(e4m3), q, scales, rounding);
  std::vector<float> back(x.size());
  mx_dequantize_rows(q, scales, rows, cols, fmt(e4m3), back);
  ASSERT_EQ(scales.size(), ref.scales.size());
  for (std::size_t b = 0; b < scales.size(); ++b) ASSERT_EQ(scales[b], ref.scales[b]) << "block " << b;
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(q[i], ref.codes[i]) << "element " << i << " x=" << x[i];
    if (std::isnan(ref.values[i])) {
      ASSERT_TRUE(std::isnan(back[i])) << i;
    } else {
      // float(): exact, except a value of 2^128 or more (rounding up's X = 2^120 times an element
      // of 256 or more, the top of fp32's range), which fp32 dequantization gives as inf.
      ASSERT_EQ(back[i], float(ref.values[i])) << "element " << i << " x=" << x[i];
      ASSERT_EQ(std::signbit(back[i]), std::signbit(x[i])) << i;
    }
  }
  EXPECT_EQ(stats.elements, x.size());
  EXPECT_EQ(stats.blocks, scales.size());
  EXPECT_EQ(stats.saturated, ref.saturated);
  EXPECT_EQ(stats.underflowed, ref.underflowed);
  EXPECT_EQ(stats.nan_blocks, ref.nan_blocks);
}

using mpbench::testing_support::test_seed;

// Blocks spanning many binades: each block has its own top binade in [-150, 127] and a spread
// of 0..40 binades below it, random signs, 24-bit significands, some zeros and fp32 subnormals.
std::vector<float> random_tensor(std::size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> top_dist(-150, 127);
  std::uniform_int_distribution<int> spread_dist(0, 40);
  std::uniform_int_distribution<uint32_t> significand(0, (1u << 23) - 1);
  std::uniform_int_distribution<int> percent(0, 99);
  std::vector<float> x(n);
  int top = 0;
  int spread = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 32 == 0) {
      top = top_dist(rng);
      spread = spread_dist(rng);
    }
    const int p = percent(rng);
    double v;
    if (p < 4) {
      v = 0.0;
    } else {
      const int e = std::max(top - std::uniform_int_distribution<int>(0, spread)(rng), -160);
      v = std::ldexp(1.0 + std::ldexp(double(significand(rng)), -23), e);
    }
    if (percent(rng) < 50) v = -v;
    x[i] = float(v);  // rounds into fp32's subnormals or to zero below 2^-149; finite since top <= 127
  }
  return x;
}

// ---- e8m0 ---------------------------------------------------------------------------------------

TEST(E8m0, EveryCodeDecodesAndEncodesBack) {
  double previous = 0;
  for (int code = 0; code < 256; ++code) {
    const float v = e8m0_to_f32(uint8_t(code));
    if (code == 0xFF) {
      EXPECT_TRUE(std::isnan(v));
      continue;
    }
    ASSERT_EQ(double(v), std::ldexp(1.0, code - 127)) << code;
    ASSERT_GT(double(v), previous) << code;  // strictly increasing, no zero, no sign
    previous = v;
    ASSERT_EQ(f32_to_e8m0(v), code) << code;
    ASSERT_EQ(e8m0_from_exponent(code - 127), code) << code;
    // Rounds down: 1.5 * 2^e and the largest float below 2^(e+1) still give code e.
    ASSERT_EQ(f32_to_e8m0(v * 1.5f), code) << code;
    ASSERT_EQ(f32_to_e8m0(std::nextafter(v * 2.0f, 0.0f)), code) << code;
    ASSERT_EQ(f32_to_e8m0(std::nextafter(v, 0.0f)), code == 0 ? 0 : code - 1) << code;
  }
  EXPECT_EQ(double(e8m0_to_f32(0)), std::ldexp(1.0, -127));  // an fp32 subnormal, kept exact
  EXPECT_EQ(double(e8m0_to_f32(254)), std::ldexp(1.0, 127));
}

TEST(E8m0, ValuesWithoutAnEncoding) {
  for (float x : {0.0f, -0.0f, -1.0f, -kInf, kInf, kNan, -kNan}) EXPECT_EQ(f32_to_e8m0(x), 0xFF) << x;
  EXPECT_EQ(f32_to_e8m0(std::numeric_limits<float>::denorm_min()), 0);  // 2^-149 clamps to 2^-127
  EXPECT_EQ(f32_to_e8m0(std::numeric_limits<float>::max()), 254);
  EXPECT_EQ(e8m0_from_exponent(128), 0xFF);
  EXPECT_EQ(e8m0_from_exponent(-128), 0);
  EXPECT_EQ(e8m0_from_exponent(-1000), 0);
}

TEST(E8m0, FloorLog2AndPow2OverEveryBinade) {
  for (int e = -149; e <= 127; ++e) {
    const float p = float(std::ldexp(1.0, e));
    ASSERT_EQ(double(pow2_f32(e)), std::ldexp(1.0, e)) << e;
    ASSERT_EQ(floor_log2_f32(p), e) << e;
    int frexp_exponent = 0;
    const float below_next = std::nextafter(p * 2.0f, 0.0f);
    std::frexp(double(below_next), &frexp_exponent);
    ASSERT_EQ(floor_log2_f32(below_next), frexp_exponent - 1) << e;
  }
  EXPECT_EQ(pow2_f32(-150), 0.0f);
  EXPECT_TRUE(std::isinf(pow2_f32(128)));
}

// ---- MX against the reference --------------------------------------------------------------------

TEST(MxQuantize, MatchesReferenceOnRandomTensors) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937 rng(seed);
  for (MxScaleRounding rounding : {MxScaleRounding::down, MxScaleRounding::up}) {
    for (bool e4m3 : {true, false}) {
      for (std::size_t n : {1, 2, 31, 32, 33, 63, 64, 65, 1000, 4096}) {
        for (int rep = 0; rep < 8; ++rep) {
          SCOPED_TRACE(std::string("rounding ") + mx_scale_rounding_name(rounding) + (e4m3 ? " e4m3 n=" : " e5m2 n=") +
                       std::to_string(n));
          expect_matches_reference(random_tensor(n, rng), 1, n, e4m3, rounding);
        }
      }
    }
  }
}

// Rounding up gives the smallest power of two that keeps amax within the element's max finite:
// against the double rule for amax at every fp32 binade (subnormals included), with significands
// at and around 1.75 (where up and down part) and random ones; at or below 1.75 both agree.
TEST(MxScaleRounding, UpIsTheSmallestScaleThatFitsAmax) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> fraction(0, (1u << 23) - 1);
  for (bool e4m3 : {true, false}) {
    const RefFormat& f = ref_format(e4m3);
    for (uint32_t field = 0; field < 255; ++field) {
      for (uint32_t low : {0u, 1u, 0x5FFFFFu, 0x600000u, 0x600001u, 0x7FFFFFu, fraction(rng), fraction(rng)}) {
        const float amax = mpbench::num::bits_to_float((field << 23) | low);
        if (amax == 0.0f) continue;
        int e = -200;
        while (std::ldexp(double(amax), -e) > f.max_finite()) ++e;  // the smallest e that fits
        const int want = std::max(e, -127) + 127;
        ASSERT_EQ(mx_scale_code(amax, e4m3, MxScaleRounding::up), want) << "amax " << amax << (e4m3 ? " e4m3" : " e5m2");
        const int down = mx_scale_code(amax, e4m3, MxScaleRounding::down);
        if (field == 0) continue;  // subnormal amax: its significand is not the field's
        if (low <= 0x600000u) {
          EXPECT_EQ(down, want) << amax;
        } else if (want > 0) {
          EXPECT_EQ(down + 1, want) << amax;
        }
      }
    }
  }
}

TEST(MxScaleRounding, UpNeverSaturates) {
  std::mt19937 rng(test_seed());
  const std::vector<float> x = random_tensor(20000, rng);
  std::vector<uint8_t> q(x.size()), scales(mx_blocks_per_row(x.size()));
  for (bool e4m3 : {true, false}) {
    const BlockQuantizeStats down = mx_quantize(x, fmt(e4m3), q, scales, MxScaleRounding::down);
    const BlockQuantizeStats up = mx_quantize(x, fmt(e4m3), q, scales, MxScaleRounding::up);
    EXPECT_GT(down.saturated, 0u) << "the inputs reach the top of the binade";
    EXPECT_EQ(up.saturated, 0u);
    EXPECT_GE(up.underflowed, down.underflowed) << "a larger scale flushes at least as much";
  }
}

TEST(MxScaleRounding, HandCases) {
  // e4m3: amax 1.9 = 1.9 * 2^0 > 1.75: down X = 2^-8 (code 119; 1.9 saturates, above), up X = 2^-7
  // (code 120): 1.9 / 2^-7 = 243.2, between 240 and 256 (e4m3 steps by 16 there): 240, code
  // 0x77, back 1.875.
  std::vector<float> x = {1.9f, 1.75f};
  std::vector<uint8_t> q(2), scales(1);
  std::vector<float> back(2);
  const BlockQuantizeStats s = mx_quantize(x, Format::e4m3, q, scales, MxScaleRounding::up);
  mx_dequantize(q, scales, Format::e4m3, back);
  EXPECT_EQ(scales[0], 120);
  EXPECT_EQ(q[0], 0x77);
  EXPECT_EQ(back[0], 1.875f);
  EXPECT_EQ(q[1], 0x76);  // 1.75 / 2^-7 = 224 = 1.75 * 2^7: field 14, mantissa 6
  EXPECT_EQ(back[1], 1.75f);
  EXPECT_EQ(s.saturated, 0u);
  // amax 448 exactly: 448 / 448 = 1 = 2^0, no rounding: X = 1 (code 127), as down gives.
  EXPECT_EQ(mx_scale_code(448.0f, true, MxScaleRounding::up), 127);
  EXPECT_EQ(mx_scale_code(448.0f, true, MxScaleRounding::down), 127);
  // The largest float: up X = 2^120 (code 247), FLT_MAX / X < 256 fits; a subnormal amax 2^-140
  // clamps to 2^-127 both ways.
  EXPECT_EQ(mx_scale_code(std::numeric_limits<float>::max(), true, MxScaleRounding::up), 247);
  EXPECT_EQ(mx_scale_code(std::ldexp(1.0f, -140), true, MxScaleRounding::up), 0);
  EXPECT_EQ(mx_scale_code(kNan, true, MxScaleRounding::up), kE8m0Nan);
  EXPECT_EQ(mx_scale_code(kInf, false, MxScaleRounding::up), kE8m0Nan);
  EXPECT_EQ(mx_scale_code(0.0f, false, MxScaleRounding::up), 0);
}

TEST(MxQuantize, RandomTensorsSaturateAndUnderflowSomewhere) {
  // The reference comparison only means something if the inputs reach both edges of the format.
  std::mt19937 rng(test_seed());
  const std::vector<float> x = random_tensor(20000, rng);
  std::vector<uint8_t> q(x.size()), scales(mx_blocks_per_row(x.size()));
  const BlockQuantizeStats s = mx_quantize(x, Format::e4m3, q, scales);
  EXPECT_GT(s.saturated, 0u);
  EXPECT_GT(s.underflowed, 0u);
  EXPECT_EQ(s.nan_blocks, 0u);
}

TEST(MxQuantize, RowsBlockAlongEachRow) {
  std::mt19937 rng(test_seed());
  for (bool e4m3 : {true, false}) {
    for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{7, 45}, {3, 64}, {5, 1}, {2, 31}}) {
      expect_matches_reference(random_tensor(rows * cols, rng), rows, cols, e4m3);
    }
  }
  // A row's tail block ends the row: 45 columns are a block of 32 and one of 13 per row, so a
  // huge value in row 1 does not change row 0's scales.
  std::vector<float> x(2 * 45, 1.0f);
  x[45] = 1e30f;
  std::vector<uint8_t> q(x.size()), scales(4);
  mx_quantize_rows(x, 2, 45, Format::e4m3, q, scales);
  EXPECT_EQ(scales[0], 127 - 8);
  EXPECT_EQ(scales[1], 127 - 8);
  EXPECT_EQ(scales[2], 127 + 99 - 8);  // 1e30 is in [2^99, 2^100)
  EXPECT_EQ(scales[3], 127 - 8);
}

// random_tensor with NaNs (one at least), infinities, zeros and fp32 subnormals at random places.
std::vector<float> tensor_with_specials(std::size_t n, std::mt19937& rng) {
  std::vector<float> x = random_tensor(n, rng);
  const float specials[] = {kNan, -kInf, kInf, 0.0f, -0.0f, 1e-45f, -3e-39f};
  for (std::size_t i = 0; i < n / 200 + 1 && n > 0; ++i) x[rng() % n] = specials[rng() % std::size(specials)];
  if (n > 0) x[rng() % n] = kNan;  // at least one NaN block
  return x;
}

bool same_bits(float a, float b) { return mpbench::num::float_to_bits(a) == mpbench::num::float_to_bits(b); }

// Runs `check` under each loop ISA this CPU has (baseline, and AVX-512 where present).
template <class Check>
void for_each_loop_isa(Check check) {
  const Fp8LoopIsa initial = fp8_loop_isa();
  for (Fp8LoopIsa isa : {Fp8LoopIsa::baseline, Fp8LoopIsa::avx512}) {
    if (set_fp8_loop_isa(isa) != isa) continue;
    SCOPED_TRACE(isa == Fp8LoopIsa::avx512 ? "avx512 loops" : "baseline loops");
    check();
  }
  set_fp8_loop_isa(initial);
}

// Every (e4m3?, rounding) pair the block loops are checked on.
constexpr std::pair<bool, MxScaleRounding> kFormatsAndRoundings[] = {
    {true, MxScaleRounding::down}, {false, MxScaleRounding::down}, {true, MxScaleRounding::up}, {false, MxScaleRounding::up}};

// The threaded, vectorized mx_quantize_rows / mx_dequantize_rows against the header's scalar
// mx_quantize_block / mx_dequantize_block, block by block, on shapes whose rows are not a multiple
// of 32 or of a vector width, small and above the threading threshold.
TEST(MxQuantize, BlockLoopsMatchTheScalarBlockFunctions) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937 rng(seed);
  for_each_loop_isa([&] {
    for (const auto& [e4m3, rounding] : kFormatsAndRoundings) {
      for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 7}, {3, 45}, {9, 1005}, {300, 257}}) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " rounding " + mx_scale_rounding_name(rounding));
        const std::vector<float> x = tensor_with_specials(rows * cols, rng);
        const std::size_t per_row = mx_blocks_per_row(cols);
        std::vector<uint8_t> q(x.size()), scales(rows * per_row), want_q(x.size());
        const BlockQuantizeStats stats = mx_quantize_rows(x, rows, cols, fmt(e4m3), q, scales, rounding);
        std::vector<float> back(x.size()), want_back(x.size());
        mx_dequantize_rows(q, scales, rows, cols, fmt(e4m3), back);
        uint32_t saturated = 0, underflowed = 0;
        uint64_t nan_blocks = 0;
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::size_t b = 0; b < per_row; ++b) {
            const std::size_t begin = r * cols + b * 32;
            const int n = int(std::min<std::size_t>(32, cols - b * 32));
            uint32_t block_saturated = 0, block_underflowed = 0;
            const uint8_t code =
                mx_quantize_block(x.data() + begin, n, e4m3, want_q.data() + begin, block_saturated, block_underflowed,
                                  rounding);
            ASSERT_EQ(scales[r * per_row + b], code) << "row " << r << " block " << b;
            mx_dequantize_block(want_q.data() + begin, n, code, e4m3, want_back.data() + begin);
            // mx_quantize_block counts a NaN block's elements as the per-element function does;
            // the tensor functions leave them out (BlockQuantizeStats: not counted).
            if (code == kE8m0Nan) ++nan_blocks;
            else saturated += block_saturated, underflowed += block_underflowed;
          }
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
          ASSERT_EQ(q[i], want_q[i]) << "element " << i << " x=" << x[i];
          ASSERT_TRUE(same_bits(back[i], want_back[i])) << "element " << i;
        }
        EXPECT_EQ(stats.saturated, saturated);
        EXPECT_EQ(stats.underflowed, underflowed);
        EXPECT_EQ(stats.nan_blocks, nan_blocks);
      }
    }
  });
}

// mx_quantize_columns is mx_quantize_rows on the transpose, transposed: codes, scales (strip s of
// column c is block s of row c of x^T), counts and values, bit for bit.
TEST(MxQuantize, ColumnsAreRowsOfTheTranspose) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937 rng(seed);
  for_each_loop_isa([&] {
    for (const auto& [e4m3, rounding] : kFormatsAndRoundings) {
      for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{5, 1}, {70, 45}, {33, 1024}, {1003, 77}}) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " rounding " + mx_scale_rounding_name(rounding));
        const std::vector<float> x = tensor_with_specials(rows * cols, rng);
        std::vector<float> xt(x.size());
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t c = 0; c < cols; ++c) xt[c * rows + r] = x[r * cols + c];
        const std::size_t strips = mx_blocks_per_row(rows);
        std::vector<uint8_t> q(x.size()), scales(strips * cols), qt(x.size()), scales_t(cols * strips);
        const BlockQuantizeStats stats = mx_quantize_columns(x, rows, cols, fmt(e4m3), q, scales, rounding);
        const BlockQuantizeStats want = mx_quantize_rows(xt, cols, rows, fmt(e4m3), qt, scales_t, rounding);
        std::vector<float> back(x.size()), back_t(x.size());
        mx_dequantize_columns(q, scales, rows, cols, fmt(e4m3), back);
        mx_dequantize_rows(qt, scales_t, cols, rows, fmt(e4m3), back_t);
        for (std::size_t s = 0; s < strips; ++s)
          for (std::size_t c = 0; c < cols; ++c)
            ASSERT_EQ(scales[s * cols + c], scales_t[c * strips + s]) << s << " " << c;
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::size_t c = 0; c < cols; ++c) {
            ASSERT_EQ(q[r * cols + c], qt[c * rows + r]) << r << " " << c;
            ASSERT_TRUE(same_bits(back[r * cols + c], back_t[c * rows + r])) << r << " " << c;
          }
        }
        EXPECT_EQ(stats.elements, want.elements);
        EXPECT_EQ(stats.blocks, want.blocks);
        EXPECT_EQ(stats.saturated, want.saturated);
        EXPECT_EQ(stats.underflowed, want.underflowed);
        EXPECT_EQ(stats.nan_blocks, want.nan_blocks);
        EXPECT_GT(want.nan_blocks, 0u) << "the specials reach some blocks";
      }
    }
  });
  std::vector<float> x(6);
  std::vector<uint8_t> q(6), scales(1);
  EXPECT_THROW(mx_quantize_columns(x, 2, 3, Format::e4m3, q, scales), std::invalid_argument);  // 3 scales needed
  EXPECT_THROW(mx_quantize_columns(x, 2, 3, Format::bf16, q, scales), std::invalid_argument);
}

// Every finite bit pattern, placed in blocks whose amax is in [2^emax, 2^(emax+1)) so the scale is
// 2^k exactly, comes back as itself and decodes to its field value times 2^k.
TEST(MxQuantize, EveryBitPatternRoundTripsExactly) {
  for (bool e4m3 : {true, false}) {
    const RefFormat& f = ref_format(e4m3);
    const int kmax = 127 - f.emax();  // largest k: the anchor 2^(emax + k) is 2^127
    for (int k : {0, -127, -100, -1, 1, 50, kmax}) {
      SCOPED_TRACE(std::string(e4m3 ? "e4m3" : "e5m2") + " k=" + std::to_string(k));
      std::vector<float> x;
      std::vector<uint8_t> patterns;
      for (int code = 0; code < 256; ++code) {
        if ((code & 0x7F) > f.max_code) continue;  // NaN, and e5m2's inf
        if (x.size() % 32 == 0) {
          x.push_back(float(std::ldexp(1.0, f.emax() + k)));  // the anchor: 2^emax * 2^k
          patterns.push_back(uint8_t(f.emax() + f.bias) << f.mantissa_bits);
        }
        x.push_back(float(((code & 0x80) ? -1.0 : 1.0) * std::ldexp(f.value(code & 0x7F), k)));
        patterns.push_back(uint8_t(code));
      }
      std::vector<uint8_t> q(x.size()), scales(mx_blocks_per_row(x.size()));
      const BlockQuantizeStats s = mx_quantize(x, fmt(e4m3), q, scales);
      for (uint8_t scale : scales) ASSERT_EQ(scale, 127 + k);
      std::vector<float> back(x.size());
      mx_dequantize(q, scales, fmt(e4m3), back);
      for (std::size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(q[i], patterns[i]) << i;
        ASSERT_EQ(back[i], x[i]) << i;
        ASSERT_EQ(std::signbit(back[i]), std::signbit(x[i])) << i;
      }
      EXPECT_EQ(s.saturated, 0u);
      EXPECT_EQ(s.underflowed, 0u);
    }
  }
}

// ---- MX hand cases --------------------------------------------------------------------------------

struct Quantized {
  std::vector<uint8_t> q;
  std::vector<uint8_t> scales;
  std::vector<float> back;
  BlockQuantizeStats stats;
};

Quantized mx(const std::vector<float>& x, bool e4m3 = true) {
  Quantized r;
  r.q.resize(x.size());
  r.scales.resize(mx_blocks_per_row(x.size()));
  r.back.resize(x.size());
  r.stats = mx_quantize(x, fmt(e4m3), r.q, r.scales);
  mx_dequantize(r.q, r.scales, fmt(e4m3), r.back);
  return r;
}

TEST(MxHandCases, ZeroBlockGetsTheSmallestScale) {
  // amax 0 has no floor(log2); we give the smallest e8m0 scale, 2^-127 (code 0), as the reference
  // implementation does; the elements are +-0 and count no underflow.
  std::vector<float> x(32, 0.0f);
  x[5] = -0.0f;
  const Quantized r = mx(x);
  EXPECT_EQ(r.scales[0], 0);
  EXPECT_EQ(r.q[0], 0x00);
  EXPECT_EQ(r.q[5], 0x80);
  EXPECT_EQ(r.back[0], 0.0f);
  EXPECT_TRUE(std::signbit(r.back[5]));
  EXPECT_EQ(r.stats.underflowed, 0u);
}

TEST(MxHandCases, NanOrInfMakesTheBlockScaleNan) {
  for (bool e4m3 : {true, false}) {
    for (float special : {kNan, kInf, -kInf}) {
      std::vector<float> x(64, 1.0f);  // two blocks; the special value is in the first one
      x[7] = special;
      const Quantized r = mx(x, e4m3);
      EXPECT_EQ(r.scales[0], 0xFF);
      EXPECT_EQ(r.scales[1], 127 - (e4m3 ? 8 : 15));  // 1.0 = 2^0: X = 2^-emax
      for (int i = 0; i < 32; ++i) EXPECT_TRUE(std::isnan(r.back[i])) << i;
      for (int i = 32; i < 64; ++i) EXPECT_EQ(r.back[i], 1.0f) << i;
      EXPECT_EQ(r.stats.nan_blocks, 1u);
      EXPECT_EQ(r.stats.saturated, 0u);  // an infinity is not counted as a clamp: the block is NaN
    }
  }
}

TEST(MxHandCases, PowerOfTwoAmax) {
  // amax 4 = 2^2: X = 2^(2 - 8) = 2^-6, code 121. 4 / X = 256 = 2^8, e4m3 exponent field 15,
  // mantissa 0: 0x78. 0.3 / X = 19.2; in [16, 32) e4m3 steps by 2, so 20 = 1.25 * 2^4: 0x5A, which
  // dequantizes to 20 * 2^-6 = 0.3125. -1 / X = -64 = -2^6: 0x80 | (13 << 3) = 0xE8.
  std::vector<float> x = {4.0f, 0.3f, -1.0f};
  const Quantized r = mx(x);
  EXPECT_EQ(r.scales[0], 121);
  EXPECT_EQ(r.q[0], 0x78);
  EXPECT_EQ(r.q[1], 0x5A);
  EXPECT_EQ(r.q[2], 0xE8);
  EXPECT_EQ(r.back[0], 4.0f);
  EXPECT_EQ(r.back[1], 0.3125f);
  EXPECT_EQ(r.back[2], -1.0f);
  // The same block in e5m2: X = 2^(2 - 15) = 2^-13, code 114; 4 / X = 2^15: field 30, 0x78.
  const Quantized r5 = mx(x, false);
  EXPECT_EQ(r5.scales[0], 114);
  EXPECT_EQ(r5.q[0], 0x78);
  EXPECT_EQ(r5.back[0], 4.0f);
}

TEST(MxHandCases, AmaxInTheTopHalfBinadeSaturates) {
  // OCP's scale puts amax / X in [2^emax, 2^(emax+1)), above the element's max for amax/2^floor
  // >= 1.75 (+ half a step). e4m3, X = 2^-8: 1.9 -> 486.4 > 464 saturates to 448 (counted);
  // 1.8125 -> 464, the tie between 448 (even code 0x7E) and the missing 480, rounds to 448 (not
  // counted); 1.75 -> 448 exactly.
  const Quantized r = mx({1.9f, 1.8125f, 1.75f, -1.9f});
  EXPECT_EQ(r.scales[0], 119);
  EXPECT_EQ(r.q[0], 0x7E);
  EXPECT_EQ(r.q[1], 0x7E);
  EXPECT_EQ(r.q[2], 0x7E);
  EXPECT_EQ(r.q[3], 0xFE);
  EXPECT_EQ(r.back[0], 1.75f);
  EXPECT_EQ(r.stats.saturated, 2u);
  // e5m2, X = 2^-15: 1.875 -> 61440, the tie between 57344 (code 0x7B, odd) and 65536 (0x7C,
  // even) rounds up, so it saturates; 1.86 -> 60948 rounds to 57344 without the clamp.
  const Quantized r5 = mx({1.875f, 1.86f}, false);
  EXPECT_EQ(r5.scales[0], 112);
  EXPECT_EQ(r5.q[0], 0x7B);
  EXPECT_EQ(r5.q[1], 0x7B);
  EXPECT_EQ(r5.back[0], 1.75f);
  EXPECT_EQ(r5.stats.saturated, 1u);
  // The largest float: floor(log2) = 127, X = 2^119 (code 246); FLT_MAX / X ~ 512 saturates.
  const Quantized big = mx({std::numeric_limits<float>::max()});
  EXPECT_EQ(big.scales[0], 246);
  EXPECT_EQ(big.back[0], float(std::ldexp(448.0, 119)));
  EXPECT_EQ(big.stats.saturated, 1u);
}

TEST(MxHandCases, SmallElementsUnderflowInsideABlock) {
  // amax 1: X = 2^-8. e4m3's smallest subnormal is 2^-9, so x / X must reach 2^-10 (a tie, which
  // goes to the even code 0) to survive. 2^-17 -> 2^-9 (code 1), 2^-18 -> 2^-10 tie -> 0
  // (underflow), 2^-20 -> 0 (underflow), 1.5 * 2^-18 -> 1.5 * 2^-10 -> 2^-9 (code 1).
  const Quantized r = mx({1.0f, 0x1p-17f, 0x1p-18f, -0x1p-20f, 0x1.8p-18f, 0.0f});
  EXPECT_EQ(r.scales[0], 119);
  EXPECT_EQ(r.q[1], 0x01);
  EXPECT_EQ(r.q[2], 0x00);
  EXPECT_EQ(r.q[3], 0x80);
  EXPECT_EQ(r.q[4], 0x01);
  EXPECT_EQ(r.back[1], 0x1p-17f);
  EXPECT_EQ(r.stats.underflowed, 2u);
  EXPECT_EQ(r.stats.saturated, 0u);
}

TEST(MxHandCases, ScaleClampsAtTwoToMinus127) {
  // amax 2^-130: the shared exponent -138 is below e8m0's range and clamps to -127, so elements
  // are x * 2^127: 2^-130 -> 2^-3 (exact, e4m3 0x20), 2^-140 -> 2^-13 (underflow). 2^-130 comes back
  // exactly as 0.125 * 2^-127.
  const Quantized r = mx({0x1p-130f, 0x1p-140f});
  EXPECT_EQ(r.scales[0], 0);
  EXPECT_EQ(r.q[0], 0x20);
  EXPECT_EQ(r.back[0], 0x1p-130f);
  EXPECT_EQ(r.q[1], 0x00);
  EXPECT_EQ(r.stats.underflowed, 1u);
  // The smallest fp32 subnormal alone: 2^-149 * 2^127 = 2^-22 flushes.
  const Quantized tiny = mx({std::numeric_limits<float>::denorm_min()});
  EXPECT_EQ(tiny.scales[0], 0);
  EXPECT_EQ(tiny.stats.underflowed, 1u);
}

TEST(MxHandCases, TailBlockAndCountsAcrossBlocks) {
  // 33 elements: a block of 32 and a tail of one, each with its own scale and counts.
  std::vector<float> x(33, 0.5f);
  x[0] = 1.9f;       // saturates in block 0 (X = 2^-8)
  x[1] = 0x1p-20f;   // underflows in block 0
  x[32] = 3.0f;      // the tail: 3 = 1.5 * 2^1, X = 2^-7, 3 / X = 384 exact
  const Quantized r = mx(x);
  ASSERT_EQ(r.scales.size(), 2u);
  EXPECT_EQ(r.scales[0], 119);
  EXPECT_EQ(r.scales[1], 120);
  EXPECT_EQ(r.back[32], 3.0f);
  EXPECT_EQ(r.stats.blocks, 2u);
  EXPECT_EQ(r.stats.saturated, 1u);
  EXPECT_EQ(r.stats.underflowed, 1u);
}

TEST(MxQuantize, RejectsBadArguments) {
  std::vector<float> x(40);
  std::vector<uint8_t> q(40), scales(1);
  EXPECT_THROW(mx_quantize(x, Format::e4m3, q, scales), std::invalid_argument);  // needs 2 scales
  scales.resize(2);
  EXPECT_THROW(mx_quantize(x, Format::bf16, q, scales), std::invalid_argument);
  EXPECT_THROW(mx_quantize_rows(x, 3, 13, Format::e4m3, q, scales), std::invalid_argument);
}

// ---- current scaling ------------------------------------------------------------------------------

struct RefCurrent {
  float scale = 1;
  std::vector<uint8_t> codes;
  std::vector<float> back;
  uint64_t saturated = 0;
  uint64_t underflowed = 0;
};

// The rule: scale = fp32(max / 2^margin / amax), 1 if amax is 0, inf or NaN, FLT_MAX if the
// quotient overflows; element = RNE(fp32(x * scale)) saturating; back = fp32(value * fp32(1/scale)).
// fp32 products and quotients are formed exactly in double and rounded once to float.
RefCurrent ref_current(const std::vector<float>& x, bool e4m3, int margin) {
  const RefFormat& f = ref_format(e4m3);
  bool nan = false;
  double amax = 0;
  for (float v : x) {
    if (std::isnan(v)) nan = true;
    else amax = std::max(amax, std::fabs(double(v)));
  }
  RefCurrent ref;
  if (!nan && amax > 0 && std::isfinite(amax)) {
    const double q = double(float(std::ldexp(f.max_finite(), -margin))) / amax;
    ref.scale = q > std::numeric_limits<float>::max() ? std::numeric_limits<float>::max() : float(q);
  }
  const double scale_inv = double(float(1.0 / double(ref.scale)));
  for (float v : x) {
    if (std::isnan(v)) {
      ref.codes.push_back(0);  // the NaN code (payload kept) is formats.hpp's, tested there
      ref.back.push_back(kNan);
      continue;
    }
    const float scaled = float(double(v) * double(ref.scale));
    RefRounded r = std::isinf(scaled) ? RefRounded{f.max_code, true} : ref_round(std::fabs(double(scaled)), f);
    const bool negative = std::signbit(v);
    ref.codes.push_back(uint8_t((negative ? 0x80 : 0) | r.magnitude_code));
    ref.back.push_back(float((negative ? -1.0 : 1.0) * f.value(r.magnitude_code) * scale_inv));
    if (r.saturated) ref.saturated += 1;
    if (r.magnitude_code == 0 && v != 0.0f) ref.underflowed += 1;
  }
  return ref;
}

void expect_current_matches(const std::vector<float>& x, bool e4m3, int margin) {
  const RefCurrent ref = ref_current(x, e4m3, margin);
  std::vector<uint8_t> q(x.size());
  const CurrentScalingResult r = quantize_current_scaling(x, fmt(e4m3), q, margin);
  std::vector<float> back(x.size());
  dequantize_per_tensor(q, r.scale_inv, fmt(e4m3), back);
  ASSERT_EQ(r.scale, ref.scale);
  ASSERT_EQ(r.scale_inv, float(1.0 / double(ref.scale)));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      ASSERT_TRUE(std::isnan(back[i]));
      continue;
    }
    ASSERT_EQ(q[i], ref.codes[i]) << i << " x=" << x[i];
    if (std::isnan(ref.back[i])) ASSERT_TRUE(std::isnan(back[i]));
    else ASSERT_EQ(back[i], ref.back[i]) << i << " x=" << x[i];
  }
  EXPECT_EQ(r.elements, x.size());
  EXPECT_EQ(r.saturated, ref.saturated);
  EXPECT_EQ(r.underflowed, ref.underflowed);
}

TEST(CurrentScaling, MatchesReferenceOnRandomTensors) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> center(-120, 120);
  for (bool e4m3 : {true, false}) {
    for (int margin : {0, 1, 3}) {
      for (std::size_t n : {1, 31, 32, 33, 1000, 5000}) {
        // A tensor spanning 30 binades around a random center (so some elements flush to zero).
        std::vector<float> x = random_tensor(n, rng);
        const int c = center(rng);
        for (float& v : x) {
          int e = 0;
          const double m = std::frexp(double(v), &e);
          v = float(std::ldexp(m, c - std::abs(e) % 30));
        }
        expect_current_matches(x, e4m3, margin);
      }
    }
  }
}

TEST(CurrentScaling, AccurateForNormalElements) {
  std::mt19937 rng(test_seed());
  std::lognormal_distribution<float> lognormal(-4.0f, 2.0f);
  std::vector<float> x(10000);
  for (float& v : x) v = lognormal(rng) * ((rng() & 1) ? 1.0f : -1.0f);
  std::vector<uint8_t> q(x.size());
  const CurrentScalingResult r = quantize_current_scaling(x, Format::e4m3, q);
  std::vector<float> back(x.size());
  dequantize_per_tensor(q, r.scale_inv, Format::e4m3, back);
  EXPECT_EQ(r.saturated, 0u);  // the amax maps to 448: nothing is clamped
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::fabs(x[i]) * r.scale < 0x1p-6f) continue;  // e4m3 subnormal range: absolute error
    ASSERT_LE(std::fabs(back[i] - x[i]), std::fabs(x[i]) * 0.0625f * 1.0001f) << x[i];
  }
}

TEST(CurrentScalingHandCases, ScaleRules) {
  std::vector<uint8_t> q(6);
  // amax 7: scale 448 / 7 = 64 exactly; 7 -> 448 (0x7E); 2^-16 -> 2^-10, the tie between 0 and
  // e4m3's smallest subnormal 2^-9, rounds to 0 (underflow); 2^-15 -> 2^-9 (code 1).
  CurrentScalingResult r = quantize_current_scaling(std::vector<float>{7.0f, 0x1p-16f, 0x1p-15f}, Format::e4m3, q);
  EXPECT_EQ(r.scale, 64.0f);
  EXPECT_EQ(r.scale_inv, 1.0f / 64);
  EXPECT_EQ(q[0], 0x7E);
  EXPECT_EQ(q[1], 0x00);
  EXPECT_EQ(q[2], 0x01);
  EXPECT_EQ(r.underflowed, 1u);
  // Margin 2: 448 / 4 / 7 = 16.
  r = quantize_current_scaling(std::vector<float>{7.0f}, Format::e4m3, q, 2);
  EXPECT_EQ(r.scale, 16.0f);
  // e5m2: 57344 / 7 = 8192.
  r = quantize_current_scaling(std::vector<float>{-7.0f}, Format::e5m2, q);
  EXPECT_EQ(r.scale, 8192.0f);
  EXPECT_EQ(q[0], 0xFB);
  // All zeros: scale 1 (Transformer Engine's rule for a zero amax).
  r = quantize_current_scaling(std::vector<float>{0.0f, -0.0f}, Format::e4m3, q);
  EXPECT_EQ(r.scale, 1.0f);
  EXPECT_EQ(r.amax, 0.0f);
  EXPECT_EQ(q[1], 0x80);
  EXPECT_EQ(r.underflowed, 0u);
  // A NaN: amax NaN, scale 1; the NaN stays NaN, 2 = 2^1 -> exponent field 8: 0x40.
  r = quantize_current_scaling(std::vector<float>{kNan, 2.0f}, Format::e4m3, q);
  EXPECT_TRUE(std::isnan(r.amax));
  EXPECT_EQ(r.scale, 1.0f);
  EXPECT_EQ(q[0] & 0x7F, 0x7F);
  EXPECT_EQ(q[1], 0x40);
  // An infinity: amax inf, scale 1, so the infinity and 1000 saturate to 448; 3 -> 0x44.
  r = quantize_current_scaling(std::vector<float>{kInf, 1000.0f, 3.0f}, Format::e4m3, q);
  EXPECT_TRUE(std::isinf(r.amax));
  EXPECT_EQ(r.scale, 1.0f);
  EXPECT_EQ(q[0], 0x7E);
  EXPECT_EQ(q[1], 0x7E);
  EXPECT_EQ(q[2], 0x44);
  EXPECT_EQ(r.saturated, 2u);
  // A tiny amax: 448 / 2^-149 overflows fp32, so the scale is FLT_MAX; 2^-149 * FLT_MAX ~ 2^-21
  // still flushes (underflow counted).
  r = quantize_current_scaling(std::vector<float>{std::numeric_limits<float>::denorm_min()}, Format::e4m3, q);
  EXPECT_EQ(r.scale, std::numeric_limits<float>::max());
  EXPECT_EQ(r.underflowed, 1u);
  EXPECT_THROW(quantize_current_scaling(std::vector<float>{1.0f}, Format::fp16, q), std::invalid_argument);
}

}  // namespace
