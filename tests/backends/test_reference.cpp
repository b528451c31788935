// The oracle itself, against hand-computed values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "amp/formats.hpp"
#include "backends/reference/reference_backend.hpp"
#include "core/error.hpp"
#include "core/random.hpp"

namespace mpbench {
namespace {

using reference::element_as_float;

TEST(Reference, GemmOfAHandWorkedCase) {
  reference::ReferenceBackend r;
  // A = [[1, 2, 3], [4, 5, 6]] (2x3), B = [[1, 0, -1], [2, 1, 0]] (n=2 rows of k=3)
  const float a_values[] = {1, 2, 3, 4, 5, 6}, b_values[] = {1, 0, -1, 2, 1, 0};
  DeviceBuffer a = r.allocate(DType::f32, 6), b = r.allocate(DType::f32, 6), c = r.allocate(DType::f32, 4);
  r.upload(a, a_values, sizeof a_values);
  r.upload(b, b_values, sizeof b_values);
  r.make_gemm(GemmPrecision::fp32, {2, 2, 3, 1}, a, b, c)->run();
  // C[i][j] = sum_k A[i][k] B[j][k]
  EXPECT_EQ(element_as_float(c, 0), 1 - 3);
  EXPECT_EQ(element_as_float(c, 1), 2 + 2);
  EXPECT_EQ(element_as_float(c, 2), 4 - 6);
  EXPECT_EQ(element_as_float(c, 3), 8 + 5);
}

TEST(Reference, Tf32GemmRoundsItsInputs) {
  reference::ReferenceBackend r;
  const float x = 1.0f + std::ldexp(1.0f, -12);  // below tf32's resolution
  DeviceBuffer a = r.allocate(DType::f32, 1), b = r.allocate(DType::f32, 1), c = r.allocate(DType::f32, 1);
  const float one = 1.0f;
  r.upload(a, &x, sizeof x);
  r.upload(b, &one, sizeof one);
  r.make_gemm(GemmPrecision::fp32, {1, 1, 1, 1}, a, b, c)->run();
  EXPECT_EQ(element_as_float(c, 0), x);
  r.make_gemm(GemmPrecision::tf32, {1, 1, 1, 1}, a, b, c)->run();
  EXPECT_EQ(element_as_float(c, 0), 1.0f);
}

TEST(Reference, GemmRejectsWrongTypesAndSmallBuffers) {
  reference::ReferenceBackend r;
  DeviceBuffer a = r.allocate(DType::f32, 4), b = r.allocate(DType::f32, 4), c = r.allocate(DType::f32, 4);
  EXPECT_THROW(r.make_gemm(GemmPrecision::bf16, {2, 2, 2, 1}, a, b, c), UsageError);
  EXPECT_THROW(r.make_gemm(GemmPrecision::fp32, {3, 3, 3, 1}, a, b, c), UsageError);
}

TEST(Reference, StreamKernelsComputeBabelStreamFormulas) {
  reference::ReferenceBackend r;
  const std::size_t n = 1000;
  DeviceBuffer a = r.allocate(DType::f32, n), b = r.allocate(DType::f32, n), c = r.allocate(DType::f32, n);
  r.fill_uniform(a, 1, -1, 1);
  r.fill_uniform(b, 2, -1, 1);
  const float s = 0.4f;
  r.stream(StreamKernel::triad, a, b, c, s);
  for (std::size_t i = 0; i < n; i += 97)
    EXPECT_EQ(element_as_float(c, i), std::fma(s, element_as_float(b, i), element_as_float(a, i)));
  r.stream(StreamKernel::add, a, b, c, s);
  EXPECT_EQ(element_as_float(c, 5), element_as_float(a, 5) + element_as_float(b, 5));
  r.stream(StreamKernel::scale, a, b, c, s);
  EXPECT_EQ(element_as_float(c, 7), s * element_as_float(a, 7));
  DeviceBuffer d = r.allocate(DType::f32, 1);
  r.stream(StreamKernel::dot, a, b, d, s);
  double want = 0;
  for (std::size_t i = 0; i < n; ++i) want += double(element_as_float(a, i)) * element_as_float(b, i);
  EXPECT_NEAR(element_as_float(d, 0), want, 1e-5);
}

TEST(Reference, HalfStreamRoundsOnceFromFp32Math) {
  reference::ReferenceBackend r;
  DeviceBuffer a = r.allocate(DType::f16, 64), b = r.allocate(DType::f16, 64), c = r.allocate(DType::f16, 64);
  r.fill_uniform(a, 3, -1, 1);
  r.fill_uniform(b, 4, -1, 1);
  r.stream(StreamKernel::triad, a, b, c, 0.4f);
  for (std::size_t i = 0; i < 64; ++i) {
    const float exact = std::fma(0.4f, element_as_float(b, i), element_as_float(a, i));
    EXPECT_EQ(element_as_float(c, i), num::f16_bits_to_f32(num::f32_to_f16_bits(exact)));
  }
}

TEST(Reference, FillIsUniformInItsRange) {
  reference::ReferenceBackend r;
  DeviceBuffer x = r.allocate(DType::f32, 100000);
  r.fill_uniform(x, 9, 2.0f, 4.0f);
  double sum = 0, lo = 10, hi = -10;
  for (std::size_t i = 0; i < x.count(); ++i) {
    const double v = element_as_float(x, i);
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, 2.0);
  EXPECT_LT(hi, 4.0);
  EXPECT_NEAR(sum / x.count(), 3.0, 0.01);
  EXPECT_EQ(element_as_float(x, 123), uniform_at(9, 123, 2.0f, 4.0f));
}

TEST(Reference, ScaledE4m3CastRecordsAmaxAndSaturates) {
  reference::ReferenceBackend r;
  const float values[] = {1.0f, -3.5f, 1000.0f, 0.01f};
  DeviceBuffer src = r.allocate(DType::f32, 4), dst = r.allocate(DType::e4m3, 4);
  DeviceBuffer scale = r.allocate(DType::f32, 1), amax = r.allocate(DType::f32, 1);
  const float two = 2.0f;
  r.upload(src, values, sizeof values);
  r.upload(scale, &two, sizeof two);
  r.cast(CastKind::f32_to_e4m3_scaled, {&src, &dst, &scale, &amax, 0});
  EXPECT_EQ(element_as_float(amax, 0), 1000.0f);
  EXPECT_EQ(element_as_float(dst, 0), 2.0f);
  EXPECT_EQ(element_as_float(dst, 1), -7.0f);
  EXPECT_EQ(element_as_float(dst, 2), 448.0f);  // 2000 saturates to e4m3's largest value
}

// Quiet and signalling NaNs, of either sign, anywhere (the last element included): the amax is that
// of the other elements.
TEST(Reference, ScaledE4m3AmaxLeavesEveryNanOut) {
  reference::ReferenceBackend r;
  const float values[] = {5.0f, std::bit_cast<float>(0x7F800001u), -2.0f, NAN, 1.0f, std::bit_cast<float>(0xFFA00000u)};
  DeviceBuffer src = r.allocate(DType::f32, 6), dst = r.allocate(DType::e4m3, 6);
  DeviceBuffer scale = r.allocate(DType::f32, 1), amax = r.allocate(DType::f32, 1);
  const float one = 1.0f;
  r.upload(src, values, sizeof values);
  r.upload(scale, &one, sizeof one);
  r.cast(CastKind::f32_to_e4m3_scaled, {&src, &dst, &scale, &amax, 0});
  EXPECT_EQ(element_as_float(amax, 0), 5.0f);
}

TEST(Reference, StochasticRoundingIsUnbiased) {
  reference::ReferenceBackend r;
  const std::size_t n = 200000;
  const float x = 1.0f + 0.3f * std::ldexp(1.0f, -7);  // 30% of the way between two bf16 values
  std::vector<float> host(n, x);
  DeviceBuffer src = r.allocate(DType::f32, n), dst = r.allocate(DType::bf16, n);
  r.upload(src, host.data(), n * sizeof(float));
  r.cast(CastKind::f32_to_bf16_stochastic, {&src, &dst, nullptr, nullptr, 1234});
  double sum = 0;
  int up = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += element_as_float(dst, i);
    up += element_as_float(dst, i) > 1.0f;
  }
  EXPECT_NEAR(sum / n, x, 1e-4);
  EXPECT_NEAR(static_cast<double>(up) / n, 0.3, 0.01);
}

}  // namespace
}  // namespace mpbench
