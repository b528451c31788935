// Conversions in amp/formats.hpp against an independent oracle: values computed from the format's
// fields with ldexp, and rounding done in double with nearbyint (ties to even on the quotient),
// never with bit tricks like the implementation. fp16 is also checked against the F16C instruction.
#include "amp/formats.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MPB_TEST_HAVE_F16C_INTRINSICS 1
#endif

namespace {

using namespace mpbench::num;

struct Spec {
  const char* name;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool ieee_specials;  // false for e4m3fn: no inf, only the all-ones code is NaN
};

constexpr Spec kFp16{"fp16", 5, 10, 15, true};
constexpr Spec kBf16{"bf16", 8, 7, 127, true};
constexpr Spec kE4m3{"e4m3", 4, 3, 7, false};
constexpr Spec kE5m2{"e5m2", 5, 2, 15, true};
constexpr Spec kTf32{"tf32", 8, 10, 127, true};

float inf() { return std::numeric_limits<float>::infinity(); }
float qnan() { return std::numeric_limits<float>::quiet_NaN(); }

// Value of `code` read from its fields; NaN for NaN codes.
double oracle_decode(uint32_t code, const Spec& s) {
  const uint32_t mantissa = code & ((1u << s.mantissa_bits) - 1);
  const uint32_t exponent = (code >> s.mantissa_bits) & ((1u << s.exponent_bits) - 1);
  const bool negative = (code >> (s.exponent_bits + s.mantissa_bits)) & 1u;
  const uint32_t top = (1u << s.exponent_bits) - 1;
  double magnitude;
  if (s.ieee_specials && exponent == top) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::nan("");
  } else if (!s.ieee_specials && exponent == top && mantissa == (1u << s.mantissa_bits) - 1) {
    magnitude = std::nan("");
  } else if (exponent == 0) {
    magnitude = std::ldexp(double(mantissa), 1 - s.bias - s.mantissa_bits);
  } else {
    magnitude = std::ldexp(1.0 + std::ldexp(double(mantissa), -s.mantissa_bits), int(exponent) - s.bias);
  }
  return negative ? -magnitude : magnitude;
}

double oracle_max_finite(const Spec& s) {
  const int top_exponent = s.ieee_specials ? (1 << s.exponent_bits) - 2 : (1 << s.exponent_bits) - 1;
  const double mantissa_loss = (s.ieee_specials ? 1.0 : 2.0) * std::ldexp(1.0, -s.mantissa_bits);
  return std::ldexp(2.0 - mantissa_loss, top_exponent - s.bias);
}

// Round x to the format: pick the quantum of x's binade (or the subnormal quantum), round the
// quotient to nearest even in double, which is exact here.
double oracle_round(float x, const Spec& s, bool saturate) {
  if (std::isnan(x)) return std::nan("");
  const double a = std::fabs(double(x));
  const double max_finite = oracle_max_finite(s);
  double rounded;
  if (std::isinf(a)) {
    rounded = std::numeric_limits<double>::infinity();
  } else if (a == 0.0) {
    rounded = 0.0;
  } else {
    int binary_exponent;
    std::frexp(a, &binary_exponent);  // a = f * 2^binary_exponent, f in [0.5, 1)
    const int exponent = std::max(binary_exponent - 1, 1 - s.bias);
    const double quantum = std::ldexp(1.0, exponent - s.mantissa_bits);
    rounded = std::nearbyint(a / quantum) * quantum;
  }
  if (rounded > max_finite) {
    if (saturate) rounded = max_finite;
    else if (s.ieee_specials) rounded = std::numeric_limits<double>::infinity();
    else return std::nan("");
  }
  return std::copysign(rounded, double(x));
}

// ASSERT-style comparison that treats every NaN alike and distinguishes -0 from +0.
::testing::AssertionResult same_value(double expected, double actual) {
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (expected == actual && std::signbit(expected) == std::signbit(actual)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << expected << " got " << actual;
}

struct Converter {
  const Spec& spec;
  bool saturate;
  double operator()(float x) const {
    if (&spec == &kFp16) return f16_bits_to_f32(f32_to_f16_bits(x));
    if (&spec == &kBf16) return bf16_bits_to_f32(f32_to_bf16_bits(x));
    if (&spec == &kE4m3) return e4m3_bits_to_f32(f32_to_e4m3_bits(x, saturate));
    if (&spec == &kE5m2) return e5m2_bits_to_f32(f32_to_e5m2_bits(x, saturate));
    return round_to_tf32(x);
  }
};

// Every representable value, the midpoints between neighbours (the tie cases), one fp32 ulp either
// side of each, the overflow midpoint above the largest finite value, and the specials.
std::vector<float> edge_values(const Spec& s) {
  std::vector<double> grid;
  const uint32_t codes = 1u << (s.exponent_bits + s.mantissa_bits);
  for (uint32_t code = 0; code < codes; ++code) {
    const double v = oracle_decode(code, s);
    if (std::isfinite(v)) grid.push_back(v);
  }
  std::sort(grid.begin(), grid.end());
  const double top_quantum = std::ldexp(1.0, int(std::ilogb(grid.back())) - s.mantissa_bits);
  grid.push_back(grid.back() + top_quantum);  // the first value past max: overflow ties against it
  std::vector<float> out = {0.0f, inf(), qnan(), std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()};
  auto add_with_neighbours = [&](double v) {
    const float f = static_cast<float>(v);
    if (double(f) != v) return;  // not representable in fp32: not a tie fp32 inputs can hit
    out.push_back(f);
    out.push_back(std::nextafter(f, 0.0f));
    out.push_back(std::nextafter(f, inf()));
  };
  for (std::size_t i = 0; i + 1 < grid.size(); ++i) {
    add_with_neighbours(grid[i]);
    add_with_neighbours((grid[i] + grid[i + 1]) / 2);
  }
  add_with_neighbours(grid.back());
  const std::size_t positives = out.size();
  for (std::size_t i = 0; i < positives; ++i) out.push_back(-out[i]);
  return out;
}

// Random fp32 patterns: half over the whole fp32 range, half with exponents around the format's
// range, where the rounding, subnormal and overflow decisions happen.
std::vector<float> random_values(const Spec& s, uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> any_bits;
  const int low = std::max(1, 127 + (1 - s.bias - s.mantissa_bits) - 3);
  const int high = std::min(254, 127 + (1 << s.exponent_bits) - s.bias + 1);
  std::uniform_int_distribution<int> exponent(low, high);
  std::vector<float> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    uint32_t bits = any_bits(rng);
    if (i % 2 == 1) bits = (bits & 0x807FFFFFu) | (uint32_t(exponent(rng)) << 23);
    out.push_back(std::bit_cast<float>(bits));
  }
  return out;
}

void expect_matches_oracle(const Spec& s, bool saturate, const std::vector<float>& inputs) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  const Converter convert{s, saturate};
  int failures = 0;
  for (float x : inputs) {
    const auto result = same_value(oracle_round(x, s, saturate), convert(x));
    if (!result) {
      ADD_FAILURE() << s.name << (saturate ? " (saturating)" : "") << " x=" << x << " bits=0x" << std::hex
                    << std::bit_cast<uint32_t>(x) << std::dec << ": " << result.message();
      if (++failures > 10) return;
    }
  }
}

class FormatOracle : public ::testing::TestWithParam<std::pair<const Spec*, bool>> {};

TEST_P(FormatOracle, EdgeValuesMatchOracle) {
  const auto [spec, saturate] = GetParam();
  expect_matches_oracle(*spec, saturate, edge_values(*spec));
}

TEST_P(FormatOracle, RandomValuesMatchOracle) {
  const auto [spec, saturate] = GetParam();
  expect_matches_oracle(*spec, saturate, random_values(*spec, 20240601u + spec->mantissa_bits, 400000));
}

INSTANTIATE_TEST_SUITE_P(
    AllFormats, FormatOracle,
    ::testing::Values(std::pair{&kFp16, false}, std::pair{&kBf16, false}, std::pair{&kTf32, false},
                      std::pair{&kE4m3, false}, std::pair{&kE4m3, true}, std::pair{&kE5m2, false},
                      std::pair{&kE5m2, true}),
    [](const auto& info) {
      return std::string(info.param.first->name) + (info.param.second ? "_saturating" : "");
    });

// ---- every bit pattern decodes to its field value and converts back to itself ----------------

// `expected_back(code, value)`: the code converting `value` back must give; `code` for every
// finite value, the quieted code for NaNs.
template <typename Decode, typename Encode, typename ExpectedBack>
void check_all_codes(const Spec& s, Decode decode, Encode encode, ExpectedBack expected_back) {
  const uint32_t codes = 1u << (1 + s.exponent_bits + s.mantissa_bits);
  int nans = 0;
  for (uint32_t code = 0; code < codes; ++code) {
    const double expected = oracle_decode(code, s);
    const float value = decode(code);
    ASSERT_TRUE(same_value(expected, value)) << s.name << " code 0x" << std::hex << code;
    if (std::isnan(value)) {
      ++nans;
      ASSERT_EQ(std::signbit(value), bool(code >> (s.exponent_bits + s.mantissa_bits)));
    }
    ASSERT_EQ(encode(value), expected_back(code, value)) << s.name << " code 0x" << std::hex << code;
  }
  const int expected_nans = s.ieee_specials ? 2 * ((1 << s.mantissa_bits) - 1) : 2;
  EXPECT_EQ(nans, expected_nans) << s.name;
}

auto quieted(uint32_t quiet_bit) {
  return [quiet_bit](uint32_t code, float value) { return std::isnan(value) ? code | quiet_bit : code; };
}

TEST(FormatRoundTrip, EveryFp16Pattern) {
  check_all_codes(kFp16, [](uint32_t c) { return f16_bits_to_f32(uint16_t(c)); },
                  [](float v) { return uint32_t(f32_to_f16_bits(v)); }, quieted(0x200));
}

TEST(FormatRoundTrip, EveryBf16Pattern) {
  check_all_codes(kBf16, [](uint32_t c) { return bf16_bits_to_f32(uint16_t(c)); },
                  [](float v) { return uint32_t(f32_to_bf16_bits(v)); }, quieted(0x40));
}

TEST(FormatRoundTrip, EveryE4m3Pattern) {
  for (bool saturate : {false, true}) {
    check_all_codes(kE4m3, [](uint32_t c) { return e4m3_bits_to_f32(uint8_t(c)); },
                    [saturate](float v) { return uint32_t(f32_to_e4m3_bits(v, saturate)); }, quieted(0));
  }
}

TEST(FormatRoundTrip, EveryE5m2Pattern) {
  check_all_codes(kE5m2, [](uint32_t c) { return e5m2_bits_to_f32(uint8_t(c)); },
                  [](float v) { return uint32_t(f32_to_e5m2_bits(v, false)); }, quieted(0x2));
  // Saturation clamps the infinities to the largest finite value and keeps everything else.
  check_all_codes(kE5m2, [](uint32_t c) { return e5m2_bits_to_f32(uint8_t(c)); },
                  [](float v) { return uint32_t(f32_to_e5m2_bits(v, true)); },
                  [](uint32_t code, float value) {
                    if (std::isinf(value)) return (code & 0x80u) | 0x7Bu;
                    return std::isnan(value) ? code | 0x2u : code;
                  });
}

// ---- hand-worked cases, independent of both implementation and oracle --------------------------

TEST(FormatEdges, Fp16) {
  EXPECT_EQ(f16_bits_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even (down)
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);  // halfway to 2^16: ties to the even inf code
  EXPECT_EQ(f32_to_f16_bits(-65520.0f), 0xFC00);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // half the min subnormal: tie to 0
  EXPECT_EQ(f32_to_f16_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16_bits(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 quanta: tie to even 2
  EXPECT_EQ(f32_to_f16_bits(1e-8f), 0x0000);  // the gradient that vanishes in fp16
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(inf()), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-inf()), 0xFC00);
  EXPECT_EQ(f32_to_f16_bits(qnan()) & 0x7E00, 0x7E00);
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::signaling_NaN()) & 0x7E00, 0x7E00);
}

TEST(FormatEdges, Bf16) {
  EXPECT_EQ(bf16_bits_to_f32(0x7F7F), 3.38953139e38f);
  EXPECT_EQ(bf16_bits_to_f32(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(f32_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds past max: inf
  EXPECT_EQ(f32_to_bf16_bits(3.38953139e38f), 0x7F7F);
  EXPECT_EQ(f32_to_bf16_bits(1e-8f), 0x322C);  // survives in bf16
  EXPECT_EQ(f32_to_bf16_bits(std::ldexp(1.0f, -134)), 0x0000);
  EXPECT_EQ(f32_to_bf16_bits(std::ldexp(3.0f, -134)), 0x0002);
  EXPECT_EQ(f32_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16_bits(-inf()), 0xFF80);
  EXPECT_EQ(f32_to_bf16_bits(qnan()) & 0x7FC0, 0x7FC0);
  // A NaN whose payload sits only in the low 16 bits must not truncate to inf.
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x7F800001u)), 0x7FC0);
}

TEST(FormatEdges, E4m3) {
  EXPECT_EQ(e4m3_bits_to_f32(0x7E), 448.0f);
  EXPECT_EQ(e4m3_bits_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_bits_to_f32(0x08), std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(e4m3_bits_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_bits_to_f32(0xFF)));
  EXPECT_EQ(e4m3_bits_to_f32(0x78), 256.0f);  // exponent all ones still holds numbers
  EXPECT_EQ(f32_to_e4m3_bits(464.0f, false), 0x7E);  // halfway 448..480 ties to even 448
  EXPECT_EQ(f32_to_e4m3_bits(std::nextafter(464.0f, 1e9f), false), 0x7F);
  EXPECT_EQ(f32_to_e4m3_bits(std::nextafter(464.0f, 1e9f), true), 0x7E);
  EXPECT_EQ(f32_to_e4m3_bits(-1000.0f, true), 0xFE);
  EXPECT_EQ(f32_to_e4m3_bits(-1000.0f, false), 0xFF);
  EXPECT_EQ(f32_to_e4m3_bits(inf(), false), 0x7F);
  EXPECT_EQ(f32_to_e4m3_bits(inf(), true), 0x7E);
  EXPECT_EQ(f32_to_e4m3_bits(-inf(), true), 0xFE);
  EXPECT_EQ(f32_to_e4m3_bits(qnan(), true), 0x7F);
  EXPECT_EQ(f32_to_e4m3_bits(std::ldexp(1.0f, -10), false), 0x00);  // half min subnormal: tie to 0
  EXPECT_EQ(f32_to_e4m3_bits(std::ldexp(3.0f, -10), false), 0x02);
  EXPECT_EQ(f32_to_e4m3_bits(-0.0f, false), 0x80);
  EXPECT_EQ(f32_to_e4m3_bits(1.0625f, false), 0x38);  // tie between 1 and 1.125 -> 1
}

TEST(FormatEdges, E5m2) {
  EXPECT_EQ(e5m2_bits_to_f32(0x7B), 57344.0f);
  EXPECT_EQ(e5m2_bits_to_f32(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(e5m2_bits_to_f32(0x7C), inf());
  EXPECT_EQ(f32_to_e5m2_bits(61440.0f, false), 0x7C);  // halfway to 2^16 ties to the inf code
  EXPECT_EQ(f32_to_e5m2_bits(61440.0f, true), 0x7B);
  EXPECT_EQ(f32_to_e5m2_bits(std::nextafter(61440.0f, 0.0f), false), 0x7B);
  EXPECT_EQ(f32_to_e5m2_bits(-inf(), false), 0xFC);
  EXPECT_EQ(f32_to_e5m2_bits(-inf(), true), 0xFB);
  EXPECT_EQ(f32_to_e5m2_bits(qnan(), true) & 0x7E, 0x7E);
  EXPECT_EQ(f32_to_e5m2_bits(std::ldexp(1.0f, -17), false), 0x00);
  EXPECT_EQ(f32_to_e5m2_bits(std::nextafter(std::ldexp(1.0f, -17), 1.0f), false), 0x01);
}

TEST(FormatEdges, Tf32) {
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(round_to_tf32(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(round_to_tf32(std::numeric_limits<float>::max()), inf());
  EXPECT_EQ(std::bit_cast<uint32_t>(round_to_tf32(-0.0f)), 0x80000000u);
  EXPECT_TRUE(std::isnan(round_to_tf32(std::bit_cast<float>(0x7F800001u))));
  EXPECT_EQ(std::bit_cast<uint32_t>(round_to_tf32(3.14159265f)) & 0x1FFFu, 0u);
}

// ---- fp16 against the F16C conversion instruction --------------------------------------------

#if defined(MPB_TEST_HAVE_F16C_INTRINSICS)
__attribute__((target("f16c"))) uint16_t f16c_from_float(float x) {
  return static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float f16c_to_float(uint16_t h) { return _cvtsh_ss(h); }
#endif

TEST(FormatF16c, MatchesHardwareBitForBit) {
#if defined(MPB_TEST_HAVE_F16C_INTRINSICS)
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C instructions";
  std::vector<float> inputs = edge_values(kFp16);
  for (float x : random_values(kFp16, 7u, 400000)) inputs.push_back(x);
  // A stride through all of fp32, NaN payloads included, from a random offset.
  std::mt19937 rng(99);
  for (uint64_t bits = rng() % 4099; bits <= 0xFFFFFFFFull; bits += 4099) inputs.push_back(std::bit_cast<float>(uint32_t(bits)));
  for (float x : inputs) {
    ASSERT_EQ(f32_to_f16_bits(x), f16c_from_float(x)) << "x bits 0x" << std::hex << std::bit_cast<uint32_t>(x);
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(std::bit_cast<uint32_t>(f16_bits_to_f32(uint16_t(h))), std::bit_cast<uint32_t>(f16c_to_float(uint16_t(h))))
        << "h 0x" << std::hex << h;
  }
#else
  GTEST_SKIP() << "F16C intrinsics need GCC or Clang on x86-64";
#endif
}

// ---- bf16 stochastic rounding ---------------------------------------------------------------

TEST(StochasticRounding, ZeroWordTruncates) {
  for (float x : random_values(kBf16, 11u, 100000)) {
    if (std::isnan(x)) continue;
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    ASSERT_EQ(f32_to_bf16_bits_stochastic(x, 0), uint16_t(bits >> 16)) << x;
    ASSERT_EQ(f32_to_bf16_bits_stochastic(x, 0xABCD0000u), uint16_t(bits >> 16)) << "high word must be ignored";
  }
}

TEST(StochasticRounding, AllOnesWordRoundsUpWhenAnyLowBitIsSet) {
  for (float x : random_values(kBf16, 12u, 100000)) {
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    if ((bits & 0x7FFFFFFFu) >= 0x7F800000u) continue;
    const uint16_t expected = uint16_t((bits >> 16) + ((bits & 0xFFFFu) != 0));
    ASSERT_EQ(f32_to_bf16_bits_stochastic(x, 0xFFFFu), expected) << x;
  }
}

TEST(StochasticRounding, RoundsUpWithProbabilityOfDroppedBits) {
  // Over all 2^16 random words the number of round-ups equals the dropped low bits exactly, so
  // the expectation of the rounded value is x itself.
  std::mt19937 rng(13);
  for (int trial = 0; trial < 50; ++trial) {
    const float x = std::bit_cast<float>(uint32_t((rng() & 0x7F7FFFFFu) | (trial % 2 ? 0x80000000u : 0u)));
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    uint32_t ups = 0;
    for (uint32_t word = 0; word < 65536; ++word) ups += f32_to_bf16_bits_stochastic(x, word) != uint16_t(bits >> 16);
    ASSERT_EQ(ups, bits & 0xFFFFu) << x;
  }
}

TEST(StochasticRounding, MeanConvergesToValue) {
  std::mt19937 rng(14);
  for (float x : {1.0f + std::ldexp(1.0f, -10), -3.0e-3f, 1234.567f, 7.0e-39f}) {
    const double quantum = std::fabs(bf16_bits_to_f32(uint16_t((std::bit_cast<uint32_t>(x) >> 16) + 1)) -
                                     bf16_bits_to_f32(uint16_t(std::bit_cast<uint32_t>(x) >> 16)));
    constexpr int kSamples = 200000;
    double sum = 0;
    for (int i = 0; i < kSamples; ++i) sum += bf16_bits_to_f32(f32_to_bf16_bits_stochastic(x, rng()));
    const double mean = sum / kSamples;
    // Each sample is one of two neighbours; the standard error is at most quantum / (2 sqrt(n)).
    EXPECT_NEAR(mean, x, 5 * quantum / (2 * std::sqrt(double(kSamples)))) << x;
    // Where RNE's error is well above the sampling error, SR's mean must beat it.
    const double rne = bf16_bits_to_f32(f32_to_bf16_bits(x));
    if (std::fabs(rne - x) > 0.01 * quantum) {
      EXPECT_LT(std::fabs(mean - x), std::fabs(rne - x)) << x;
    }
  }
}

TEST(StochasticRounding, KeepsSpecials) {
  EXPECT_EQ(f32_to_bf16_bits_stochastic(inf(), 0xFFFFu), 0x7F80);
  EXPECT_EQ(f32_to_bf16_bits_stochastic(-inf(), 0xFFFFu), 0xFF80);
  const uint16_t nan_code = f32_to_bf16_bits_stochastic(std::bit_cast<float>(0x7F80FFFFu), 0xFFFFu);
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(nan_code)));
}

}  // namespace
