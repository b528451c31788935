// Every backend against the reference: GEMM in each precision it supports on random odd shapes,
// stream kernels bit for bit on every element, casts bit for bit.
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "amp/formats.hpp"
#include "backend_fixture.hpp"

namespace mpbench::testing {
namespace {

// Allowed |c - reference| for one output: rounding of the output to its type, plus the fp32 (or
// fp16) accumulation error bound of a k-term dot product, relative to sum |a_i b_i|. Hopper's fp8
// Tensor Cores accumulate in about 13 mantissa bits until cuBLASLt moves the sum to fp32.
double tolerance(GemmPrecision p, double reference, double abs_products, std::int64_t k) {
  const double accumulate_eps = p == GemmPrecision::fp16_acc16 ? std::ldexp(1.0, -10)
                                : p == GemmPrecision::fp8_e4m3 ? std::ldexp(1.0, -13)
                                                               : std::ldexp(1.0, -23);
  double output_eps = std::ldexp(1.0, -22);
  const DType out = gemm_precision_info(p).output;
  if (out == DType::f16) output_eps = std::ldexp(1.0, -10);
  if (out == DType::bf16) output_eps = std::ldexp(1.0, -7);
  // Hardware may round fp32 to tf32 differently from the reference's round-to-nearest-even.
  const double input_eps = p == GemmPrecision::tf32 ? std::ldexp(1.0, -10) : 0.0;
  return output_eps * std::fabs(reference) + (2.0 * k * accumulate_eps + 2 * input_eps) * abs_products + 1e-30;
}

class GemmConformance : public OnEveryBackend {};

TEST_P(GemmConformance, MatchesReferenceOnRandomOddShapes) {
  std::mt19937 rng(::testing::UnitTest::GetInstance()->random_seed());
  std::uniform_int_distribution<int> dim(1, 70);
  int precisions_run = 0;
  for (const auto& info : gemm_precisions()) {
    if (backend_->gemm_unsupported(info.precision)) continue;
    ++precisions_run;
    for (int trial = 0; trial < 3; ++trial) {
      GemmShape s{dim(rng), dim(rng), dim(rng), 1 + trial % 2};
      if (info.precision == GemmPrecision::fp8_e4m3) s = {16 * (1 + dim(rng) % 4), 16 * (1 + dim(rng) % 4), 16 * (1 + dim(rng) % 4), 1};
      SCOPED_TRACE(::testing::Message() << info.name << " " << s.m << "x" << s.n << "x" << s.k << " batch " << s.batch);
      const auto seed = rng();
      const auto count = [](std::int64_t x, std::int64_t y, std::int64_t b) { return static_cast<std::size_t>(x * y * b); };
      DeviceBuffer a = backend_->allocate(info.input, count(s.m, s.k, s.batch));
      DeviceBuffer b = backend_->allocate(info.input, count(s.n, s.k, s.batch));
      DeviceBuffer c = backend_->allocate(info.output, count(s.m, s.n, s.batch));
      DeviceBuffer ra = oracle_.allocate(info.input, a.count()), rb = oracle_.allocate(info.input, b.count());
      DeviceBuffer rc = oracle_.allocate(info.output, c.count());
      for (auto [buffer, ref, stream] : {std::tuple{&a, &ra, 0}, std::tuple{&b, &rb, 1}}) {
        backend_->fill_uniform(*buffer, seed + stream, -2.0f, 2.0f);
        oracle_.fill_uniform(*ref, seed + stream, -2.0f, 2.0f);
      }
      backend_->make_gemm(info.precision, s, a, b, c)->run();
      backend_->synchronize();
      oracle_.make_gemm(info.precision, s, ra, rb, rc)->run();

      DeviceBuffer got = oracle_.allocate(info.output, c.count());
      backend_->download(got.data(), c, c.bytes());
      for (std::int64_t p = 0; p < s.batch; ++p)
        for (std::int64_t i = 0; i < s.m; ++i)
          for (std::int64_t j = 0; j < s.n; ++j) {
            double abs_products = 0;
            for (std::int64_t q = 0; q < s.k; ++q)
              abs_products += std::fabs(reference::element_as_float(ra, (p * s.m + i) * s.k + q) *
                                        reference::element_as_float(rb, (p * s.n + j) * s.k + q));
            const std::size_t at = (p * s.m + i) * s.n + j;
            const double want = reference::element_as_float(rc, at);
            ASSERT_NEAR(reference::element_as_float(got, at), want, tolerance(info.precision, want, abs_products, s.k))
                << "at batch " << p << " row " << i << " column " << j;
          }
    }
  }
  EXPECT_GE(precisions_run, 2) << "every backend runs at least fp32 and one low precision";
  if (backend_->device().backend == "cpu") {
    EXPECT_EQ(precisions_run, 4) << "every CPU runs fp32, fp16, bf16 and fp8-e4m3 (natively or converted)";
  }
}

class StreamConformance : public OnEveryBackend {};

TEST_P(StreamConformance, EveryElementMatchesTheReferenceBitForBit) {
  const std::size_t n = 100003;  // odd: exercises the vector tail
  for (DType type : {DType::f32, DType::f16, DType::bf16})
    for (StreamKernel kernel : {StreamKernel::copy, StreamKernel::scale, StreamKernel::add, StreamKernel::triad}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(type) << " " << stream_kernel_name(kernel));
      DeviceBuffer a = backend_->allocate(type, n), b = backend_->allocate(type, n), c = backend_->allocate(type, n);
      DeviceBuffer ra = oracle_.allocate(type, n), rb = oracle_.allocate(type, n), rc = oracle_.allocate(type, n);
      backend_->fill_uniform(a, 5, -3.0f, 3.0f);
      backend_->fill_uniform(b, 6, -3.0f, 3.0f);
      backend_->fill_uniform(c, 7, 100.0f, 200.0f);  // stale values that must all be overwritten
      oracle_.fill_uniform(ra, 5, -3.0f, 3.0f);
      oracle_.fill_uniform(rb, 6, -3.0f, 3.0f);
      backend_->stream(kernel, a, b, c, 0.4f);
      backend_->synchronize();
      oracle_.stream(kernel, ra, rb, rc, 0.4f);
      const auto got = bytes_of(c);
      ASSERT_EQ(std::memcmp(got.data(), rc.data(), rc.bytes()), 0);
    }
}

TEST_P(StreamConformance, DotIsTheSumOfProducts) {
  const std::size_t n = 65537;
  for (DType type : {DType::f32, DType::f16, DType::bf16}) {
    DeviceBuffer a = backend_->allocate(type, n), b = backend_->allocate(type, n), c = backend_->allocate(DType::f32, 1);
    DeviceBuffer ra = oracle_.allocate(type, n), rb = oracle_.allocate(type, n), rc = oracle_.allocate(DType::f32, 1);
    backend_->fill_uniform(a, 8, 0.5f, 1.5f);
    backend_->fill_uniform(b, 9, 0.5f, 1.5f);
    oracle_.fill_uniform(ra, 8, 0.5f, 1.5f);
    oracle_.fill_uniform(rb, 9, 0.5f, 1.5f);
    backend_->stream(StreamKernel::dot, a, b, c, 0);
    backend_->synchronize();
    oracle_.stream(StreamKernel::dot, ra, rb, rc, 0);
    float got = 0;
    backend_->download(&got, c, sizeof got);
    const float want = *static_cast<float*>(rc.data());
    EXPECT_NEAR(got, want, 1e-5 * want) << dtype_name(type);  // fp32 sums in another order
  }
}

class CastConformance : public OnEveryBackend {};

TEST_P(CastConformance, EveryCastMatchesTheReferenceBitForBit) {
  const std::size_t n = 70001;
  for (CastKind kind : {CastKind::f32_to_f16, CastKind::f32_to_bf16, CastKind::f16_to_f32, CastKind::bf16_to_f32,
                        CastKind::f32_to_e4m3_scaled, CastKind::f32_to_bf16_stochastic}) {
    SCOPED_TRACE(cast_kind_name(kind));
    const DType from = cast_source_type(kind), to = cast_destination_type(kind);
    DeviceBuffer src = backend_->allocate(from, n), dst = backend_->allocate(to, n);
    DeviceBuffer scale = backend_->allocate(DType::f32, 1), amax = backend_->allocate(DType::f32, 1);
    DeviceBuffer rsrc = oracle_.allocate(from, n), rdst = oracle_.allocate(to, n);
    DeviceBuffer rscale = oracle_.allocate(DType::f32, 1), ramax = oracle_.allocate(DType::f32, 1);
    // Wide range: overflows fp16 and saturates e4m3 after scaling, underflows to subnormals.
    backend_->fill_uniform(src, 31, -1e5f, 1e5f);
    oracle_.fill_uniform(rsrc, 31, -1e5f, 1e5f);
    const float scale_value = 1.0f / 64.0f;
    backend_->upload(scale, &scale_value, sizeof scale_value);
    oracle_.upload(rscale, &scale_value, sizeof scale_value);
    backend_->cast(kind, {&src, &dst, &scale, &amax, 77});
    backend_->synchronize();
    oracle_.cast(kind, {&rsrc, &rdst, &rscale, &ramax, 77});
    const auto got = bytes_of(dst);
    ASSERT_EQ(std::memcmp(got.data(), rdst.data(), rdst.bytes()), 0);
    if (kind == CastKind::f32_to_e4m3_scaled) {
      float got_amax = 0;
      backend_->download(&got_amax, amax, sizeof got_amax);
      EXPECT_EQ(got_amax, *static_cast<float*>(ramax.data()));
      EXPECT_GT(got_amax, 9e4f);
    }
  }
}

// Current scaling over the same wide range: the amax, the scale chosen from it and every code.
TEST_P(CastConformance, CurrentScaledBf16CastMatchesTheReferenceBitForBit) {
  for (std::size_t n : {std::size_t{70001}, std::size_t{13}}) {
    SCOPED_TRACE(n);
    DeviceBuffer src = backend_->allocate(DType::bf16, n), dst = backend_->allocate(DType::e4m3, n);
    DeviceBuffer amax = backend_->allocate(DType::f32, 1), scale = backend_->allocate(DType::f32, 1);
    DeviceBuffer rsrc = oracle_.allocate(DType::bf16, n), rdst = oracle_.allocate(DType::e4m3, n);
    DeviceBuffer ramax = oracle_.allocate(DType::f32, 1), rscale = oracle_.allocate(DType::f32, 1);
    backend_->fill_uniform(src, 32, -1e5f, 1e5f);
    oracle_.fill_uniform(rsrc, 32, -1e5f, 1e5f);
    backend_->cast(CastKind::bf16_to_e4m3_scaled, {&src, &dst, nullptr, &amax, 0, &scale});
    backend_->synchronize();
    oracle_.cast(CastKind::bf16_to_e4m3_scaled, {&rsrc, &rdst, nullptr, &ramax, 0, &rscale});
    const auto got = bytes_of(dst);
    ASSERT_EQ(std::memcmp(got.data(), rdst.data(), rdst.bytes()), 0);
    float got_amax = 0, got_scale = 0;
    backend_->download(&got_amax, amax, sizeof got_amax);
    backend_->download(&got_scale, scale, sizeof got_scale);
    EXPECT_EQ(got_amax, *static_cast<float*>(ramax.data()));
    EXPECT_EQ(got_scale, *static_cast<float*>(rscale.data()));
    EXPECT_EQ(got_scale, 448.0f / got_amax);
  }
}

TEST_P(CastConformance, CurrentScaledBf16CastRefusesAnInputScaleAndOneBufferForTwo) {
  DeviceBuffer src = backend_->allocate(DType::bf16, 64), dst = backend_->allocate(DType::e4m3, 64);
  DeviceBuffer amax = backend_->allocate(DType::f32, 1), scale = backend_->allocate(DType::f32, 1);
  DeviceBuffer wide = backend_->allocate(DType::f32, 64);
  const CastKind kind = CastKind::bf16_to_e4m3_scaled;
  EXPECT_THROW(backend_->cast(kind, {&src, &dst, &scale, &amax, 0, &scale}), UsageError);   // an input scale
  EXPECT_THROW(backend_->cast(kind, {&src, &dst, nullptr, &amax, 0, nullptr}), UsageError);  // nowhere to put it
  EXPECT_THROW(backend_->cast(kind, {&src, &dst, nullptr, &amax, 0, &amax}), UsageError);    // one buffer for two
  EXPECT_THROW(backend_->cast(kind, {&wide, &dst, nullptr, &amax, 0, &scale}), UsageError);  // an fp32 source
  EXPECT_NO_THROW(backend_->cast(kind, {&src, &dst, nullptr, &amax, 0, &scale}));
  backend_->synchronize();
}

// The fused cast-transpose-amax on odd shapes (partial 32 x 32 tiles of the GPU kernel, 64 x 64
// of the CPU loop, the CPU's threaded loop from 32768 elements): both code matrices and the amax
// bit for bit, over a range that saturates e4m3 after scaling and underflows to its subnormals;
// then with a NaN, which makes the amax NaN on every backend.
TEST_P(CastConformance, CastTransposeAmaxMatchesTheReferenceBitForBit) {
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {1, 33}, {31, 17}, {64, 64}, {100, 3}, {257, 300}};
  for (const auto& [rows, cols] : shapes)
    for (bool with_nan : {false, true}) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols << (with_nan ? " with a NaN" : ""));
      const std::size_t n = rows * cols;
      const float scale_value = 1.0f / 64.0f;
      const std::uint16_t nan_bits = 0xFFC0;
      DeviceBuffer src = backend_->allocate(DType::bf16, n), scale = backend_->allocate(DType::f32, 1);
      DeviceBuffer codes = backend_->allocate(DType::e4m3, n), transposed = backend_->allocate(DType::e4m3, n);
      DeviceBuffer amax = backend_->allocate(DType::f32, 1);
      DeviceBuffer rsrc = oracle_.allocate(DType::bf16, n), rscale = oracle_.allocate(DType::f32, 1);
      DeviceBuffer rcodes = oracle_.allocate(DType::e4m3, n), rtransposed = oracle_.allocate(DType::e4m3, n);
      DeviceBuffer ramax = oracle_.allocate(DType::f32, 1);
      backend_->fill_uniform(src, 33 + n, -1e5f, 1e5f);
      oracle_.fill_uniform(rsrc, 33 + n, -1e5f, 1e5f);
      if (with_nan) {
        std::vector<std::uint16_t> host(n);
        backend_->download(host.data(), src, src.bytes());
        host[n / 2] = nan_bits;
        backend_->upload(src, host.data(), src.bytes());
        std::memcpy(static_cast<std::uint16_t*>(rsrc.data()) + n / 2, &nan_bits, sizeof nan_bits);
      }
      backend_->upload(scale, &scale_value, sizeof scale_value);
      oracle_.upload(rscale, &scale_value, sizeof scale_value);
      backend_->cast_transpose_amax({&src, rows, cols, &scale, &codes, &transposed, &amax});
      backend_->synchronize();
      oracle_.cast_transpose_amax({&rsrc, rows, cols, &rscale, &rcodes, &rtransposed, &ramax});
      const auto got_codes = bytes_of(codes), got_transposed = bytes_of(transposed);
      EXPECT_EQ(std::memcmp(got_codes.data(), rcodes.data(), n), 0) << "codes";
      EXPECT_EQ(std::memcmp(got_transposed.data(), rtransposed.data(), n), 0) << "transposed";
      float got_amax = 0;
      backend_->download(&got_amax, amax, sizeof got_amax);
      const float want_amax = *static_cast<float*>(ramax.data());
      EXPECT_EQ(std::isnan(want_amax), with_nan);
      if (with_nan) {
        EXPECT_TRUE(std::isnan(got_amax)) << got_amax;
      } else {
        EXPECT_EQ(got_amax, want_amax);
      }
    }
}

class MemoryConformance : public OnEveryBackend {};

TEST_P(MemoryConformance, FillIsTheSameOnEveryBackend) {
  for (DType type : {DType::f32, DType::f16, DType::bf16, DType::e4m3, DType::e5m2}) {
    DeviceBuffer x = backend_->allocate(type, 4099);
    DeviceBuffer r = oracle_.allocate(type, 4099);
    backend_->fill_uniform(x, 42, -1.0f, 1.0f);
    oracle_.fill_uniform(r, 42, -1.0f, 1.0f);
    const auto got = bytes_of(x);
    EXPECT_EQ(std::memcmp(got.data(), r.data(), r.bytes()), 0) << dtype_name(type);
  }
}

TEST_P(MemoryConformance, LibraryCopyCopiesEverything) {
  DeviceBuffer a = backend_->allocate(DType::f32, 12345), c = backend_->allocate(DType::f32, 12345);
  backend_->fill_uniform(a, 1, -1, 1);
  backend_->fill_uniform(c, 2, 5, 6);
  backend_->copy(c, a);
  backend_->synchronize();
  EXPECT_EQ(bytes_of(a), bytes_of(c));
}

TEST_P(MemoryConformance, TooLargeAnAllocationIsOutOfMemory) {
  const std::size_t huge = static_cast<std::size_t>(backend_->device().memory_bytes) * 4;
  EXPECT_THROW(backend_->allocate(DType::f32, huge), OutOfMemoryError);
}

TEST_P(MemoryConformance, BadArgumentsAreRefusedAlike) {
  DeviceBuffer a = backend_->allocate(DType::f32, 64), c = backend_->allocate(DType::f32, 64);
  DeviceBuffer half = backend_->allocate(DType::f16, 64), small = backend_->allocate(DType::f32, 8);
  EXPECT_THROW(backend_->stream(StreamKernel::add, a, half, c, 1), UsageError);     // b of another dtype
  EXPECT_THROW(backend_->stream(StreamKernel::triad, a, small, c, 1), UsageError);  // b too short
  EXPECT_THROW(backend_->stream(StreamKernel::copy, a, a, small, 1), UsageError);   // c too short
  EXPECT_THROW(backend_->stream(StreamKernel::dot, a, a, half, 1), UsageError);     // sum must be fp32
  EXPECT_NO_THROW(backend_->stream(StreamKernel::scale, a, small, c, 1));           // scale never reads b
  EXPECT_THROW(backend_->cast(CastKind::f32_to_bf16, {&a, &c, nullptr, nullptr, 0}), UsageError);
  EXPECT_THROW(backend_->cast(CastKind::f16_to_f32, {&half, &small, nullptr, nullptr, 0}), UsageError);
  DeviceBuffer e4m3 = backend_->allocate(DType::e4m3, 64);
  EXPECT_THROW(backend_->cast(CastKind::f32_to_e4m3_scaled, {&a, &e4m3, nullptr, nullptr, 0}), UsageError);
  backend_->synchronize();
}

const auto kBackends = ::testing::Values(std::string("cpu"), std::string("cuda"));
INSTANTIATE_TEST_SUITE_P(Backends, GemmConformance,
                         ::testing::Values(std::string("cpu"), std::string("cpu-converted"), std::string("cuda")),
                         [](const auto& info) { return testing::gtest_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Backends, StreamConformance, kBackends, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, CastConformance, kBackends, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, MemoryConformance, kBackends, backend_name);

}  // namespace
}  // namespace mpbench::testing
