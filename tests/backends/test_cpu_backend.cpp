// What the CPU backend says it can do matches the CPU's own flags under each --cpu-gemm choice, and
// each GEMM records the steps of its path; its fp16/bf16 element loops give the reference's bits on
// every input pattern, its fp8 and stochastic-rounding casts on every input class.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_version.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "amp/formats.hpp"
#include "amp/fp8_scaling.hpp"
#include "backends/cpu/conversions.hpp"
#include "backends/cast_transpose.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/isa.hpp"
#include "backends/cpu/self_check.hpp"
#include "backends/reference/reference_backend.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/random.hpp"
#include "tests/cpu_expectations.hpp"
#include "tests/test_seed.hpp"

namespace mpbench {
namespace {

TEST(CpuBackend, DescribesTheHost) {
  auto cpu = cpu::make_backend();
  EXPECT_EQ(cpu->device().backend, "cpu");
  EXPECT_EQ(cpu->device().name, describe_cpu().model);
  EXPECT_GT(cpu->device().l2_bytes, 0u);
  EXPECT_FALSE(cpu->environment()["onednn"]["version"].get<std::string>().empty());
}

TEST(CpuBackend, RecordsWhichOneDnnItRunsOn) {
  const nlohmann::json onednn = cpu::make_backend()->environment()["onednn"];
  // The version the process loaded is the one it was built against (the .deps one or the system's).
  const dnnl_version_t* built = dnnl_version();
  EXPECT_EQ(onednn["version"], fmt::format("{}.{}.{}", DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH));
  EXPECT_EQ(onednn["hash"], built->hash);
  EXPECT_EQ(onednn["cpu_runtime"], "OpenMP") << "mpbench links GNU OpenMP: oneDNN must run on it too";
  EXPECT_NE(onednn["source"], "unknown");
  EXPECT_NE(onednn["library"].get<std::string>().find("libdnnl.so"), std::string::npos) << onednn["library"];
}

std::unique_ptr<Backend> cpu_with(cpu::GemmPathChoice choice) { return cpu::make_backend({choice}); }

constexpr cpu::GemmPathChoice kChoices[] = {cpu::GemmPathChoice::automatic, cpu::GemmPathChoice::native,
                                            cpu::GemmPathChoice::converted};

TEST(CpuBackend, Fp32IsNativeAndTensorCoreFormatsUnsupportedWhateverTheChoice) {
  for (cpu::GemmPathChoice choice : kChoices) {
    SCOPED_TRACE(std::string(cpu::gemm_path_choice_name(choice)));
    auto cpu = cpu_with(choice);
    EXPECT_EQ(cpu->capabilities().path(GemmPrecision::fp32), GemmPath::native);
    for (auto p : {GemmPrecision::tf32, GemmPrecision::fp16_acc16}) {
      const auto why = cpu->gemm_unsupported(p);
      ASSERT_TRUE(why) << gemm_precision_info(p).name;
      EXPECT_FALSE(why->empty());
    }
  }
}

// The GEMM's record names every step of the path it ran.
std::string steps_of(Backend& cpu, GemmPrecision precision) {
  const auto& info = gemm_precision_info(precision);
  DeviceBuffer a = cpu.allocate(info.input, 64 * 48), b = cpu.allocate(info.input, 32 * 48);
  DeviceBuffer c = cpu.allocate(info.output, 64 * 32);
  cpu.fill_uniform(a, 1, -1, 1);
  cpu.fill_uniform(b, 2, -1, 1);
  return cpu.make_gemm(precision, {64, 32, 48, 1}, a, b, c)->details()["steps"].dump();
}

TEST(CpuBackend, AutoRunsBf16NativelyExactlyWhereTheCpuHasTheInstructions) {
  auto cpu = cpu_with(cpu::GemmPathChoice::automatic);
  const GemmCapability& bf16 = cpu->capabilities().gemm(GemmPrecision::bf16);
  const std::string steps = steps_of(*cpu, GemmPrecision::bf16);
  if (testing::cpu_runs_bf16_natively()) {
    EXPECT_EQ(bf16.path, GemmPath::native) << bf16.reason;
    EXPECT_NE(steps.find("bf16 matmul"), std::string::npos) << steps;
    EXPECT_EQ(steps.find("-> fp32"), std::string::npos) << steps;
  } else {
    EXPECT_EQ(bf16.path, GemmPath::converted) << bf16.reason;
    EXPECT_NE(bf16.reason.find("BF16"), std::string::npos) << "names the missing instructions: " << bf16.reason;
    EXPECT_NE(steps.find("bf16 -> fp32"), std::string::npos) << steps;
    EXPECT_NE(steps.find("fp32 matmul"), std::string::npos) << steps;
    EXPECT_NE(steps.find("fp32 -> bf16"), std::string::npos) << steps;
  }
}

TEST(CpuBackend, AutoRunsFp16AndFp8ConvertedWithoutTheirInstructions) {
  auto cpu = cpu_with(cpu::GemmPathChoice::automatic);
  for (auto [precision, native] : {std::pair{GemmPrecision::fp16, testing::cpu_runs_fp16_natively()},
                                   std::pair{GemmPrecision::fp8_e4m3, testing::cpu_runs_fp8_natively()}}) {
    const GemmCapability& row = cpu->capabilities().gemm(precision);
    EXPECT_EQ(row.path, native ? GemmPath::native : GemmPath::converted) << row.reason;
    EXPECT_NE(row.reason.find("oneDNN"), std::string::npos) << row.reason;
  }
  EXPECT_NE(steps_of(*cpu, GemmPrecision::fp8_e4m3).find("fp8-e4m3 -> fp32"), std::string::npos);
}

TEST(CpuBackend, ConvertedRunsEveryLowPrecisionThroughTheFp32Matmul) {
  auto cpu = cpu_with(cpu::GemmPathChoice::converted);
  for (auto p : {GemmPrecision::fp16, GemmPrecision::bf16, GemmPrecision::fp8_e4m3}) {
    SCOPED_TRACE(std::string(gemm_precision_info(p).name));
    EXPECT_EQ(cpu->capabilities().path(p), GemmPath::converted);
    const std::string steps = steps_of(*cpu, p);
    EXPECT_NE(steps.find("fp32 matmul"), std::string::npos) << steps;
    EXPECT_NE(steps.find(fmt::format("{} -> fp32", dtype_name(gemm_precision_info(p).input))), std::string::npos)
        << steps;
  }
}

TEST(CpuBackend, NativeRunsOnlyWhatTheCpuHasAndSaysWhatItLacks) {
  auto cpu = cpu_with(cpu::GemmPathChoice::native);
  const GemmCapability& bf16 = cpu->capabilities().gemm(GemmPrecision::bf16);
  if (testing::cpu_runs_bf16_natively()) {
    EXPECT_EQ(bf16.path, GemmPath::native) << bf16.reason;
  } else {
    EXPECT_EQ(bf16.path, GemmPath::unsupported) << bf16.reason;
    const bool has_flags = describe_cpu().has("avx512_bf16") || describe_cpu().has("amx_bf16");
    // Without the instructions the reason names them; with them but a limit, it names the ISA.
    EXPECT_NE(bf16.reason.find(has_flags ? "ISA" : "AVX512-BF16"), std::string::npos) << bf16.reason;
  }
  for (auto p : {GemmPrecision::fp16, GemmPrecision::fp8_e4m3}) {
    const auto why = cpu->gemm_unsupported(p);
    ASSERT_TRUE(why) << gemm_precision_info(p).name;
    DeviceBuffer a = cpu->allocate(gemm_precision_info(p).input, 16 * 16);
    DeviceBuffer c = cpu->allocate(gemm_precision_info(p).output, 16 * 16);
    EXPECT_THROW(cpu->make_gemm(p, {16, 16, 16, 1}, a, a, c), UsageError);
  }
}

TEST(CpuBackend, RecordsItsChoiceAndItsTableInTheEnvironment) {
  const nlohmann::json env = cpu_with(cpu::GemmPathChoice::converted)->environment();
  EXPECT_EQ(env["gemm_path_choice"], "converted");
  EXPECT_EQ(env["capabilities"]["gemm"]["bf16"]["path"], "converted");
  EXPECT_EQ(env["capabilities"]["gemm"]["tf32"]["path"], "unsupported");
}

TEST(CpuBackend, UnknownGemmPathChoiceIsAUsageError) {
  EXPECT_THROW(cpu::parse_gemm_path_choice("fast"), UsageError);
  EXPECT_EQ(cpu::parse_gemm_path_choice("auto"), cpu::GemmPathChoice::automatic);
}

TEST(CpuBackend, UnknownIsaIsAUsageError) { EXPECT_THROW(cpu::limit_isa("avx1024"), UsageError); }

// oneDNN fixes its ISA at its first CPU work and refuses a limit after it, by a status: the limit
// is refused, not silently left out (each test runs in a process of its own).
TEST(CpuBackend, AnIsaLimitAfterCpuWorkIsRefused) {
  const auto cpu = cpu::make_backend();
  ASSERT_TRUE(cpu->environment().contains("onednn"));
  std::string error;
  try {
    cpu::limit_isa("sse41");
  } catch (const UsageError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("--cpu-isa sse41: oneDNN refused it"), std::string::npos) << error;
}

// The bf16 self-check that decides AMX (backends/cpu/self_check.hpp) runs in a child process
// whatever the CPU: here under no limit, where it must pass wherever oneDNN has a bf16 matmul
// (natively on AVX512-BF16 or AMX), and with faults the test hooks make, which it must catch.
class Bf16SelfCheck : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("MPBENCH_TEST_SELF_CHECK_FAULT"); }
  static cpu::SelfCheck with_fault(const char* fault, const std::string& kernel = "") {
    ::setenv("MPBENCH_TEST_SELF_CHECK_FAULT", fault, 1);
    return cpu::run_bf16_self_check("all", kernel);
  }
};

TEST_F(Bf16SelfCheck, PassesOnCorrectProducts) {
  const cpu::SelfCheck check = cpu::run_bf16_self_check("all", "");
  const CpuDescription host = describe_cpu();
  if (host.has("avx512_bf16") || host.has("amx_bf16")) {
    EXPECT_EQ(check.outcome, cpu::SelfCheck::Outcome::passed) << check.detail;
  } else {
    EXPECT_NE(check.outcome, cpu::SelfCheck::Outcome::failed) << check.detail;
  }
  if (check.outcome == cpu::SelfCheck::Outcome::passed) {
    EXPECT_NE(check.detail.find("6 bf16 products"), std::string::npos) << check.detail;
  }
}

TEST_F(Bf16SelfCheck, AWrongElementFailsItNamed) {
  if (const auto clean = cpu::run_bf16_self_check("all", ""); clean.outcome != cpu::SelfCheck::Outcome::passed)
    GTEST_SKIP() << "no bf16 matmul to check here: " << clean.detail;
  const cpu::SelfCheck check = with_fault("wrong");
  EXPECT_EQ(check.outcome, cpu::SelfCheck::Outcome::failed) << check.detail;
  EXPECT_NE(check.detail.find("16x16x32 element (8, 0)"), std::string::npos) << check.detail;
}

TEST_F(Bf16SelfCheck, ASignalFailsIt) {
  const cpu::SelfCheck check = with_fault("signal");
  EXPECT_EQ(check.outcome, cpu::SelfCheck::Outcome::failed);
  EXPECT_NE(check.detail.find("signal 4 (SIGILL)"), std::string::npos) << check.detail;
}

TEST_F(Bf16SelfCheck, AnotherKernelThanAskedIsNoCheck) {
  const cpu::SelfCheck check = cpu::run_bf16_self_check("all", "no-such-kernel");
  EXPECT_EQ(check.outcome, cpu::SelfCheck::Outcome::not_run) << check.detail;
}

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

// ---- the fp8 and stochastic-rounding casts against the reference, bit for bit -------------------

// Random bit patterns (every class: NaN payloads, infs, subnormals, zeros) from a fresh seed, in
// lengths that leave every tail n % 8 and run on one thread or all.
std::vector<std::vector<float>> random_patterns(std::uint64_t seed) {
  std::vector<std::vector<float>> sets;
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{1003}, std::size_t{100005}}) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i)
      values[i] = std::bit_cast<float>(static_cast<std::uint32_t>(mix64(seed + sets.size(), i)));
    sets.push_back(std::move(values));
  }
  return sets;
}

struct ScaledCodes {
  std::vector<std::uint8_t> codes;
  float amax;
};

ScaledCodes e4m3_scaled_on(Backend& backend, const std::vector<float>& source, float scale) {
  const DeviceBuffer src = upload(backend, DType::f32, source);
  const DeviceBuffer factor = upload(backend, DType::f32, std::vector<float>{scale});
  DeviceBuffer dst = backend.allocate(DType::e4m3, source.size()), amax = backend.allocate(DType::f32, 1);
  backend.fill_uniform(amax, 7, 100.0f, 200.0f);  // a stale value that must be overwritten
  backend.cast(CastKind::f32_to_e4m3_scaled, {&src, &dst, &factor, &amax, 0});
  return {download<std::uint8_t>(backend, dst), download<float>(backend, amax)[0]};
}

// The first element whose e4m3 code differs from `want`'s (named `theirs` in the message), or "".
std::string first_code_difference(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want,
                                  const char* theirs) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) return fmt::format("element {}: code {:#x}, {} {:#x}", i, got[i], theirs, want[i]);
  return "";
}

std::string first_difference(const ScaledCodes& got, const ScaledCodes& want) {
  if (bits_of(got.amax) != bits_of(want.amax))
    return fmt::format("amax bits {:#x}, the reference {:#x}", bits_of(got.amax), bits_of(want.amax));
  return first_code_difference(got.codes, want.codes, "the reference");
}

// Scales: none, the cast suite's 448/4, an inexact one, one that shrinks values into e4m3's
// subnormals and below, one that overflows fp32 products to inf, and inf (0 * inf is NaN).
constexpr float kScales[] = {1.0f, 112.0f, 0.3f, 0x1p-10f, 1e30f, INFINITY};

// The e4m3 rounding boundaries (ties at bit 19 of the pattern, one below and above them, e4m3's
// largest value 448 and its overflow tie 464) lie in the high halves rounding_boundaries() runs
// through; under scale 1 every such boundary of every binade meets the cast.
TEST_F(CpuElementLoops, E4m3ScaledCastMatchesTheReferenceAtEveryRoundingBoundary) {
  const auto source = rounding_boundaries();
  for (float scale : kScales) {
    SCOPED_TRACE(fmt::format("scale {}", scale));
    EXPECT_EQ(first_difference(e4m3_scaled_on(*cpu_, source, scale), e4m3_scaled_on(oracle_, source, scale)), "");
  }
}

TEST_F(CpuElementLoops, E4m3ScaledCastMatchesTheReferenceOnRandomPatternsOfEveryTail) {
  const std::uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (const auto& source : random_patterns(seed))
    for (float scale : kScales) {
      SCOPED_TRACE(fmt::format("n {} scale {}", source.size(), scale));
      EXPECT_EQ(first_difference(e4m3_scaled_on(*cpu_, source, scale), e4m3_scaled_on(oracle_, source, scale)), "");
    }
}

// Values in the e4m3 range, so the amax is finite and the scale takes them past 448: the amax
// comes from the inputs, not the scaled values, and NaNs do not take part in it.
TEST_F(CpuElementLoops, E4m3AmaxIsTheLargestInputMagnitudeWithoutNans) {
  std::vector<float> source(70001);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = uniform_at(31, i, -300.0f, 300.0f);
  source[40000] = -310.0f;
  source[12] = NAN;
  source[50000] = std::bit_cast<float>(0x7F800001u);  // signalling
  source[70000] = -NAN;
  const ScaledCodes got = e4m3_scaled_on(*cpu_, source, 2.0f);
  EXPECT_EQ(got.amax, 310.0f);
  EXPECT_EQ(got.codes[40000], 0xFE) << "-620 saturates to -448";
  EXPECT_EQ(got.codes[70000], 0xFF) << "-NaN keeps its sign";
  EXPECT_EQ(first_difference(got, e4m3_scaled_on(oracle_, source, 2.0f)), "");
}

// The reference writes the amax before it reads the scale: one buffer for both gives its bits.
TEST_F(CpuElementLoops, E4m3ScaleAndAmaxInOneBufferGiveTheReferencesBits) {
  const std::vector<float> source = {1.0f, -3.0f, 0.25f, 100.0f, 7.0f};
  std::vector<std::vector<std::uint8_t>> codes;
  for (Backend* backend : {cpu_.get(), static_cast<Backend*>(&oracle_)}) {
    const DeviceBuffer src = upload(*backend, DType::f32, source);
    DeviceBuffer shared = upload(*backend, DType::f32, std::vector<float>{0.5f});
    DeviceBuffer dst = backend->allocate(DType::e4m3, source.size());
    backend->cast(CastKind::f32_to_e4m3_scaled, {&src, &dst, &shared, &shared, 0});
    codes.push_back(download<std::uint8_t>(*backend, dst));
  }
  EXPECT_EQ(codes[0], codes[1]);
  EXPECT_EQ(codes[1][3], num::f32_to_e4m3_bits(100.0f * 100.0f, true)) << "scaled by the amax written first";
}

// ---- bf16 -> e4m3 with current scaling ----------------------------------------------------------

struct CurrentScaled {
  std::vector<std::uint8_t> codes;
  float amax, scale;
};

CurrentScaled current_scaled_on(Backend& backend, const std::vector<std::uint16_t>& source) {
  const DeviceBuffer src = upload(backend, DType::bf16, source);
  DeviceBuffer dst = backend.allocate(DType::e4m3, source.size());
  DeviceBuffer amax = backend.allocate(DType::f32, 1), scale = backend.allocate(DType::f32, 1);
  backend.fill_uniform(amax, 7, 100.0f, 200.0f);  // stale values that must be overwritten
  backend.fill_uniform(scale, 8, 100.0f, 200.0f);
  backend.cast(CastKind::bf16_to_e4m3_scaled, {&src, &dst, nullptr, &amax, 0, &scale});
  return {download<std::uint8_t>(backend, dst), download<float>(backend, amax)[0], download<float>(backend, scale)[0]};
}

// The recipe written out element by element: the largest finite-or-infinite |x| (NaNs left out),
// 448 / amax where that is usable (1 where the amax is 0 or inf, the largest float where the
// quotient overflows), then formats.hpp's saturating e4m3 of x * scale.
CurrentScaled current_scaled_by_hand(const std::vector<std::uint16_t>& source) {
  const auto value = [](std::uint16_t b) { return std::bit_cast<float>(std::uint32_t{b} << 16); };
  float amax = 0;
  for (std::uint16_t b : source)
    if (!std::isnan(value(b))) amax = std::max(amax, std::fabs(value(b)));
  float scale = 1.0f;
  if (amax > 0 && std::isfinite(amax)) scale = std::isfinite(448.0f / amax) ? 448.0f / amax : FLT_MAX;
  CurrentScaled out{{}, amax, scale};
  for (std::uint16_t b : source) out.codes.push_back(num::f32_to_e4m3_bits(value(b) * scale, true));
  return out;
}

std::string first_difference(const CurrentScaled& got, const CurrentScaled& want) {
  if (bits_of(got.amax) != bits_of(want.amax))
    return fmt::format("amax bits {:#x}, by hand {:#x}", bits_of(got.amax), bits_of(want.amax));
  if (bits_of(got.scale) != bits_of(want.scale))
    return fmt::format("scale bits {:#x}, by hand {:#x}", bits_of(got.scale), bits_of(want.scale));
  return first_code_difference(got.codes, want.codes, "by hand");
}

// Finite bf16 values of random sign and mantissa with exponents over 60 binades around 1 (so the
// chosen scale moves values across e4m3's normals, subnormals and flush to zero), n elements.
std::vector<std::uint16_t> random_bf16(std::uint64_t seed, std::size_t n) {
  std::vector<std::uint16_t> bits(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t word = mix64(seed, i);
    const auto exponent = static_cast<std::uint16_t>(97 + word % 60);
    bits[i] = static_cast<std::uint16_t>(((word >> 8) & 0x8000u) | (exponent << 7) | ((word >> 20) & 0x7Fu));
  }
  return bits;
}

// Both the CPU backend's vector loops and the reference's loops against the recipe by hand.
void expect_current_scaled_by_hand(Backend& cpu, Backend& oracle, const std::vector<std::uint16_t>& source) {
  const CurrentScaled want = current_scaled_by_hand(source);
  EXPECT_EQ(first_difference(current_scaled_on(cpu, source), want), "") << "CPU backend";
  EXPECT_EQ(first_difference(current_scaled_on(oracle, source), want), "") << "reference";
}

// Lengths around the octets and the threaded loops' start (4096 octets), none a multiple of 8
// but 65536; a fresh seed each run.
TEST_F(CpuElementLoops, CurrentScaledBf16CastMatchesTheRecipeOnRandomValuesOfEveryTail) {
  const std::uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (std::size_t n : {1, 7, 9, 15, 1001, 32767, 32769, 65536, 70001}) {
    SCOPED_TRACE(fmt::format("n {}", n));
    expect_current_scaled_by_hand(*cpu_, oracle_, random_bf16(seed + n, n));
  }
}

// NaNs (quiet, signalling, negative) take no part in the amax and stay NaN; zeros and bf16
// subnormals give zero codes or e4m3 subnormals; the largest magnitude becomes +-448.
TEST_F(CpuElementLoops, CurrentScaledBf16CastLeavesNansOutOfTheAmax) {
  auto source = random_bf16(::testing::UnitTest::GetInstance()->random_seed(), 40003);
  source[5] = 0x7FC0;      // NaN
  source[40000] = 0x7F81;  // signalling NaN
  source[33333] = 0xFFC1;  // -NaN
  source[17] = 0x0000;
  source[18] = 0x8000;     // -0
  source[19] = 0x0001;     // the smallest bf16 subnormal
  source[20] = 0xCF00;     // -2^31, above every random value (below 2^30): the amax
  const CurrentScaled got = current_scaled_on(*cpu_, source);
  EXPECT_EQ(got.amax, 0x1p31f);
  EXPECT_EQ(got.scale, 0x7p-25f) << "448 / 2^31";
  EXPECT_EQ(got.codes[20], 0xFE) << "the amax scales to -448";
  EXPECT_EQ(got.codes[5] & 0x7F, 0x7F);
  EXPECT_EQ(got.codes[33333], 0xFF) << "-NaN keeps its sign";
  EXPECT_EQ(got.codes[18], 0x80) << "-0 keeps its sign";
  expect_current_scaled_by_hand(*cpu_, oracle_, source);
}

// The amax rules: all zeros or an infinity leave the scale at 1 (inf saturates to 448); a tensor
// of bf16 subnormals has a scale past fp32's range, which becomes the largest float.
TEST_F(CpuElementLoops, CurrentScaledBf16CastScaleRulesAtZeroInfAndTinyAmax) {
  const std::vector<std::uint16_t> zeros(37, 0x0000), subnormals(37, 0x0003);
  const std::vector<std::uint16_t> with_inf = [] {
    auto values = random_bf16(3, 37);
    values[11] = 0xFF80;  // -inf
    return values;
  }();
  const CurrentScaled zero = current_scaled_on(*cpu_, zeros), inf = current_scaled_on(*cpu_, with_inf);
  const CurrentScaled tiny = current_scaled_on(*cpu_, subnormals);
  EXPECT_EQ(zero.amax, 0.0f);
  EXPECT_EQ(zero.scale, 1.0f);
  EXPECT_EQ(inf.amax, INFINITY);
  EXPECT_EQ(inf.scale, 1.0f);
  EXPECT_EQ(inf.codes[11], 0xFE) << "-inf saturates to -448";
  EXPECT_EQ(tiny.scale, FLT_MAX);
  for (const auto* source : {&zeros, &with_inf, &subnormals}) expect_current_scaled_by_hand(*cpu_, oracle_, *source);
}

std::vector<std::uint16_t> stochastic_on(Backend& backend, const std::vector<float>& source, std::uint64_t seed) {
  const DeviceBuffer src = upload(backend, DType::f32, source);
  DeviceBuffer dst = backend.allocate(DType::bf16, source.size());
  backend.cast(CastKind::f32_to_bf16_stochastic, {&src, &dst, nullptr, nullptr, seed});
  return download<std::uint16_t>(backend, dst);
}

// The seed whose element 0 has counter z in core/random.hpp's mix64 (seed * 0x9E3779B97F4A7C15 +
// index + 0x632BE59BD9B4E019, mod 2^64): the factor is odd, so it has an inverse mod 2^64 (Newton's
// iteration doubles the correct low bits each time: 3, 6, ..., 96).
std::uint64_t seed_with_counter(std::uint64_t z) {
  constexpr std::uint64_t factor = 0x9E3779B97F4A7C15ull, offset = 0x632BE59BD9B4E019ull;
  std::uint64_t inverse = factor;
  for (int i = 0; i < 5; ++i) inverse *= 2 - factor * inverse;
  return (z - offset) * inverse;
}

// Every bf16 rounding boundary meets random words of a fresh seed and of seeds whose counters
// carry across 32 and 64 bits between elements 1002 and 1003 (inside a vector of 8 or 16): the
// vector loops hash runs of counters that share their high half faster than counters that do not.
// Each element's word is that of its own index.
TEST_F(CpuElementLoops, StochasticCastMatchesTheReferenceAtEveryRoundingBoundary) {
  const auto source = rounding_boundaries();
  const std::uint64_t fresh = ::testing::UnitTest::GetInstance()->random_seed();
  const std::uint64_t carry_32 = seed_with_counter(0x1'0000'0000ull - 1003), carry_64 = seed_with_counter(-1003ull);
  for (std::uint64_t seed : {fresh, std::uint64_t{0}, std::uint64_t{0xFFFFFFFF}, ~std::uint64_t{0}, carry_32, carry_64}) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    EXPECT_EQ(first_difference(stochastic_on(*cpu_, source, seed), stochastic_on(oracle_, source, seed)), "");
  }
}

TEST_F(CpuElementLoops, StochasticCastMatchesTheReferenceOnRandomPatternsOfEveryTail) {
  const std::uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (const auto& source : random_patterns(seed)) {
    SCOPED_TRACE(fmt::format("n {}", source.size()));
    EXPECT_EQ(first_difference(stochastic_on(*cpu_, source, seed + 1), stochastic_on(oracle_, source, seed + 1)), "");
  }
}

// ---- the converted path's conversions against amp/formats.hpp, bit for bit ----------------------

TEST(CpuConversions, WideningEveryCodeIsTheFormatsDecoding) {
  std::vector<std::uint16_t> codes(0x10000);
  for (std::uint32_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<std::uint16_t>(c);
  std::vector<float> f16(codes.size()), bf16(codes.size());
  cpu::widen_to_f32(DType::f16, codes.data(), f16.data(), codes.size());
  cpu::widen_to_f32(DType::bf16, codes.data(), bf16.data(), codes.size());
  for (std::uint32_t c = 0; c < codes.size(); ++c) {
    ASSERT_EQ(bits_of(f16[c]), bits_of(num::f16_bits_to_f32(codes[c]))) << std::hex << c;
    ASSERT_EQ(bits_of(bf16[c]), bits_of(num::bf16_bits_to_f32(codes[c]))) << std::hex << c;
  }
  std::vector<std::uint8_t> bytes(256);
  for (std::uint32_t c = 0; c < bytes.size(); ++c) bytes[c] = static_cast<std::uint8_t>(c);
  std::vector<float> e4m3(bytes.size());
  cpu::widen_to_f32(DType::e4m3, bytes.data(), e4m3.data(), bytes.size());
  for (std::uint32_t c = 0; c < bytes.size(); ++c)
    ASSERT_EQ(bits_of(e4m3[c]), bits_of(num::e4m3_bits_to_f32(bytes[c]))) << std::hex << c;
}

TEST(CpuConversions, NarrowingAndRoundingThroughAreTheFormatsRounding) {
  // Random bit patterns (every exponent, NaN payloads, subnormals) on a fresh seed, then the
  // edges: overflow to inf, ties, signed zeros; an odd count leaves a vector tail.
  const std::uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<float> values;
  for (std::uint64_t i = 0; i < 100003; ++i) values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(mix64(seed, i))));
  for (float x : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 0x1.fefp127f, 0x1.ff0p127f,
                  1.0f + 0x1p-11f, 1.0f + 0x1p-8f, 0x1p-24f, 0x1p-25f, 5.96e-8f, 1e-40f})
    values.push_back(x);
  std::vector<std::uint16_t> codes(values.size());
  std::vector<float> rounded(values.size());
  for (DType format : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(format)));
    const bool f16 = format == DType::f16;
    cpu::narrow_from_f32(format, values.data(), codes.data(), values.size());
    cpu::round_through(format, values.data(), rounded.data(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::uint16_t want = f16 ? num::f32_to_f16_bits(values[i]) : num::f32_to_bf16_bits(values[i]);
      ASSERT_EQ(codes[i], want) << std::hex << bits_of(values[i]);
      const float back = f16 ? num::f16_bits_to_f32(want) : num::bf16_bits_to_f32(want);
      ASSERT_EQ(bits_of(rounded[i]), bits_of(back)) << std::hex << bits_of(values[i]);
    }
  }
}

// ---- the fused cast-transpose-amax (bf16 -> e4m3 codes, their transpose, amax) -------------------

using mpbench::testing_support::test_seed;

struct CastTransposed {
  std::vector<std::uint8_t> codes, transposed;
  float amax = 0;
};

CastTransposed cast_transposed_on(Backend& backend, const std::vector<std::uint16_t>& source, std::size_t rows,
                                  std::size_t cols, float scale_value) {
  const DeviceBuffer src = upload(backend, DType::bf16, source);
  const DeviceBuffer scale = upload(backend, DType::f32, std::vector<float>{scale_value});
  DeviceBuffer codes = backend.allocate(DType::e4m3, rows * cols), transposed = backend.allocate(DType::e4m3, rows * cols);
  DeviceBuffer amax = backend.allocate(DType::f32, 1);
  backend.fill_uniform(codes, 5, -1.0f, 1.0f);  // stale values that must be overwritten
  backend.fill_uniform(transposed, 6, -1.0f, 1.0f);
  backend.fill_uniform(amax, 7, 100.0f, 200.0f);
  backend.cast_transpose_amax({&src, rows, cols, &scale, &codes, &transposed, &amax});
  return {download<std::uint8_t>(backend, codes), download<std::uint8_t>(backend, transposed),
          download<float>(backend, amax)[0]};
}

// The op written out by hand: amp's scalar quantize_fp8 of each element, stored at (r, c) of the
// codes and at (c, r) of the transpose; the amax NaN if any element is NaN, else the largest |x|.
CastTransposed cast_transposed_by_hand(const std::vector<std::uint16_t>& source, std::size_t rows, std::size_t cols,
                                       float scale, std::uint32_t* saturated = nullptr) {
  CastTransposed out{std::vector<std::uint8_t>(rows * cols), std::vector<std::uint8_t>(rows * cols), 0.0f};
  bool any_nan = false;
  std::uint32_t clamped = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const float x = std::bit_cast<float>(std::uint32_t{source[r * cols + c]} << 16);
      if (std::isnan(x)) any_nan = true;
      else out.amax = std::max(out.amax, std::fabs(x));
      const std::uint8_t code = amp::quantize_fp8(x, scale, true, clamped);
      out.codes[r * cols + c] = code;
      out.transposed[c * rows + r] = code;
    }
  if (any_nan) out.amax = NAN;
  if (saturated) *saturated = clamped;
  return out;
}

std::string first_difference(const CastTransposed& got, const CastTransposed& want, std::size_t rows,
                             std::size_t cols) {
  if (std::isnan(got.amax) != std::isnan(want.amax) || (!std::isnan(want.amax) && got.amax != want.amax))
    return fmt::format("amax {}, by hand {}", got.amax, want.amax);
  for (std::size_t i = 0; i < rows * cols; ++i) {
    if (got.codes[i] != want.codes[i])
      return fmt::format("codes ({}, {}): {:#x}, by hand {:#x}", i / cols, i % cols, got.codes[i], want.codes[i]);
    if (got.transposed[i] != want.transposed[i])
      return fmt::format("transposed ({}, {}): {:#x}, by hand {:#x}", i / rows, i % rows, got.transposed[i],
                         want.transposed[i]);
  }
  return "";
}

// Finite bf16 values of random sign and mantissa over 60 binades around 1 (random_bf16), with
// some zeros, bf16 subnormals, infinities and NaNs mixed in where `specials`.
std::vector<std::uint16_t> cast_transpose_input(std::mt19937_64& random, std::size_t n, bool specials) {
  std::vector<std::uint16_t> x = random_bf16(random(), n);
  if (!specials) return x;
  constexpr std::uint16_t kSpecials[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81};
  for (std::size_t i = 0; i < n; ++i)
    if (random() % 8 == 0) x[i] = kSpecials[random() % std::size(kSpecials)];
  return x;
}

// Tails of the CPU's 64 x 256 tiles in both directions, one tile exactly, and several column tiles.
const std::pair<std::size_t, std::size_t> kCastTransposeShapes[] = {
    {1, 1}, {1, 33}, {33, 1}, {31, 17}, {64, 64}, {64, 256}, {100, 3}, {130, 67}, {70, 300}, {257, 200}, {100, 530}};

// Both the CPU backend's tiled loop (64 x 256 tiles through amp's quantization loops, under both
// of their instruction sets where the CPU has AVX-512; threaded from 32768 elements: the last
// shape) and the reference's loop against the hand-written op, bit for bit, on fresh inputs each
// run at scales that keep values in range, push many past 448 (saturation) or below e4m3's
// subnormals.
TEST_F(CpuElementLoops, CastTransposeAmaxMatchesTheHandWrittenLoopOnEveryShape) {
  const std::uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set MPB_TEST_SEED to reproduce)");
  std::mt19937_64 random(seed);
  const amp::Fp8LoopIsa initial = amp::fp8_loop_isa();
  for (amp::Fp8LoopIsa isa : {amp::Fp8LoopIsa::baseline, amp::Fp8LoopIsa::avx512}) {
    if (amp::set_fp8_loop_isa(isa) != isa) continue;  // this CPU has no AVX-512
    SCOPED_TRACE(isa == amp::Fp8LoopIsa::avx512 ? "avx512 loops" : "baseline loops");
    for (const auto& [rows, cols] : kCastTransposeShapes)
      for (bool specials : {false, true})
        for (float scale : {1.0f, 0x1p-20f, 0x1p12f, 448.0f / 3.0f}) {
          SCOPED_TRACE(fmt::format("{} x {}, scale {}, specials {}", rows, cols, scale, specials));
          const auto source = cast_transpose_input(random, rows * cols, specials);
          const CastTransposed want = cast_transposed_by_hand(source, rows, cols, scale);
          EXPECT_EQ(first_difference(cast_transposed_on(*cpu_, source, rows, cols, scale), want, rows, cols), "")
              << "CPU backend";
          EXPECT_EQ(first_difference(cast_transposed_on(oracle_, source, rows, cols, scale), want, rows, cols), "")
              << "reference";
        }
  }
  amp::set_fp8_loop_isa(initial);
}

// The amax: a NaN anywhere makes it NaN (fold_amax_bits), an infinity inf, zeros 0; the largest
// magnitude scaled to 448 gives +-448, inf saturates, NaN stays NaN with its sign, -0 keeps its sign.
TEST_F(CpuElementLoops, CastTransposeAmaxIsNanWithANanAndSaturatesInfinities) {
  const std::size_t rows = 37, cols = 45;
  std::mt19937_64 random(test_seed());
  std::vector<std::uint16_t> x = random_bf16(random(), rows * cols);  // all below 2^30
  x[2 * cols + 5] = 0xCF00;                                         // -2^31
  const float scale = 448.0f / 0x1p31f;
  const CastTransposed plain = cast_transposed_on(*cpu_, x, rows, cols, scale);
  EXPECT_EQ(plain.amax, 0x1p31f);
  EXPECT_EQ(plain.codes[2 * cols + 5], 0xFE) << "-448";
  EXPECT_EQ(plain.transposed[5 * rows + 2], 0xFE) << "-448, transposed";
  x[0] = 0x8000;                  // -0
  x[rows * cols - 1] = 0x7F80;    // +inf
  const CastTransposed infinite = cast_transposed_on(*cpu_, x, rows, cols, scale);
  EXPECT_EQ(infinite.amax, INFINITY);
  EXPECT_EQ(infinite.codes[rows * cols - 1], 0x7E) << "inf saturates to 448";
  EXPECT_EQ(infinite.codes[0], 0x80) << "-0 keeps its sign";
  x[cols + 1] = 0xFFC1;  // -NaN
  for (Backend* backend : {cpu_.get(), static_cast<Backend*>(&oracle_)}) {
    const CastTransposed with_nan = cast_transposed_on(*backend, x, rows, cols, scale);
    EXPECT_TRUE(std::isnan(with_nan.amax)) << with_nan.amax;
    EXPECT_EQ(with_nan.codes[cols + 1], 0xFF) << "-NaN keeps its sign";
    EXPECT_EQ(with_nan.transposed[rows + 1], 0xFF);
    EXPECT_EQ(first_difference(with_nan, cast_transposed_by_hand(x, rows, cols, scale), rows, cols), "");
  }
  const std::vector<std::uint16_t> zeros(rows * cols, 0x0000);
  EXPECT_EQ(cast_transposed_on(*cpu_, zeros, rows, cols, scale).amax, 0.0f);
}

// The shared tile math's totals: the saturation count is the scalar quantize_fp8's (values
// pushed past 448, infinities included, NaNs not), whatever the tiling; merge adds them up.
TEST(CastTransposeMath, TilesCountSaturationAsTheScalarQuantizer) {
  std::mt19937_64 random(test_seed());
  const std::size_t rows = 70, cols = 41;
  const auto source = cast_transpose_input(random, rows * cols, true);
  const float scale = 0x1p10f;
  std::uint32_t want_saturated = 0;
  const CastTransposed want = cast_transposed_by_hand(source, rows, cols, scale, &want_saturated);
  ASSERT_GT(want_saturated, 0u);
  for (std::size_t tile : {1, 7, 32, 64}) {
    SCOPED_TRACE(tile);
    CastTransposed got{std::vector<std::uint8_t>(rows * cols), std::vector<std::uint8_t>(rows * cols), 0};
    elem::CastTransposeTotals totals;
    const auto* x = reinterpret_cast<const elem::bf16_bits*>(source.data());
    for (std::size_t r = 0; r < rows; r += tile)
      for (std::size_t c = 0; c < cols; c += tile) {
        elem::CastTransposeTotals part;
        elem::cast_transpose_tile(x, rows, cols, r, c, tile, tile, scale, got.codes.data(), got.transposed.data(),
                                  part);
        elem::merge(totals, part);
      }
    got.amax = num::bits_to_float(totals.amax_bits);
    EXPECT_EQ(totals.saturated, want_saturated);
    EXPECT_EQ(first_difference(got, want, rows, cols), "");
  }
}

// The argument rules every backend shares.
TEST_F(CpuElementLoops, CastTransposeAmaxRefusesWrongBuffers) {
  DeviceBuffer src = cpu_->allocate(DType::bf16, 12), f32 = cpu_->allocate(DType::f32, 12);
  DeviceBuffer codes = cpu_->allocate(DType::e4m3, 12), transposed = cpu_->allocate(DType::e4m3, 12);
  DeviceBuffer small = cpu_->allocate(DType::e4m3, 11);
  DeviceBuffer scale = cpu_->allocate(DType::f32, 1), amax = cpu_->allocate(DType::f32, 1);
  EXPECT_THROW(cpu_->cast_transpose_amax({&f32, 3, 4, &scale, &codes, &transposed, &amax}), UsageError);
  EXPECT_THROW(cpu_->cast_transpose_amax({&src, 3, 4, &scale, &small, &transposed, &amax}), UsageError);
  EXPECT_THROW(cpu_->cast_transpose_amax({&src, 3, 4, &scale, &codes, &codes, &amax}), UsageError);
  EXPECT_THROW(cpu_->cast_transpose_amax({&src, 3, 4, &scale, &codes, &transposed, &scale}), UsageError);
  EXPECT_THROW(cpu_->cast_transpose_amax({&src, 4, 4, &scale, &codes, &transposed, &amax}), UsageError);
  EXPECT_THROW(cpu_->cast_transpose_amax({&src, 3, 4, nullptr, &codes, &transposed, &amax}), UsageError);
  EXPECT_NO_THROW(cpu_->cast_transpose_amax({&src, 3, 4, &scale, &codes, &transposed, &amax}));
}

}  // namespace
}  // namespace mpbench
