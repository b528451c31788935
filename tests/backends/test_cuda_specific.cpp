// What only the CUDA backend has: its environment record, the capability table, the cuBLASLt
// wrapper's problem arithmetic and the per-thread kernel bodies run thread by thread on the host
// (all without a GPU), cuBLASLt's algorithm record, pinned host transfers and out-of-memory
// handling (GPU; skipped with the reason otherwise).
// Agreement with the reference on every op is the backend conformance test's job.
#include <cublasLt.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <regex>
#include <utility>
#include <vector>

#include "amp/formats.hpp"
#include "amp/fp8_scaling.hpp"
#include "backends/cast_transpose.hpp"
#include "backends/cuda/capabilities.hpp"
#include "backends/cuda/cublaslt_gemm.hpp"
#include "backends/cuda/cublaslt_names.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/kernel_bodies.hpp"
#include "core/error.hpp"
#include "core/random.hpp"

namespace mpbench {
namespace {

namespace body = cuda::body;

// ---- environment and factory: no GPU needed --------------------------------------------------

TEST(CudaEnvironment, ListsRuntimeAndLibraryVersionsWithOrWithoutGpu) {
  const nlohmann::json env = cuda::environment();
  const nlohmann::json& versions = env.at("cuda");
  ASSERT_TRUE(versions.at("runtime").is_string());
  EXPECT_TRUE(std::regex_match(versions.at("runtime").get<std::string>(), std::regex(R"(\d+\.\d+)")));
  ASSERT_TRUE(versions.at("cublaslt").is_string());
  EXPECT_TRUE(std::regex_match(versions.at("cublaslt").get<std::string>(), std::regex(R"(\d+\.\d+\.\d+)")));
  for (const char* optional_library : {"driver", "cublas", "cudnn", "cupti", "nccl"}) {
    ASSERT_TRUE(versions.contains(optional_library)) << optional_library;
    const nlohmann::json& version = versions.at(optional_library);
    EXPECT_TRUE(version.is_null() || (version.is_string() && !version.get<std::string>().empty())) << optional_library;
  }
  ASSERT_TRUE(env.at("gpus").is_array());
  ASSERT_TRUE(env.at("gpu_status").is_string());
  if (const auto reason = cuda::unavailable_reason()) {
    EXPECT_TRUE(env.at("gpus").empty());
    EXPECT_EQ(env.at("gpu_status").get<std::string>(), *reason);
  }
  for (const nlohmann::json& gpu : env.at("gpus"))
    for (const char* field : {"name", "index", "compute_capability", "multiprocessors", "memory_bytes", "l2_bytes",
                              "sm_clock_mhz", "memory_clock_mhz", "memory_bus_bits", "driver_version", "pci_bus_id"})
      EXPECT_TRUE(gpu.contains(field)) << field;
}

TEST(CudaBackendFactory, RejectsIndicesOutOfRange) {
  EXPECT_THROW(cuda::make_backend(-1), UsageError);
  EXPECT_THROW(cuda::make_backend(1 << 20), UsageError);
}

TEST(CudaBackendFactory, WithoutGpuNamesTheReason) {
  const auto reason = cuda::unavailable_reason();
  if (!reason) GTEST_SKIP() << "a GPU is present";
  try {
    cuda::make_backend(0);
    FAIL() << "make_backend(0) succeeded without a GPU";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find(*reason), std::string::npos) << error.what();
  }
}

TEST(CudaDeviceFactory, RejectsIndicesOutOfRange) {
  EXPECT_THROW(cuda::make_device(-1), UsageError);
  EXPECT_THROW(cuda::make_device(1 << 20), UsageError);
}

TEST(CudaDeviceFactory, WithoutGpuNamesTheReason) {
  const auto reason = cuda::unavailable_reason();
  if (!reason) GTEST_SKIP() << "a GPU is present";
  try {
    cuda::make_device(0);
    FAIL() << "make_device(0) succeeded without a GPU";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find(*reason), std::string::npos) << error.what();
  }
}

TEST(CudaDevice, WorkspaceIsCublasLtsRecommendation) {
  EXPECT_EQ(cuda::cublaslt_workspace_bytes(7), std::size_t{4} << 20);
  EXPECT_EQ(cuda::cublaslt_workspace_bytes(8), std::size_t{4} << 20);
  EXPECT_EQ(cuda::cublaslt_workspace_bytes(9), std::size_t{32} << 20);
  EXPECT_EQ(cuda::cublaslt_workspace_bytes(10), std::size_t{32} << 20);
}

// ---- capability table, from a hand-built DeviceInfo: no GPU needed ----------------------------

DeviceInfo gpu_info(const char* name, int major, int minor) {
  DeviceInfo info;
  info.backend = "cuda";
  info.name = name;
  info.compute_capability_major = major;
  info.compute_capability_minor = minor;
  return info;
}

TEST(CudaCapabilities, TuringT4RunsFp16NativelyAndNeitherBf16NorTf32NorFp8) {
  const CapabilityTable table = cuda::gpu_capabilities(gpu_info("Tesla T4", 7, 5));
  for (GemmPrecision native : {GemmPrecision::fp32, GemmPrecision::fp16, GemmPrecision::fp16_acc16})
    EXPECT_EQ(table.path(native), GemmPath::native) << gemm_precision_info(native).name;
  for (GemmPrecision missing : {GemmPrecision::tf32, GemmPrecision::bf16, GemmPrecision::fp8_e4m3}) {
    const auto reason = table.unsupported(missing);
    ASSERT_TRUE(reason.has_value()) << gemm_precision_info(missing).name;
    EXPECT_EQ(table.path(missing), GemmPath::unsupported);
    EXPECT_NE(reason->find("Tesla T4 is 7.5"), std::string::npos) << *reason;
    EXPECT_NE(reason->find(missing == GemmPrecision::fp8_e4m3 ? "8.9 or newer" : "8.0 or newer"), std::string::npos)
        << *reason;
  }
  EXPECT_NE(table.gemm(GemmPrecision::fp32).reason.find("PEDANTIC"), std::string::npos)
      << table.gemm(GemmPrecision::fp32).reason;
}

TEST(CudaCapabilities, AmpereA100LacksOnlyFp8) {
  const CapabilityTable table = cuda::gpu_capabilities(gpu_info("NVIDIA A100-SXM4-80GB", 8, 0));
  for (const GemmCapability& row : table.rows())
    EXPECT_EQ(row.path, row.precision == GemmPrecision::fp8_e4m3 ? GemmPath::unsupported : GemmPath::native)
        << gemm_precision_info(row.precision).name << ": " << row.reason;
}

TEST(CudaCapabilities, AdaAndHopperRunEveryPrecisionNatively) {
  for (const DeviceInfo& gpu : {gpu_info("NVIDIA L4", 8, 9), gpu_info("NVIDIA H200", 9, 0)}) {
    const CapabilityTable table = cuda::gpu_capabilities(gpu);
    ASSERT_EQ(table.rows().size(), gemm_precisions().size()) << gpu.name;
    for (const GemmCapability& row : table.rows()) {
      EXPECT_EQ(row.path, GemmPath::native) << gpu.name << " " << gemm_precision_info(row.precision).name;
      EXPECT_FALSE(table.unsupported(row.precision).has_value()) << gpu.name;
    }
  }
}

// ---- the cuBLASLt wrapper's problem arithmetic: no GPU needed ---------------------------------

const void* address(std::uintptr_t value) { return reinterpret_cast<const void*>(value); }

TEST(CublasLtProblem, AlignmentIsTheLargestPowerOfTwoEveryMatrixStartsOn) {
  EXPECT_EQ(cuda::matmul_alignment(address(0x10000), 4096, 1, 0), 256u) << "capped at cuBLASLt's default";
  EXPECT_EQ(cuda::matmul_alignment(address(0x10002), 4096, 1, 0), 2u) << "an offset pointer";
  EXPECT_EQ(cuda::matmul_alignment(address(0x10000), 8190, 1, 0), 2u) << "an odd leading dimension in fp16";
  EXPECT_EQ(cuda::matmul_alignment(address(0x10000), 4096, 1, 24), 256u) << "one matrix: no stride";
  EXPECT_EQ(cuda::matmul_alignment(address(0x10000), 4096, 3, 24), 8u) << "a batch strides 24 bytes";
  EXPECT_EQ(cuda::matmul_alignment(address(0x10040), 4096, 3, 1 << 20), 64u);
}

TEST(CublasLtProblem, AlignmentsCountTheInputAndOutputTypesBytes) {
  cuda::MatmulProblem problem;
  problem.precision = GemmPrecision::bf16;
  problem.output = DType::f32;
  problem.m = 11, problem.n = 5, problem.k = 16;
  problem.lda = 11, problem.ldb = 16, problem.ldd = 11;
  const cuda::MatmulProblem aligned = cuda::with_alignments(problem, address(0x1000), address(0x2000), address(0x3000));
  EXPECT_EQ(aligned.align_a, 2u) << "11 bf16 values per column";
  EXPECT_EQ(aligned.align_b, 32u) << "16 bf16 values per column";
  EXPECT_EQ(aligned.align_d, 4u) << "11 fp32 values per column";
  problem.precision = GemmPrecision::fp32;
  EXPECT_EQ(cuda::with_alignments(problem, address(0x1000), address(0x2000), address(0x3000)).align_b, 64u);
}

TEST(CublasLtProblem, NamesItselfInCublasTerms) {
  cuda::MatmulProblem problem;
  problem.precision = GemmPrecision::bf16;
  problem.transpose_a = true;
  problem.m = 64, problem.n = 16, problem.k = 64, problem.batch = 12;
  EXPECT_EQ(cuda::problem_text(problem), "bf16 GEMM m=64 n=16 k=64 batch=12 op(A)=T op(B)=N");
}

std::vector<std::string> compute_names(GemmPrecision precision, bool cuda_cores_only) {
  cuda::MatmulProblem problem;
  problem.precision = precision;
  problem.cuda_cores_only = cuda_cores_only;
  std::vector<std::string> names;
  for (cublasComputeType_t compute : cuda::compute_types_to_try(problem))
    names.emplace_back(cuda::compute_type_name(compute));
  return names;
}

TEST(CublasLtProblem, TriesThePrecisionsComputeTypeThenTheFallbacks) {
  using Names = std::vector<std::string>;
  EXPECT_EQ(compute_names(GemmPrecision::fp32, false), (Names{"CUBLAS_COMPUTE_32F_PEDANTIC", "CUBLAS_COMPUTE_32F"}));
  EXPECT_EQ(compute_names(GemmPrecision::fp32, true), (Names{"CUBLAS_COMPUTE_32F_PEDANTIC", "CUBLAS_COMPUTE_32F"}));
  EXPECT_EQ(compute_names(GemmPrecision::tf32, false), (Names{"CUBLAS_COMPUTE_32F_FAST_TF32"}));
  EXPECT_EQ(compute_names(GemmPrecision::tf32, true),
            (Names{"CUBLAS_COMPUTE_32F_FAST_TF32", "CUBLAS_COMPUTE_32F_PEDANTIC"}));
  for (GemmPrecision half : {GemmPrecision::fp16, GemmPrecision::bf16}) {
    EXPECT_EQ(compute_names(half, false), (Names{"CUBLAS_COMPUTE_32F"}));
    EXPECT_EQ(compute_names(half, true), (Names{"CUBLAS_COMPUTE_32F", "CUBLAS_COMPUTE_32F_PEDANTIC"}));
  }
  EXPECT_EQ(compute_names(GemmPrecision::fp8_e4m3, false), (Names{"CUBLAS_COMPUTE_32F"}));
  // fp16 accumulation has no pedantic counterpart: it would accumulate in fp32.
  EXPECT_EQ(compute_names(GemmPrecision::fp16_acc16, true), (Names{"CUBLAS_COMPUTE_16F"}));
}

TEST(CublasLtNames, NameTheHeadersEnumValues) {
  EXPECT_EQ(cuda::tile_name(CUBLASLT_MATMUL_TILE_UNDEFINED), "undefined");
  EXPECT_EQ(cuda::tile_name(CUBLASLT_MATMUL_TILE_128x128), "128x128");
  EXPECT_EQ(cuda::tile_name(CUBLASLT_MATMUL_TILE_64x256), "64x256");
  EXPECT_EQ(cuda::stages_name(CUBLASLT_MATMUL_STAGES_64x4), "64x4");
  EXPECT_EQ(cuda::stages_name(CUBLASLT_MATMUL_STAGES_128xAUTO), "128xauto");
  EXPECT_EQ(cuda::cluster_shape_name(CUBLASLT_CLUSTER_SHAPE_AUTO), "auto");
  EXPECT_EQ(cuda::cluster_shape_name(CUBLASLT_CLUSTER_SHAPE_2x1x1), "2x1x1");
  EXPECT_EQ(cuda::tile_name(999999), "tile 999999");
}

// ---- kernel bodies, run thread by thread on the host ------------------------------------------

// Sizes around the 16-byte packs (1 to 16 elements) and thread counts that leave ragged tails.
const std::size_t kSizes[] = {0, 1, 3, 7, 8, 15, 16, 17, 1000, 4099};
const std::size_t kThreadCounts[] = {1, 3, 256};
constexpr std::size_t kGuard = 32;  // elements past n that must stay untouched

template <typename T>
std::vector<T> filled(std::size_t n, std::uint64_t seed) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = body::round_to<T>(uniform_at(seed, i, -2.0f, 2.0f));
  return v;
}

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Runs `launch(thread, threads, out)` for every thread over an output pre-filled with `fill`
// bytes, and returns the output bytes including the guard.
template <typename Out, typename Launch>
std::vector<std::uint8_t> run_threads(std::size_t n, std::size_t threads, std::uint8_t fill, Launch launch) {
  std::vector<Out> out(n + kGuard);
  std::memset(out.data(), fill, out.size() * sizeof(Out));
  for (std::size_t t = 0; t < threads; ++t) launch(t, threads, out.data());
  return bytes_of(out);
}

// Every element equals `expected` whatever the output held before (so each one was written), and
// the guard past n is untouched.
template <typename Out, typename Launch>
void expect_writes(const std::vector<Out>& expected, Launch launch) {
  const std::size_t n = expected.size();
  const std::vector<std::uint8_t> want = bytes_of(expected);
  for (std::size_t threads : kThreadCounts)
    for (std::uint8_t fill : {std::uint8_t{0x00}, std::uint8_t{0xFF}}) {
      const std::vector<std::uint8_t> got = run_threads<Out>(n, threads, fill, launch);
      ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "n=" << n << " threads=" << threads;
      for (std::size_t i = want.size(); i < got.size(); ++i)
        ASSERT_EQ(got[i], fill) << "write past the end, n=" << n << " threads=" << threads;
    }
}

template <typename T>
void check_stream_bodies() {
  constexpr int N = 16 / static_cast<int>(sizeof(T));
  const float s = 0.4f;
  for (std::size_t n : kSizes) {
    const std::vector<T> a = filled<T>(n, 1), b = filled<T>(n, 2);
    std::vector<T> copy(n), scale(n), add(n), triad(n);
    for (std::size_t i = 0; i < n; ++i) {
      copy[i] = a[i];
      scale[i] = elem::store<T>(s * elem::load(a[i]));
      add[i] = elem::store<T>(elem::load(a[i]) + elem::load(b[i]));
      triad[i] = elem::store<T>(std::fma(s, elem::load(b[i]), elem::load(a[i])));
    }
    expect_writes(copy, [&](std::size_t t, std::size_t threads, T* out) {
      body::map_elements<N>(t, threads, n, a.data(), out, body::CopyBits{});
    });
    expect_writes(scale, [&](std::size_t t, std::size_t threads, T* out) {
      body::map_elements<N>(t, threads, n, a.data(), out, body::Scale<T>{s});
    });
    expect_writes(add, [&](std::size_t t, std::size_t threads, T* out) {
      body::zip_elements<N>(t, threads, n, a.data(), b.data(), out, body::Add<T>{});
    });
    expect_writes(triad, [&](std::size_t t, std::size_t threads, T* out) {
      body::zip_elements<N>(t, threads, n, a.data(), b.data(), out, body::Triad<T>{s});
    });
  }
}

TEST(CudaKernelBodies, StreamKernelsWriteEveryElementWithTheSharedMath) {
  check_stream_bodies<float>();
  check_stream_bodies<elem::f16_bits>();
  check_stream_bodies<elem::bf16_bits>();
}

template <typename T>
void check_fill_body(T (*expected_of)(float)) {
  constexpr int N = 16 / static_cast<int>(sizeof(T));
  const std::uint64_t seed = 42;
  for (std::size_t n : kSizes) {
    std::vector<T> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = expected_of(uniform_at(seed, i, -3.0f, 5.0f));
    expect_writes(expected, [&](std::size_t t, std::size_t threads, T* out) {
      body::generate_elements<N>(t, threads, n, out, body::FillUniform<T>{seed, -3.0f, 5.0f});
    });
  }
}

TEST(CudaKernelBodies, FillUniformRoundsToEachDtype) {
  check_fill_body<float>([](float x) { return x; });
  check_fill_body<elem::f16_bits>([](float x) { return elem::f16_bits{num::f32_to_f16_bits(x)}; });
  check_fill_body<elem::bf16_bits>([](float x) { return elem::bf16_bits{num::f32_to_bf16_bits(x)}; });
  check_fill_body<body::e4m3_bits>([](float x) { return body::e4m3_bits{num::f32_to_e4m3_bits(x, true)}; });
  check_fill_body<body::e5m2_bits>([](float x) { return body::e5m2_bits{num::f32_to_e5m2_bits(x, true)}; });
}

template <typename In, typename Out, typename F>
void check_cast_body(const std::vector<In>& in, const std::vector<Out>& expected, F f) {
  constexpr int N = body::pack_elements<In, Out>();
  expect_writes(expected, [&](std::size_t t, std::size_t threads, Out* out) {
    body::map_elements<N>(t, threads, in.size(), in.data(), out, f);
  });
}

TEST(CudaKernelBodies, CastsMatchTheFormatsHeaderBitForBit) {
  for (std::size_t n : kSizes) {
    const std::vector<float> x = filled<float>(n, 7);
    const std::vector<elem::f16_bits> h = filled<elem::f16_bits>(n, 8);
    const std::vector<elem::bf16_bits> bf = filled<elem::bf16_bits>(n, 9);
    std::vector<elem::f16_bits> to_f16(n);
    std::vector<elem::bf16_bits> to_bf16(n), stochastic(n);
    std::vector<float> from_f16(n), from_bf16(n);
    std::vector<body::e4m3_bits> to_e4m3(n);
    const float scale = 100.0f;  // pushes part of [-2, 2) past 448: saturation is exercised
    const std::uint64_t seed = 1234;
    for (std::size_t i = 0; i < n; ++i) {
      to_f16[i] = {num::f32_to_f16_bits(x[i])};
      to_bf16[i] = {num::f32_to_bf16_bits(x[i])};
      from_f16[i] = num::f16_bits_to_f32(h[i].bits);
      from_bf16[i] = num::bf16_bits_to_f32(bf[i].bits);
      to_e4m3[i] = {num::f32_to_e4m3_bits(x[i] * scale, true)};
      stochastic[i] = {num::f32_to_bf16_bits_stochastic(x[i], random_word(seed, i))};
    }
    check_cast_body(x, to_f16, body::Convert<float, elem::f16_bits>{});
    check_cast_body(x, to_bf16, body::Convert<float, elem::bf16_bits>{});
    check_cast_body(h, from_f16, body::Convert<elem::f16_bits, float>{});
    check_cast_body(bf, from_bf16, body::Convert<elem::bf16_bits, float>{});
    check_cast_body(x, to_e4m3, body::ScaledE4m3{scale});
    check_cast_body(x, stochastic, body::StochasticBf16{seed});
    std::vector<body::e4m3_bits> bf16_to_e4m3(n);
    for (std::size_t i = 0; i < n; ++i) bf16_to_e4m3[i] = {num::f32_to_e4m3_bits(from_bf16[i] * scale, true)};
    check_cast_body(bf, bf16_to_e4m3, body::ScaledBf16E4m3{scale});
  }
}

// The bf16 amax of the current-scaling cast: every element once, NaNs skipped, on packs of 8.
TEST(CudaKernelBodies, Bf16AmaxPartialsCoverEveryElementOnce) {
  for (std::size_t n : kSizes) {
    std::vector<elem::bf16_bits> x = filled<elem::bf16_bits>(n, 5);
    if (n > 2) x[n / 2] = {0x7FC0};  // NaN
    float exact_amax = 0;
    for (const auto& v : x)
      if (!std::isnan(elem::load(v))) exact_amax = std::max(exact_amax, std::fabs(elem::load(v)));
    for (std::size_t threads : kThreadCounts) {
      float amax = 0;
      for (std::size_t t = 0; t < threads; ++t) amax = std::max(amax, body::amax_partial<8>(t, threads, n, x.data()));
      EXPECT_EQ(amax, exact_amax) << "n=" << n << " threads=" << threads;
    }
  }
}

TEST(CudaKernelBodies, DotAndAmaxPartialsCoverEveryElementOnce) {
  for (std::size_t n : kSizes) {
    const std::vector<float> a = filled<float>(n, 3), b = filled<float>(n, 4);
    double exact_dot = 0;
    for (std::size_t i = 0; i < n; ++i) exact_dot += double(a[i]) * b[i];
    // A NaN is skipped by amax, as the reference's fmax skips it.
    std::vector<float> with_nan = a;
    if (n > 2) with_nan[n / 2] = NAN;
    float exact_amax = 0;
    for (float v : with_nan)
      if (!std::isnan(v)) exact_amax = std::max(exact_amax, std::fabs(v));
    for (std::size_t threads : kThreadCounts) {
      float amax = 0;
      double dot = 0;
      for (std::size_t t = 0; t < threads; ++t) {
        amax = std::max(amax, body::amax_partial<4>(t, threads, n, with_nan.data()));
        dot += body::dot_partial<4>(t, threads, n, a.data(), b.data());
      }
      EXPECT_EQ(amax, exact_amax) << "n=" << n << " threads=" << threads;
      EXPECT_NEAR(dot, exact_dot, 1e-5 * (1.0 + double(n))) << "n=" << n << " threads=" << threads;
    }
  }
}

// The cast-transpose-amax kernel's partition run on the host: 32 x 32 tiles, 32 x 8 threads, each
// thread's rows i = y, y + 8, ... of column x of its tile through cast_transpose_element, then the
// block's totals merged: every element's code at (r, c) and (c, r) is amp's scalar quantize_fp8,
// the amax the largest |x| or NaN with a NaN, the saturation count the scalar's.
TEST(CudaKernelBodies, CastTransposeTilesCoverEveryElementOnce) {
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {1, 33}, {31, 17}, {64, 64}, {100, 3}, {65, 97}};
  for (const auto& [rows, cols] : shapes)
    for (bool with_nan : {false, true}) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols << (with_nan ? " with a NaN" : ""));
      std::vector<elem::bf16_bits> x = filled<elem::bf16_bits>(rows * cols, 9);
      if (with_nan) x[rows * cols / 2] = {0x7FC0};
      const float scale = 300.0f;  // pushes the larger values past 448
      std::vector<std::uint8_t> want(rows * cols), codes(rows * cols, 0x55), transposed(rows * cols, 0x55);
      std::uint32_t want_saturated = 0;
      float want_amax = 0;
      for (std::size_t i = 0; i < rows * cols; ++i) {
        want[i] = amp::quantize_fp8(elem::load(x[i]), scale, true, want_saturated);
        want_amax = std::max(want_amax, std::fabs(elem::load(x[i])));  // std::max keeps a NaN out
      }
      constexpr std::size_t kTile = 32, kRows = 8;
      elem::CastTransposeTotals grid;
      for (std::size_t row0 = 0; row0 < rows; row0 += kTile)
        for (std::size_t col0 = 0; col0 < cols; col0 += kTile)
          for (std::size_t ty = 0; ty < kRows; ++ty)
            for (std::size_t tx = 0; tx < kTile; ++tx) {
              elem::CastTransposeTotals thread;
              for (std::size_t i = ty; i < kTile; i += kRows) {
                const std::size_t r = row0 + i, c = col0 + tx;
                if (r >= rows || c >= cols) continue;
                const std::uint8_t code = elem::cast_transpose_element(x[r * cols + c], scale, thread);
                codes[r * cols + c] = code;
                transposed[c * rows + r] = code;
              }
              elem::merge(grid, thread);
            }
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) {
          ASSERT_EQ(codes[r * cols + c], want[r * cols + c]) << r << ", " << c;
          ASSERT_EQ(transposed[c * rows + r], want[r * cols + c]) << r << ", " << c << " transposed";
        }
      EXPECT_EQ(grid.saturated, want_saturated);
      const float amax = num::bits_to_float(grid.amax_bits);
      if (with_nan) {
        EXPECT_TRUE(std::isnan(amax)) << amax;
      } else {
        EXPECT_EQ(amax, want_amax);
      }
    }
}

// ---- on a GPU ----------------------------------------------------------------------------------

class CudaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto reason = cuda::unavailable_reason()) GTEST_SKIP() << "needs a CUDA GPU: " << *reason;
    backend_ = cuda::make_backend(0);
  }

  nlohmann::json gemm_details(GemmPrecision precision, const GemmShape& shape) {
    const GemmPrecisionInfo& info = gemm_precision_info(precision);
    DeviceBuffer a = backend_->allocate(info.input, static_cast<std::size_t>(shape.batch * shape.m * shape.k));
    DeviceBuffer b = backend_->allocate(info.input, static_cast<std::size_t>(shape.batch * shape.n * shape.k));
    DeviceBuffer c = backend_->allocate(info.output, static_cast<std::size_t>(shape.batch * shape.m * shape.n));
    backend_->fill_uniform(a, 1, -1.0f, 1.0f);
    backend_->fill_uniform(b, 2, -1.0f, 1.0f);
    const std::unique_ptr<PreparedOp> gemm = backend_->make_gemm(precision, shape, a, b, c);
    gemm->run();
    backend_->synchronize();
    return gemm->details();
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(CudaGpu, GemmRecordsTheAlgorithmAndWhetherTensorCoresRunIt) {
  const GemmShape shape{4096, 4096, 4096, 1};
  const nlohmann::json fp32 = gemm_details(GemmPrecision::fp32, shape);
  const nlohmann::json bf16 = gemm_details(GemmPrecision::bf16, shape);
  for (const nlohmann::json* details : {&fp32, &bf16})
    for (const char* field : {"algo_id", "tile", "stages", "split_k", "reduction_scheme", "cta_swizzling",
                              "custom_option", "waves_count", "workspace_bytes", "workspace_limit_bytes",
                              "numerical_impl_flags", "math", "compute_type"})
      EXPECT_TRUE(details->contains(field)) << field << " in " << details->dump();
  EXPECT_FALSE(fp32.at("tensor_cores").get<bool>()) << fp32.dump();
  // Pedantic unless cuBLASLt had no pedantic algorithm for the shape, which the record then says.
  EXPECT_EQ(fp32.at("compute_type"), fp32.contains("fallback") ? "CUBLAS_COMPUTE_32F" : "CUBLAS_COMPUTE_32F_PEDANTIC")
      << fp32.dump();
  EXPECT_TRUE(bf16.at("tensor_cores").get<bool>()) << bf16.dump();
  const std::size_t workspace = backend_->device().compute_capability_major >= 9 ? (32u << 20) : (4u << 20);
  EXPECT_EQ(bf16.at("workspace_limit_bytes").get<std::size_t>(), workspace);
  EXPECT_LE(bf16.at("workspace_bytes").get<std::size_t>(), workspace);
}

TEST_F(CudaGpu, BatchedGemmFindsAnAlgorithm) {
  const nlohmann::json details = gemm_details(GemmPrecision::fp16, GemmShape{128, 128, 64, 12});
  EXPECT_TRUE(details.at("tensor_cores").get<bool>()) << details.dump();
}

TEST_F(CudaGpu, Fp8NeedsAdaOrHopperAndDimensionsMultipleOf16) {
  if (const auto why = backend_->gemm_unsupported(GemmPrecision::fp8_e4m3)) {
    EXPECT_NE(why->find("8.9"), std::string::npos) << *why;
    DeviceBuffer a = backend_->allocate(DType::e4m3, 64 * 64), b = backend_->allocate(DType::e4m3, 64 * 64);
    DeviceBuffer c = backend_->allocate(DType::bf16, 64 * 64);
    EXPECT_THROW(backend_->make_gemm(GemmPrecision::fp8_e4m3, GemmShape{64, 64, 64, 1}, a, b, c), UsageError);
    return;
  }
  const nlohmann::json details = gemm_details(GemmPrecision::fp8_e4m3, GemmShape{1024, 1024, 1024, 1});
  EXPECT_TRUE(details.at("tensor_cores").get<bool>()) << details.dump();
  DeviceBuffer a = backend_->allocate(DType::e4m3, 1000 * 64), b = backend_->allocate(DType::e4m3, 64 * 64);
  DeviceBuffer c = backend_->allocate(DType::bf16, 1000 * 64);
  EXPECT_THROW(backend_->make_gemm(GemmPrecision::fp8_e4m3, GemmShape{1000, 64, 64, 1}, a, b, c), UsageError);
}

TEST_F(CudaGpu, HostTransfersUsePinnedMemoryInBothDirections) {
  const std::size_t bytes = 64u << 20;
  for (TransferDirection direction : {TransferDirection::host_to_device, TransferDirection::device_to_host}) {
    std::string why_not;
    const std::unique_ptr<PreparedOp> transfer = backend_->make_host_transfer(direction, bytes, &why_not);
    ASSERT_TRUE(transfer) << why_not;
    const nlohmann::json details = transfer->details();
    EXPECT_TRUE(details.at("pinned").get<bool>());
    EXPECT_EQ(details.at("direction"),
              direction == TransferDirection::host_to_device ? "host_to_device" : "device_to_host");
    const std::unique_ptr<DeviceTimer> timer = backend_->make_timer();
    transfer->run();  // warm-up
    timer->start();
    transfer->run();
    const double seconds = timer->stop_seconds();
    EXPECT_GT(seconds, 0.0);
    // Any PCIe or NVLink-C2C link moves 64 MiB in well under a second.
    EXPECT_LT(seconds, 1.0);
    std::printf("%s: %.1f GB/s\n", details.at("direction").get<std::string>().c_str(), bytes / seconds / 1e9);
  }
}

TEST_F(CudaGpu, HugeAllocationThrowsOutOfMemoryAndTheGpuStaysUsable) {
  const std::size_t count = std::size_t{1} << 46;  // 256 TiB of fp32
  try {
    backend_->allocate(DType::f32, count);
    FAIL() << "a 256 TiB allocation succeeded";
  } catch (const OutOfMemoryError& error) {
    EXPECT_EQ(error.requested_bytes(), count * 4);
    EXPECT_NE(std::string(error.what()).find("free of"), std::string::npos) << error.what();
  }
  // The failed cudaMalloc must not be reported by the next kernel launch.
  DeviceBuffer buffer = backend_->allocate(DType::f32, 1000);
  backend_->fill_uniform(buffer, 5, -1.0f, 1.0f);
  std::vector<float> host(1000);
  backend_->download(host.data(), buffer, host.size() * sizeof(float));
  for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(host[i], uniform_at(5, i, -1.0f, 1.0f)) << i;
}

TEST_F(CudaGpu, TimerFlushAndClocksWork) {
  DeviceBuffer a = backend_->allocate(DType::f32, 1 << 24), c = backend_->allocate(DType::f32, 1 << 24);
  backend_->fill_uniform(a, 1, 0.0f, 1.0f);
  const std::unique_ptr<DeviceTimer> timer = backend_->make_timer();
  backend_->flush_cache();
  timer->start();
  backend_->copy(c, a);
  EXPECT_GT(timer->stop_seconds(), 0.0);
  const nlohmann::json clocks = backend_->clocks();
  EXPECT_TRUE(clocks.at("source") == "nvml" || clocks.at("source") == "unavailable") << clocks.dump();
  EXPECT_TRUE(backend_->environment().at("cuda").at("runtime").is_string());
}

// The cast-transpose-amax kernel against the shared tile math on the host, on shapes of many
// partial tiles and a grid of over 65535 blocks; a NaN amax of one call does not stick to the
// next (the amax is zeroed before each launch).
TEST_F(CudaGpu, CastTransposeAmaxMatchesTheHostTileMath) {
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {4097, 33}, {33, 4097}, {8200, 8200}};
  for (const auto& [rows, cols] : shapes)
    for (bool with_nan : {true, false}) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols << (with_nan ? " with a NaN" : ""));
      const std::size_t n = rows * cols;
      std::vector<elem::bf16_bits> x = filled<elem::bf16_bits>(n, 11);
      if (with_nan) x[n - 1] = {0xFFC0};
      const float scale_value = 200.0f;
      DeviceBuffer src = backend_->allocate(DType::bf16, n), scale = backend_->allocate(DType::f32, 1);
      DeviceBuffer codes = backend_->allocate(DType::e4m3, n), transposed = backend_->allocate(DType::e4m3, n);
      DeviceBuffer amax = backend_->allocate(DType::f32, 1);
      backend_->upload(src, x.data(), src.bytes());
      backend_->upload(scale, &scale_value, sizeof scale_value);
      backend_->cast_transpose_amax({&src, rows, cols, &scale, &codes, &transposed, &amax});
      std::vector<std::uint8_t> got_codes(n), got_transposed(n), want_codes(n), want_transposed(n);
      float got_amax = 0;
      backend_->download(got_codes.data(), codes, n);
      backend_->download(got_transposed.data(), transposed, n);
      backend_->download(&got_amax, amax, sizeof got_amax);
      elem::CastTransposeTotals totals;
      elem::cast_transpose_tile(x.data(), rows, cols, 0, 0, rows, cols, scale_value, want_codes.data(),
                                want_transposed.data(), totals);
      EXPECT_TRUE(got_codes == want_codes);
      EXPECT_TRUE(got_transposed == want_transposed);
      const float want_amax = num::bits_to_float(totals.amax_bits);
      EXPECT_EQ(std::isnan(got_amax), with_nan) << got_amax;
      if (!with_nan) {
        EXPECT_EQ(got_amax, want_amax);
      }
    }
}

}  // namespace
}  // namespace mpbench
