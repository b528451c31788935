// What the CPU backend says it can do matches the CPU, and oneDNN's choice is recorded; its fp16/bf16
// element loops give the reference's bits on every input pattern.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/reference/reference_backend.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

namespace mpbench {
namespace {

TEST(CpuBackend, DescribesTheHost) {
  auto cpu = cpu::make_backend();
  EXPECT_EQ(cpu->device().backend, "cpu");
  EXPECT_EQ(cpu->device().name, describe_cpu().model);
  EXPECT_GT(cpu->device().l2_bytes, 0u);
  EXPECT_FALSE(cpu->environment()["onednn"]["version"].get<std::string>().empty());
}

TEST(CpuBackend, NoTensorCoreOnlyPrecisions) {
  auto cpu = cpu::make_backend();
  EXPECT_FALSE(cpu->gemm_unsupported(GemmPrecision::fp32));
  for (auto p : {GemmPrecision::tf32, GemmPrecision::fp16_acc16, GemmPrecision::fp8_e4m3}) {
    const auto why = cpu->gemm_unsupported(p);
    ASSERT_TRUE(why) << gemm_precision_info(p).name;
    EXPECT_FALSE(why->empty());
  }
}

TEST(CpuBackend, Bf16UsesTheBf16PathWhereTheCpuHasIt) {
  if (!describe_cpu().has("avx512_bf16") && !describe_cpu().has("amx_bf16"))
    GTEST_SKIP() << "this CPU has neither AVX512-BF16 nor AMX-BF16";
  auto cpu = cpu::make_backend();
  ASSERT_FALSE(cpu->gemm_unsupported(GemmPrecision::bf16));
  DeviceBuffer a = cpu->allocate(DType::bf16, 256 * 256), b = cpu->allocate(DType::bf16, 256 * 256);
  DeviceBuffer c = cpu->allocate(DType::bf16, 256 * 256);
  cpu->fill_uniform(a, 1, -1, 1);
  cpu->fill_uniform(b, 2, -1, 1);
  auto gemm = cpu->make_gemm(GemmPrecision::bf16, {256, 256, 256, 1}, a, b, c);
  const std::string impl = gemm->details()["implementation"];
  EXPECT_NE(impl.find("bf16"), std::string::npos) << impl;
}

TEST(CpuBackend, Fp16NeedsAvx512Fp16AndOneDnnsKernel) {
  auto cpu = cpu::make_backend();
  const auto why = cpu->gemm_unsupported(GemmPrecision::fp16);
  // Without the instructions there is no fp16 matmul. With them, oneDNN decides: 2.6.3 has none
  // even on AVX512-FP16 CPUs, whatever the ISA limit (the GEMM conformance test runs it where it has).
  if (!describe_cpu().has("avx512_fp16") && !describe_cpu().has("amx_fp16")) {
    ASSERT_TRUE(why);
  }
  if (why) {
    EXPECT_NE(why->find("oneDNN"), std::string::npos) << *why;
    EXPECT_NE(why->find("effective ISA"), std::string::npos) << *why;
  }
}

TEST(CpuBackend, UnknownIsaIsAUsageError) { EXPECT_THROW(cpu::limit_isa("avx1024"), UsageError); }

TEST(CpuBackend, NoHostTransfersWithoutAGpu) {
  auto cpu = cpu::make_backend();
  std::string why;
  EXPECT_EQ(cpu->make_host_transfer(TransferDirection::host_to_device, 1024, &why), nullptr);
  EXPECT_FALSE(why.empty());
}

TEST(CpuBackend, ReportsWhichElementLoopsItUses) {
  const CpuDescription host = describe_cpu();
  const bool vector = host.has("avx2") && host.has("fma") && host.has("f16c");
  EXPECT_EQ(cpu::make_backend()->environment()["element_loops"].get<std::string>(), vector ? "avx2+f16c" : "scalar");
}

// ---- fp16/bf16 element loops against the reference, bit for bit ---------------------------------

struct HalfFormat {
  DType type;
  std::uint16_t inf;
  std::uint16_t max_finite;
};
constexpr HalfFormat kHalfFormats[] = {{DType::f16, 0x7C00, 0x7BFF}, {DType::bf16, 0x7F80, 0x7F7F}};
constexpr std::uint16_t kSign = 0x8000;
constexpr std::uint16_t kTopExponentBit = 0x4000;  // of both formats

bool is_nan(HalfFormat f, std::uint16_t bits) { return (bits & ~kSign) > f.inf; }

// Every bit pattern, then five special elements that also leave a tail of n % 8 = 5.
std::vector<std::uint16_t> every_pattern(HalfFormat f) {
  std::vector<std::uint16_t> bits;
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) bits.push_back(static_cast<std::uint16_t>(h));
  const std::uint16_t neg_inf = f.inf | kSign;
  bits.insert(bits.end(), {f.inf, neg_inf, f.max_finite, kSign, f.max_finite});
  return bits;
}

// Second operands: the patterns shuffled, so every pair of magnitudes has a chance to meet; the
// tail meets inf with -inf, max with max (overflow), -0 with +0 and max with -max. Where both
// operands would be NaN, b's top exponent bit is cleared: IEEE 754 leaves open which payload wins.
std::vector<std::uint16_t> partners(HalfFormat f, const std::vector<std::uint16_t>& a) {
  std::vector<std::uint16_t> b(a.size());
  for (std::size_t i = 0; i < 0x10000; ++i) {
    b[i] = a[(i * 40503 + 12345) & 0xFFFF];  // odd multiplier: a permutation
    if (is_nan(f, a[i]) && is_nan(f, b[i])) b[i] &= ~kTopExponentBit;
  }
  const std::uint16_t neg_inf = f.inf | kSign, neg_max = f.max_finite | kSign;
  const std::uint16_t tail[] = {neg_inf, f.inf, f.max_finite, 0, neg_max};
  std::copy(std::begin(tail), std::end(tail), b.end() - 5);
  return b;
}

// fp32 inputs of the narrowing casts: every high half (all exponents and signs, subnormals, ±inf,
// max finite, NaNs with many payloads, ±0) under low halves at the bf16 and fp16 rounding
// boundaries: ties, one below and above them, fp16's largest finite value and its overflow tie.
// Then a tail of n % 8 = 5: a NaN with only low payload bits, -inf, fp16's overflow tie 65520, a
// bf16 tie to even and the smallest negative subnormal.
std::vector<float> rounding_boundaries() {
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x2000, 0x4000,
                                0x7FFF, 0x8000, 0x8001, 0xE000, 0xF000, 0xFFFF};
  std::vector<float> values;
  for (std::uint32_t high = 0; high <= 0xFFFF; ++high)
    for (std::uint32_t low : lows) values.push_back(std::bit_cast<float>(high << 16 | low));
  for (std::uint32_t bits : {0x7F800001u, 0xFF800000u, 0x477FF000u, 0x3F808000u, 0x80000001u})
    values.push_back(std::bit_cast<float>(bits));
  return values;
}

template <typename T>
DeviceBuffer upload(Backend& backend, DType type, const std::vector<T>& host) {
  DeviceBuffer buffer = backend.allocate(type, host.size());
  backend.upload(buffer, host.data(), buffer.bytes());
  return buffer;
}

template <typename T>
std::vector<T> download(Backend& backend, const DeviceBuffer& buffer) {
  std::vector<T> host(buffer.bytes() / sizeof(T));
  backend.synchronize();
  backend.download(host.data(), buffer, buffer.bytes());
  return host;
}

std::uint32_t bits_of(std::uint16_t x) { return x; }
std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

// Empty when equal, else the first element whose bits differ.
template <typename T>
std::string first_difference(const std::vector<T>& got, const std::vector<T>& want) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (bits_of(got[i]) != bits_of(want[i]))
      return fmt::format("element {}: bits {:#x}, the reference {:#x}", i, bits_of(got[i]), bits_of(want[i]));
  return "";
}

std::vector<std::uint16_t> stream_on(Backend& backend, HalfFormat f, StreamKernel kernel,
                                     const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                                     float scalar) {
  const DeviceBuffer da = upload(backend, f.type, a), db = upload(backend, f.type, b);
  DeviceBuffer dc = backend.allocate(f.type, a.size());
  backend.fill_uniform(dc, 7, 100.0f, 200.0f);  // stale values that must all be overwritten
  backend.stream(kernel, da, db, dc, scalar);
  return download<std::uint16_t>(backend, dc);
}

template <typename Out, typename In>
std::vector<Out> cast_on(Backend& backend, CastKind kind, const std::vector<In>& source) {
  const DeviceBuffer src = upload(backend, cast_source_type(kind), source);
  DeviceBuffer dst = backend.allocate(cast_destination_type(kind), source.size());
  backend.cast(kind, {&src, &dst, nullptr, nullptr, 0});
  return download<Out>(backend, dst);
}

class CpuElementLoops : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> cpu_ = cpu::make_backend();
  reference::ReferenceBackend oracle_;
};

TEST_F(CpuElementLoops, StreamKernelsMatchTheReferenceOnEveryBitPattern) {
  for (HalfFormat f : kHalfFormats) {
    const auto a = every_pattern(f), b = partners(f, a);
    // 3 makes ties and overflows, 0.4 an inexact product.
    for (float scalar : {3.0f, 0.4f})
      for (StreamKernel kernel : {StreamKernel::copy, StreamKernel::scale, StreamKernel::add, StreamKernel::triad}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(f.type) << " " << stream_kernel_name(kernel) << " s="
                                          << scalar);
        EXPECT_EQ(first_difference(stream_on(*cpu_, f, kernel, a, b, scalar),
                                   stream_on(oracle_, f, kernel, a, b, scalar)), "");
      }
  }
}

// With a = round(-s*b), triad leaves only the rounding error of s*b, where one rounding (fmaf) and
// two (multiply, then add) give different bits. Where b is NaN, a is the same NaN quieted.
TEST_F(CpuElementLoops, TriadRoundsOnceAsFmafDoes) {
  const float scalar = 0.4f;
  for (HalfFormat f : kHalfFormats) {
    SCOPED_TRACE(dtype_name(f.type));
    const auto b = every_pattern(f);
    const auto a = stream_on(oracle_, f, StreamKernel::scale, b, b, -scalar);
    EXPECT_EQ(first_difference(stream_on(*cpu_, f, StreamKernel::triad, a, b, scalar),
                               stream_on(oracle_, f, StreamKernel::triad, a, b, scalar)), "");
  }
}

TEST_F(CpuElementLoops, WideningCastsMatchTheReferenceOnEveryBitPattern) {
  for (auto [kind, f] :
       {std::pair{CastKind::f16_to_f32, kHalfFormats[0]}, std::pair{CastKind::bf16_to_f32, kHalfFormats[1]}}) {
    SCOPED_TRACE(cast_kind_name(kind));
    const auto source = every_pattern(f);
    EXPECT_EQ(first_difference(cast_on<float>(*cpu_, kind, source), cast_on<float>(oracle_, kind, source)), "");
  }
}

TEST_F(CpuElementLoops, NarrowingCastsMatchTheReferenceAtEveryRoundingBoundary) {
  const auto source = rounding_boundaries();
  for (CastKind kind : {CastKind::f32_to_f16, CastKind::f32_to_bf16}) {
    SCOPED_TRACE(cast_kind_name(kind));
    EXPECT_EQ(first_difference(cast_on<std::uint16_t>(*cpu_, kind, source),
                               cast_on<std::uint16_t>(oracle_, kind, source)), "");
  }
}

}  // namespace
}  // namespace mpbench
