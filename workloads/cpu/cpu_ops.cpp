#include "workloads/cpu/cpu_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_version.h>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "amp/formats.hpp"
#include "backends/cpu/conversions.hpp"
#include "backends/cpu/cpu_device.hpp"
#include "core/error.hpp"

namespace mpbench::workloads {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

constexpr double kLayerNormEps = 1e-5;

// Below this many elements of work a loop runs on one thread: waking the team costs more than it
// saves, and far more when other processes hold the cores the team spins on.
bool worth_threads(std::size_t work) { return work >= (std::size_t{1} << 15); }

// The hot loops outside the GEMMs (conversions, attention's per-head products) are built for
// AVX-512 and AVX2 as well, and the widest the CPU has is chosen when the program loads: the rest of
// the project is built for baseline x86-64.
#if defined(__x86_64__) && defined(__GNUC__)
#define MPBENCH_WIDEST_SIMD [[gnu::target_clones("avx2", "default")]]
#else
#define MPBENCH_WIDEST_SIMD
#endif

// The calling thread's share of [0, n) in a parallel region: {first, count}.
std::pair<std::size_t, std::size_t> thread_share(std::size_t n) {
  const std::size_t threads = omp_get_num_threads(), share = (n + threads - 1) / threads;
  const std::size_t first = std::min(n, share * omp_get_thread_num());
  return {first, std::min(share, n - first)};
}

// body(first, count) on each thread's share of [0, n).
template <typename Body>
void in_shares(std::size_t n, Body body) {
#pragma omp parallel if (worth_threads(n))
  {
    const auto [first, count] = thread_share(n);
    body(first, count);
  }
}

constexpr std::size_t kChunk = 4096;

// body(first, count) on chunks of at most kChunk elements of [0, n), shared among the threads:
// elementwise loops over half-storage tensors decode and round one chunk at a time.
template <typename Body>
void in_chunks(std::size_t n, Body body) {
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (worth_threads(n))
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    const std::size_t first = chunk * kChunk;
    body(first, std::min(kChunk, n - first));
  }
}

// The CPU device layer's conversions (F16C and AVX2 where the CPU has them) for fp16: a scalar
// fp16 conversion costs many times a copy, and amp-fp16 converts every activation.
DType storage_dtype(Storage storage) { return storage == Storage::bf16 ? DType::bf16 : DType::f16; }

// dst[i] = element first + i of the half tensor x.
MPBENCH_WIDEST_SIMD void decode_values(ConstTensor<float> x, std::size_t first, std::size_t n, float* dst) {
  const std::uint16_t* codes = x.codes() + first;
  if (x.storage() == Storage::bf16) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = num::bf16_bits_to_f32(codes[i]);
  } else {
    cpu::widen_to_f32(storage_dtype(x.storage()), codes, dst, n);
  }
}

// Element first + i of the half tensor x = values[i], rounded to its storage.
MPBENCH_WIDEST_SIMD void encode_values(Tensor<float> x, std::size_t first, std::size_t n, const float* values) {
  std::uint16_t* codes = x.codes() + first;
  if (x.storage() == Storage::bf16) {
    for (std::size_t i = 0; i < n; ++i) codes[i] = num::f32_to_bf16_bits(values[i]);
  } else {
    cpu::narrow_from_f32(storage_dtype(x.storage()), values, codes, n);
  }
}

// This thread's staging row `which` of at least n floats: rows and chunks of half tensors are
// decoded into these (a few rows per thread: too small to count among the ops' buffers).
float* staging_row(int which, std::size_t n) {
  thread_local std::array<std::vector<float>, 4> rows;
  std::vector<float>& row = rows[static_cast<std::size_t>(which)];
  if (row.size() < n) row.resize(n);
  return row.data();
}

// Elements [first, first + n) of x as floats: x's own memory when it is real, else decoded into
// staging row `which`.
const float* read_values(ConstTensor<float> x, std::size_t first, std::size_t n, int which) {
  if (x.is_real()) return x.real("read_values") + first;
  float* row = staging_row(which, n);
  decode_values(x, first, n, row);
  return row;
}

// Where an op puts elements [first, first + n) of x: x's own memory when it is real, else staging
// row `which`, holding x's current values when the op adds into them. write_values stores them.
float* output_values(Tensor<float> x, std::size_t first, std::size_t n, int which, bool adds) {
  if (x.is_real()) return x.real("output_values") + first;
  float* row = staging_row(which, n);
  if (adds) decode_values(x, first, n, row);
  return row;
}

void write_values(Tensor<float> x, std::size_t first, std::size_t n, const float* values) {
  if (!x.is_real()) encode_values(x, first, n, values);
}

// Elements [first, first + n) of x = values (copied, or rounded into a half storage).
void store_values(Tensor<float> x, std::size_t first, std::size_t n, const float* values) {
  if (x.is_real()) {
    std::memcpy(x.real("store_values") + first, values, n * sizeof(float));
  } else {
    encode_values(x, first, n, values);
  }
}

// Elements [first, first + n) of x += values.
void add_values(Tensor<float> x, std::size_t first, const float* values, std::size_t n) {
  float* dst = output_values(x, first, n, 3, true);
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) dst[i] += values[i];
  write_values(x, first, n, dst);
}

// 2^n as an fp32 for n in [-126, 127], built in the exponent field.
[[gnu::always_inline]] inline float power_of_two(std::int32_t n) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(n + 127) << 23);
}

// e^x for x <= 0 (a logit less its row's largest) within about 1 fp32 ulp, in a form the compiler
// vectorizes once inlined into the loop's clones (std::exp is a call per element): x = n ln2 + r,
// |r| <= ln2/2, with ln2 in two parts so that n ln2 loses nothing; e^r by a degree-7 polynomial;
// times 2^n in two factors, so that results in the subnormal range are rounded once, as std::exp
// rounds them. Below -104 (where e^x rounds to 0) x is clamped. n is rounded by adding 1.5 * 2^23,
// whose low mantissa bits then hold it as an integer: no conversion, which a NaN would make
// undefined; a NaN goes through r, and the result is NaN.
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  constexpr float kRound = 12582912.0f;
  const float clamped = std::max(x, -104.0f);
  const float shifted = clamped * 1.44269504088896341f + kRound;
  const float n = shifted - kRound;
  const std::int32_t k = std::bit_cast<std::int32_t>(shifted) - std::bit_cast<std::int32_t>(kRound);
  const float r = (clamped - n * 0.693359375f) + n * 2.12194440e-4f;
  const float poly =
      ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
       1.6666665459e-1f) * r + 5.0000001201e-1f;
  const float er = poly * r * r + r + 1.0f;
  const std::int32_t half = k >> 1;
  return er * power_of_two(half) * power_of_two(k - half);
}

// p[v] = e^(z[v] - max_logit) for v < V; returns their sum, accumulated in double. Two loops: the
// compiler vectorizes neither with the fp32 values and the double sum in one.
MPBENCH_WIDEST_SIMD double exp_shifted(const float* z, float max_logit, float* p, int V) {
#pragma omp simd
  for (int v = 0; v < V; ++v) p[v] = exp_nonpositive(z[v] - max_logit);
  double total = 0;
#pragma omp simd reduction(+ : total)
  for (int v = 0; v < V; ++v) total += p[v];
  return total;
}

MPBENCH_WIDEST_SIMD void round_to_bf16(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = std::bit_cast<float>(std::uint32_t{num::f32_to_bf16_bits(x[i])} << 16);
}

// x[i] = round_to_format(x[i], F) with the format fixed at compile time, so the switch inside
// round_to_format folds away.
template <num::Format F>
void round_in_place(float* x, std::size_t n) {
  if constexpr (F == num::Format::bf16) {
    in_shares(n, [x](std::size_t first, std::size_t count) { round_to_bf16(x + first, count); });
  } else if constexpr (F == num::Format::fp16) {
    in_shares(n, [x](std::size_t first, std::size_t count) { cpu::round_through(DType::f16, x + first, x + first, count); });
  } else {
#pragma omp parallel for simd schedule(static) if (worth_threads(n))
    for (std::size_t i = 0; i < n; ++i) x[i] = round_to_format(x[i], F);
  }
}

void round_values(float* x, std::size_t n, num::Format format) {
  switch (format) {
    case num::Format::fp32: return;
    case num::Format::tf32: return round_in_place<num::Format::tf32>(x, n);
    case num::Format::fp16: return round_in_place<num::Format::fp16>(x, n);
    case num::Format::bf16: return round_in_place<num::Format::bf16>(x, n);
    case num::Format::e4m3: return round_in_place<num::Format::e4m3>(x, n);
    case num::Format::e5m2: return round_in_place<num::Format::e5m2>(x, n);
  }
}

// dst[i] = x[i] as a GEMM in `format` reads it (serial: called inside per-thread work); dst may
// be x. fp16 and bf16 through the device layer's vector loops (the same bits as round_to_format).
void load_operand(float* dst, const float* x, std::size_t n, num::Format format) {
  if (format == num::Format::fp32) {
    if (dst != x) std::memcpy(dst, x, n * sizeof(float));
    return;
  }
  if (format == num::Format::fp16) return cpu::round_through(DType::f16, x, dst, n);
  if (format == num::Format::bf16) return cpu::round_through(DType::bf16, x, dst, n);
  for (std::size_t i = 0; i < n; ++i) dst[i] = round_to_format(x[i], format);
}

// The heads of `parts` consecutive C-wide parts of each row of x [B*T rows, row_width elements],
// from element `offset` of the row on, as [parts][B*NH, T, hs] fp32 values in the GEMM input
// format: q, k and v out of qkv (parts 3), or dout's heads (parts 1). One row per iteration: the
// row is read (and decoded from a half storage) once.
void gather_heads(float* heads, ConstTensor<float> x, std::size_t row_width, int parts, int B, int T, int C, int NH,
                  num::Format format) {
  const int hs = C / NH;
  const std::size_t part_size = static_cast<std::size_t>(B) * T * C, width = static_cast<std::size_t>(parts) * C;
  // Values decoded from a storage in the GEMM input format are its values already.
  const num::Format rounding = !x.is_real() && storage_format(x.storage()) == format ? num::Format::fp32 : format;
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<std::size_t>(B) * T * width))
  for (int row = 0; row < B * T; ++row) {
    const int b = row / T, t = row % T;
    const float* values = read_values(x, static_cast<std::size_t>(row) * row_width, width, 0);
    for (int part = 0; part < parts; ++part) {
      for (int h = 0; h < NH; ++h) {
        float* dst = heads + part * part_size + ((static_cast<std::size_t>(b) * NH + h) * T + t) * hs;
        load_operand(dst, values + part * C + h * hs, hs, rounding);
      }
    }
  }
}

// The inverse of gather_heads: each row of x (= or +=) its heads' rows, rounded to x's storage.
void scatter_heads(Tensor<float> x, const float* heads, std::size_t row_width, int parts, int B, int T, int C, int NH,
                   bool adds) {
  const int hs = C / NH;
  const std::size_t part_size = static_cast<std::size_t>(B) * T * C, width = static_cast<std::size_t>(parts) * C;
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<std::size_t>(B) * T * width))
  for (int row = 0; row < B * T; ++row) {
    const int b = row / T, t = row % T;
    const std::size_t first = static_cast<std::size_t>(row) * row_width;
    float* values = output_values(x, first, width, 1, adds);
    for (int part = 0; part < parts; ++part) {
      for (int h = 0; h < NH; ++h) {
        const float* src = heads + part * part_size + ((static_cast<std::size_t>(b) * NH + h) * T + t) * hs;
        float* dst = values + part * C + h * hs;
        if (adds) {
#pragma omp simd
          for (int i = 0; i < hs; ++i) dst[i] += src[i];
        } else {
          std::memcpy(dst, src, hs * sizeof(float));
        }
      }
    }
    write_values(x, first, width, values);
  }
}

// A row of scores (q k^T, all T of them) into the causal softmax of its first t + 1 times scale,
// zeros after them. exp_nonpositive: within an ulp of std::exp, and vectorized.
MPBENCH_WIDEST_SIMD void causal_softmax_row(float* row, int t, int T, float scale) {
  float max_score = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max_score)
  for (int t2 = 0; t2 <= t; ++t2) max_score = std::max(max_score, row[t2] * scale);
  float total = 0;
#pragma omp simd reduction(+ : total)
  for (int t2 = 0; t2 <= t; ++t2) total += (row[t2] = exp_nonpositive(row[t2] * scale - max_score));
  const float inverse = 1.0f / total;
#pragma omp simd
  for (int t2 = 0; t2 <= t; ++t2) row[t2] *= inverse;
  std::fill(row + t + 1, row + T, 0.0f);
}

// A row of datt = dy v^T into dscore = att * (datt - sum(att * datt)) * scale over its first t + 1
// elements, zeros after them (where att is 0: no score was there).
MPBENCH_WIDEST_SIMD void softmax_backward_row(const float* att_row, float* row, int t, int T, float scale) {
  float weighted = 0;
#pragma omp simd reduction(+ : weighted)
  for (int t2 = 0; t2 <= t; ++t2) weighted += att_row[t2] * row[t2];
#pragma omp simd
  for (int t2 = 0; t2 <= t; ++t2) row[t2] = att_row[t2] * (row[t2] - weighted) * scale;
  std::fill(row + t + 1, row + T, 0.0f);
}

// Each of x's `rows` rows of T after row(r) has run on row r (which may rewrite it), as the GEMM
// reads them: x itself in fp32, else rounded to `format` into buffer (which may be x).
template <typename Row>
const float* rounded_rows(const float* x, float* buffer, std::size_t rows, int T, num::Format format, Row row) {
#pragma omp parallel for schedule(static) if (worth_threads(rows * T))
  for (std::size_t r = 0; r < rows; ++r) {
    row(r);
    if (format != num::Format::fp32) load_operand(buffer + r * T, x + r * T, T, format);
  }
  return format == num::Format::fp32 ? x : buffer;
}

}  // namespace

// oneDNN's GELU primitives per element count, on the device's engine, with memory objects whose
// data handles are set before each run.
struct CpuTransformerOps::Gelus {
  struct Gelu {
    dnnl::eltwise_forward forward;
    dnnl::eltwise_backward backward;
    memory src, dst, diff_dst, diff_src;
    std::unordered_map<int, memory> forward_arguments, backward_arguments;
  };
  std::map<std::size_t, Gelu> by_count;

  Gelu& gelu(dnnl::engine& engine, std::size_t n) {
    auto it = by_count.find(n);
    if (it != by_count.end()) return it->second;
    try {
      const memory::desc md({static_cast<memory::dim>(n)}, memory::data_type::f32, tag::a);
      const auto algorithm = dnnl::algorithm::eltwise_gelu_tanh;
#if DNNL_VERSION_MAJOR >= 3
      // oneDNN 3: no operation descriptors; the engine first, the backward one given src (data) md.
      const dnnl::eltwise_forward::primitive_desc forward(engine, dnnl::prop_kind::forward_training, algorithm, md,
                                                          md);
      const dnnl::eltwise_backward::primitive_desc backward(engine, algorithm, md, md, md, forward);
#else
      const dnnl::eltwise_forward::primitive_desc forward(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, algorithm, md), engine);
      const dnnl::eltwise_backward::primitive_desc backward(dnnl::eltwise_backward::desc(algorithm, md, md), engine,
                                                            forward);
#endif
      Gelu g{dnnl::eltwise_forward(forward), dnnl::eltwise_backward(backward), memory(md, engine, DNNL_MEMORY_NONE),
             memory(md, engine, DNNL_MEMORY_NONE), memory(md, engine, DNNL_MEMORY_NONE),
             memory(md, engine, DNNL_MEMORY_NONE), {}, {}};
      g.forward_arguments = {{DNNL_ARG_SRC, g.src}, {DNNL_ARG_DST, g.dst}};
      g.backward_arguments = {{DNNL_ARG_SRC, g.src}, {DNNL_ARG_DIFF_DST, g.diff_dst}, {DNNL_ARG_DIFF_SRC, g.diff_src}};
      return by_count.emplace(n, std::move(g)).first->second;
    } catch (const dnnl::error& e) {
      throw BackendError("oneDNN eltwise gelu_tanh over " + std::to_string(n) + " values: " + e.what());
    }
  }
};

CpuTransformerOps::CpuTransformerOps(std::shared_ptr<cpu::CpuDevice> device)
    : device_(std::move(device)), gelus_(std::make_unique<Gelus>()) {}

CpuTransformerOps::~CpuTransformerOps() = default;

std::string CpuTransformerOps::implementation() const {
  std::string text = fmt::format("oneDNN {} matmul", cpu::onednn_version());
  if (const auto kernels = device_->matmul_kernels(); !kernels.empty()) text += fmt::format(" ({})", fmt::join(kernels, ", "));
  text += " and eltwise GELU, OpenMP loops";
  if (fp8_gemm())
    text += fp8().recipe() == Fp8Recipe::mxfp8
                ? fmt::format("; fp8 GEMMs converted (mxfp8): each operand quantized to e4m3 in 32-element blocks "
                              "along K with e8m0 scales (rounded {}) and dequantized to fp32, the fp32 matmul; "
                              "attention in bf16",
                              amp::mx_scale_rounding_name(fp8().mx_rounding()))
                : fmt::format("; fp8 GEMMs converted ({} scaling): each operand quantized to e4m3 (gradients e5m2) "
                              "with its per-tensor scale and dequantized to fp32, the fp32 matmul; the backward "
                              "{} inputs and weights; attention in bf16",
                              fp8_recipe_name(fp8().recipe()),
                              fp8().keeps_forward_copies() ? "reuses the forward's fp8" : "quantizes again the");
  else if (converted_)
    text += fmt::format("; {} GEMMs converted: operands rounded to {} in fp32, the fp32 matmul",
                        gemm_precision_info(precision_.gemm).name, gemm_precision_info(precision_.gemm).name);
  if (device_->isa_note()) text += "; " + *device_->isa_note();
  return text;
}

const CapabilityTable& CpuTransformerOps::capabilities() const { return device_->capabilities(); }

void CpuTransformerOps::set_matmul_precision(const MatmulPrecision& precision) {
  if (const auto reason = unsupported(precision.gemm)) throw UsageError(*reason);
  if (precision.gemm == GemmPrecision::fp8_e4m3 && !fp8().active())
    throw UsageError("fp8 GEMMs quantize with per-tensor scales: configure a recipe first (fp8().configure)");
  precision_ = precision;
  converted_ = gemm_path(precision.gemm) == GemmPath::converted;
}

void CpuTransformerOps::release_scratch() {
  operand_a_ = {};
  operand_b_ = {};
  operand_c_ = {};
  result_ = {};
  decoded_ = {};
  per_thread_ = {};
}

template <typename T>
T* CpuTransformerOps::scratch(OpsArray<T>& buffer, std::size_t count) {
  if (buffer.size() < count) buffer = OpsArray<T>(*this, count);
  return buffer.data();
}

void CpuTransformerOps::round_to(float* x, std::size_t n, num::Format format) { round_values(x, n, format); }

const float* CpuTransformerOps::decoded(ConstTensor<float> x, std::size_t n, OpsArray<float>& buffer) {
  if (x.is_real()) return x.real("decoded");
  float* values = scratch(buffer, n);
  in_chunks(n, [&](std::size_t first, std::size_t count) { decode_values(x, first, count, values + first); });
  return values;
}

const float* CpuTransformerOps::fp8_operand(ConstTensor<float> x, std::size_t rows, std::size_t cols,
                                            bool k_along_rows, Fp8Operand role, OpsArray<std::byte>& buffer,
                                            bool count) {
  const std::size_t n = rows * cols;
  float* operand = reinterpret_cast<float*>(scratch(buffer, n * sizeof(float)));
  if (fp8().reuse_forward_copy(role, x.data(), n, operand)) return operand;
  fp8().quantize_matrix(role, decoded(x, n, decoded_[0]), rows, cols, k_along_rows, operand, count, x.data());
  return operand;
}

const void* CpuTransformerOps::gemm_operand(ConstTensor<float> x, std::size_t n, OpsArray<std::byte>& buffer) {
  const num::Format format = gemm_input_format(precision_.gemm);
  if (converted_) return rounded_operand(x, n, format, buffer);
  if (!x.is_real()) {
    if (storage_format(x.storage()) == format) return x.data();
    return gemm_operand(decoded(x, n, decoded_[0]), n, buffer);
  }
  const float* values = x.real("gemm_operand");
  const Storage operand_storage = half_storage(format);
  if (operand_storage == Storage::real) return values;
  const Tensor<float> operand(reinterpret_cast<std::uint16_t*>(scratch(buffer, n * sizeof(std::uint16_t))),
                              operand_storage);
  in_shares(n, [&](std::size_t first, std::size_t count) { encode_values(operand, first, count, values + first); });
  return operand.data();
}

const float* CpuTransformerOps::rounded_operand(ConstTensor<float> x, std::size_t n, num::Format format,
                                                OpsArray<std::byte>& buffer) {
  float* values = reinterpret_cast<float*>(scratch(buffer, n * sizeof(float)));
  const bool exact = !x.is_real() && storage_format(x.storage()) == format;  // the codes are the format's values
  in_shares(n, [&](std::size_t first, std::size_t count) {
    if (x.is_real()) return load_operand(values + first, x.real("rounded_operand") + first, count, format);
    decode_values(x, first, count, values + first);
    if (!exact) load_operand(values + first, values + first, count, format);
  });
  return values;
}

void CpuTransformerOps::gemm(Tensor<float> out, const void* a, bool a_transposed, const void* b, bool b_transposed,
                             const float* bias, int M, int K, int N, bool accumulate) {
  const std::size_t outputs = static_cast<std::size_t>(M) * N;
  if (outputs == 0) return;
  // A rounded result is added after its rounding, so it cannot use oneDNN's sum post-op; a half
  // output is rounded into its storage after the GEMM.
  const bool rounded = precision_.output != num::Format::fp32;
  const bool in_place = out.is_real() && !(accumulate && rounded);
  float* dst = in_place ? out.real("gemm") : scratch(result_, outputs);
  // fp8: the operands are dequantized fp32 values already, for the fp32 matmul.
  const bool fp8 = fp8_gemm();
  cpu::CpuMatmul& matmul = device_->matmul({fp8 ? GemmPrecision::fp32 : precision_.gemm, 1, M, N, K, a_transposed,
                                            b_transposed, DType::f32, bias != nullptr, accumulate && in_place,
                                            fp8 ? false : converted_});
  matmul.run(a, b, bias, dst);
  round_values(dst, outputs, precision_.output);
  if (in_place) return;
  in_chunks(outputs, [&](std::size_t first, std::size_t count) {
    if (accumulate) return add_values(out, first, dst + first, count);
    store_values(out, first, count, dst + first);
  });
}

void CpuTransformerOps::matmul_forward(Tensor<float> out, ConstTensor<float> inp, const float* weight,
                                       const float* bias, int N, int C, int OC) {
  const std::size_t NC = static_cast<std::size_t>(N) * C, OCC = static_cast<std::size_t>(OC) * C;
  if (fp8_gemm()) {
    // K = C runs along the rows of both inp [N,C] and weight [OC,C].
    const float* a = fp8_operand(inp, N, C, true, Fp8Operand::input, operand_a_);
    const float* b = fp8_operand(weight, OC, C, true, Fp8Operand::weight, operand_b_);
    return gemm(out, a, false, b, true, bias, N, C, OC, false);
  }
  gemm(out, gemm_operand(inp, NC, operand_a_), false, gemm_operand(weight, OCC, operand_b_), true, bias, N, C, OC,
       false);
}

void CpuTransformerOps::matmul_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                                        ConstTensor<float> inp, const float* weight, int N, int C, int OC) {
  const std::size_t NC = static_cast<std::size_t>(N) * C, OCC = static_cast<std::size_t>(OC) * C;
  if (fp8_gemm()) {
    // dinp = dout weight: K = OC, along dout's rows and down weight's columns. dweight = dout^T inp:
    // K = N, down the columns of both. Per-tensor scales give one dout operand for both GEMMs;
    // mxfp8 blocks it both ways (the second copy not counted again).
    const bool blocked = fp8().recipe() == Fp8Recipe::mxfp8;
    const float* dout_rows = fp8_operand(dout, N, OC, true, Fp8Operand::grad, operand_a_);
    gemm(dinp, dout_rows, false, fp8_operand(weight, OC, C, false, Fp8Operand::weight, operand_b_), false, nullptr, N,
         OC, C, true);
    const float* dout_columns =
        blocked ? fp8_operand(dout, N, OC, false, Fp8Operand::grad, operand_c_, false) : dout_rows;
    gemm(dweight, dout_columns, true, fp8_operand(inp, N, C, false, Fp8Operand::input, operand_b_), false, nullptr, OC,
         N, C, true);
  } else {
    const void* dout_operand = gemm_operand(dout, static_cast<std::size_t>(N) * OC, operand_a_);  // read by both
    gemm(dinp, dout_operand, false, gemm_operand(weight, OCC, operand_b_), false, nullptr, N, OC, C, true);
    gemm(dweight, dout_operand, true, gemm_operand(inp, NC, operand_b_), false, nullptr, OC, N, C, true);
  }
  if (dbias == nullptr) return;
  // Column sums of dout (not rounded to the GEMM input type, as in the reference), in double.
  // Blocks of columns per thread: each thread reads contiguous pieces of every row.
  constexpr int kBlock = 64;
  const int blocks = (OC + kBlock - 1) / kBlock;
  const num::Format output = precision_.output;
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<std::size_t>(N) * OC))
  for (int block = 0; block < blocks; ++block) {
    const int first = block * kBlock, width = std::min(kBlock, OC - first);
    double sums[kBlock] = {};
    for (int n = 0; n < N; ++n) {
      const float* row = read_values(dout, static_cast<std::size_t>(n) * OC + first, width, 0);
#pragma omp simd
      for (int j = 0; j < width; ++j) sums[j] += row[j];
    }
    for (int j = 0; j < width; ++j) dbias[first + j] += round_to_format(static_cast<float>(sums[j]), output);
  }
}

void CpuTransformerOps::encoder_forward(Tensor<float> out, const std::int32_t* tokens, const float* wte,
                                        const float* wpe, int B, int T, int C) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<std::size_t>(B) * T * C))
  for (int row = 0; row < B * T; ++row) {
    const float* token_row = wte + static_cast<std::size_t>(tokens[row]) * C;
    const float* position_row = wpe + static_cast<std::size_t>(row % T) * C;
    const std::size_t first = static_cast<std::size_t>(row) * C;
    float* out_row = output_values(out, first, C, 0, false);
#pragma omp simd
    for (int c = 0; c < C; ++c) out_row[c] = token_row[c] + position_row[c];
    write_values(out, first, C, out_row);
  }
}

void CpuTransformerOps::encoder_backward(float* dwte, float* dwpe, ConstTensor<float> dout_tensor,
                                         const std::int32_t* tokens, int B, int T, int C) {
  const float* dout = decoded(dout_tensor, static_cast<std::size_t>(B) * T * C, decoded_[0]);
  // Several rows can hit the same token: threads own blocks of channels, not rows, so no two
  // threads add into the same element.
  constexpr int kBlock = 16;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<std::size_t>(B) * T * C))
  for (int block = 0; block < blocks; ++block) {
    const int first = block * kBlock, last = std::min(C, first + kBlock);
    for (int row = 0; row < B * T; ++row) {
      const float* dout_row = dout + static_cast<std::size_t>(row) * C;
      float* dtoken_row = dwte + static_cast<std::size_t>(tokens[row]) * C;
      float* dposition_row = dwpe + static_cast<std::size_t>(row % T) * C;
#pragma omp simd
      for (int c = first; c < last; ++c) {
        dtoken_row[c] += dout_row[c];
        dposition_row[c] += dout_row[c];
      }
    }
  }
}

// oneDNN's layer_normalization saves the variance, not rstd, and its backward overwrites its
// gradients where these ops add: loops over rows do it in one pass without conversions.
void CpuTransformerOps::layernorm_forward(Tensor<float> out, float* mean, float* rstd, ConstTensor<float> inp,
                                          const float* weight, const float* bias, int N, int C) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<std::size_t>(N) * C))
  for (int n = 0; n < N; ++n) {
    const std::size_t first = static_cast<std::size_t>(n) * C;
    const float* x = read_values(inp, first, C, 0);
    // The reference's operations in its order (sums in sequence, the output in double, rounded
    // once), so the same bits: fp32 steps put the output a few fp32 ulps off, which a half output
    // turned into bf16 flips (about 5 in 10^5 values) that moved a mixed-precision loss by 1e-5;
    // sums in another order flip a rounding now and then. Two passes over a row: little of a step.
    double sum = 0;
    for (int c = 0; c < C; ++c) sum += x[c];
    const double m = sum / C;
    double squares = 0;
    for (int c = 0; c < C; ++c) squares += (x[c] - m) * (x[c] - m);
    const double s = 1.0 / std::sqrt(squares / C + kLayerNormEps);
    float* y = output_values(out, first, C, 1, false);
#pragma omp simd
    for (int c = 0; c < C; ++c) y[c] = static_cast<float>((x[c] - m) * s * weight[c] + bias[c]);
    write_values(out, first, C, y);
    mean[n] = static_cast<float>(m);
    rstd[n] = static_cast<float>(s);
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with xhat = (x - mean) * rstd, g = dout * weight.
// dweight and dbias sum over rows: each thread sums its rows into its own partial sums first.
void CpuTransformerOps::layernorm_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                                           ConstTensor<float> inp, const float* weight, const float* mean,
                                           const float* rstd, int N, int C) {
  const std::size_t per_thread = 2 * static_cast<std::size_t>(C);
  float* partials = scratch(per_thread_, per_thread * omp_get_max_threads());
#pragma omp parallel if (worth_threads(static_cast<std::size_t>(N) * C))
  {
    const int threads = omp_get_num_threads();
    float* dweight_part = partials + per_thread * omp_get_thread_num();
    float* dbias_part = dweight_part + C;
    std::fill(dweight_part, dweight_part + per_thread, 0.0f);
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const std::size_t first = static_cast<std::size_t>(n) * C;
      const float* x = read_values(inp, first, C, 0);
      const float* dy = read_values(dout, first, C, 1);
      float* dx = output_values(dinp, first, C, 2, true);
      // dx as the reference computes it (as the forward's output): the same bits, where a half
      // gradient would turn fp32 steps into flipped values. dweight and dbias are fp32 sums over
      // rows in another order (per thread, then added): fp32 noise apart.
      const double m = mean[n], s = rstd[n];
      double g_mean = 0, g_xhat_mean = 0;
      for (int c = 0; c < C; ++c) {
        const double g = double(dy[c]) * weight[c];
        g_mean += g;
        g_xhat_mean += g * ((x[c] - m) * s);
      }
      g_mean /= C;
      g_xhat_mean /= C;
#pragma omp simd
      for (int c = 0; c < C; ++c) {
        const double xhat = (x[c] - m) * s;
        dbias_part[c] += dy[c];
        dweight_part[c] += static_cast<float>(dy[c] * xhat);
        dx[c] = static_cast<float>(dx[c] + s * (double(dy[c]) * weight[c] - g_mean - xhat * g_xhat_mean));
      }
      write_values(dinp, first, C, dx);
    }
    // The implicit barrier of the loop above: every partial sum is complete.
#pragma omp for schedule(static)
    for (int c = 0; c < C; ++c) {
      float w = 0, b = 0;
      for (int t = 0; t < threads; ++t) {
        w += partials[per_thread * t + c];
        b += partials[per_thread * t + C + c];
      }
      dweight[c] += w;
      dbias[c] += b;
    }
  }
}

// Batched fp32 matmuls over the B*NH heads, on operands rounded to the GEMM input format as the
// reference reads them (fp32 products of those values, as the reference sums them): q, k and v are
// gathered out of qkv into [B*NH, T, hs], scores = q k^T land in att, each row gets its causal
// softmax there, y = att v is scattered into out. The masked half of q k^T is computed and
// overwritten: one GEMM over all of it is still many times faster than row-by-row dot products.
void CpuTransformerOps::attention_forward(Tensor<float> out, float* att, ConstTensor<float> qkv, int B, int T, int C,
                                          int NH) {
  const int hs = C / NH, BH = B * NH;
  const std::size_t head_values = static_cast<std::size_t>(B) * T * C, scores = static_cast<std::size_t>(BH) * T * T;
  const num::Format in = attention_input_format(precision_.gemm);
  float* q = scratch(per_thread_, 4 * head_values + (in == num::Format::fp32 ? 0 : scores));
  float* k = q + head_values;
  float* v = k + head_values;
  float* y = v + head_values;
  gather_heads(q, qkv, 3 * static_cast<std::size_t>(C), 3, B, T, C, NH, in);
  head_matmul(q, false, k, true, att, BH, T, T, hs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* att_operand = rounded_rows(att, y + head_values, BH * static_cast<std::size_t>(T), T, in, [&](std::size_t row) {
    causal_softmax_row(att + row * T, static_cast<int>(row % T), T, scale);
  });
  head_matmul(att_operand, false, v, false, y, BH, T, hs, T);
  scatter_heads(out, y, C, 1, B, T, C, NH, false);
}

// The same batched matmuls: datt = dy v^T, turned into dscore row by row; dv = att^T dy, dq =
// dscore k, dk = dscore^T q, added into dqkv.
void CpuTransformerOps::attention_backward(Tensor<float> dqkv, ConstTensor<float> dout, ConstTensor<float> qkv,
                                           const float* att, int B, int T, int C, int NH) {
  const int hs = C / NH, BH = B * NH;
  const std::size_t head_values = static_cast<std::size_t>(B) * T * C, scores = static_cast<std::size_t>(BH) * T * T;
  const num::Format in = attention_input_format(precision_.gemm);
  float* q = scratch(per_thread_, 7 * head_values + (in == num::Format::fp32 ? 1 : 2) * scores);
  float* k = q + head_values;
  float* v = k + head_values;
  float* dy = v + head_values;
  float* dq = dy + head_values;  // dq, dk, dv: gather_heads' layout of three parts, for scatter_heads
  float* dk = dq + head_values;
  float* dv = dk + head_values;
  float* dscore = dv + head_values;
  gather_heads(q, qkv, 3 * static_cast<std::size_t>(C), 3, B, T, C, NH, in);
  gather_heads(dy, dout, C, 1, B, T, C, NH, in);
  head_matmul(dy, false, v, true, dscore, BH, T, T, hs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* dscore_operand = rounded_rows(dscore, dscore, BH * static_cast<std::size_t>(T), T, in, [&](std::size_t row) {
    softmax_backward_row(att + row * T, dscore + row * T, static_cast<int>(row % T), T, scale);
  });
  const float* att_operand = rounded_rows(att, dscore + scores, BH * static_cast<std::size_t>(T), T, in, [](std::size_t) {});
  head_matmul(att_operand, true, dy, false, dv, BH, T, hs, T);
  head_matmul(dscore_operand, false, k, false, dq, BH, T, hs, T);
  head_matmul(dscore_operand, true, q, false, dk, BH, T, hs, T);
  scatter_heads(dqkv, dq, 3 * static_cast<std::size_t>(C), 3, B, T, C, NH, true);
}

void CpuTransformerOps::head_matmul(const float* a, bool a_transposed, const float* b, bool b_transposed, float* dst,
                                    int batch, int M, int N, int K) {
  if (static_cast<std::size_t>(batch) * M * N == 0) return;
  device_
      ->matmul({GemmPrecision::fp32, batch, M, N, K, a_transposed, b_transposed, DType::f32, false, false, false})
      .run(a, b, nullptr, dst);
}


// oneDNN's eltwise on fp32 (its jitted tanh is many times faster than a loop over gelu()): half
// tensors are decoded before it and the result is rounded into them after it.
void CpuTransformerOps::gelu_forward(Tensor<float> out, ConstTensor<float> inp, std::size_t n) {
  if (n == 0) return;
  auto& g = gelus_->gelu(device_->engine(), n);
  float* dst = out.is_real() ? out.real("gelu_forward") : scratch(result_, n);
  g.src.set_data_handle(const_cast<float*>(decoded(inp, n, decoded_[0])));
  g.dst.set_data_handle(dst);
  device_->execute(g.forward, g.forward_arguments, "eltwise gelu_tanh forward");
  if (!out.is_real()) {
    in_chunks(n, [&](std::size_t first, std::size_t count) { encode_values(out, first, count, dst + first); });
  }
}

void CpuTransformerOps::gelu_backward(Tensor<float> dinp, ConstTensor<float> dout, ConstTensor<float> inp,
                                      std::size_t n) {
  if (n == 0) return;
  auto& g = gelus_->gelu(device_->engine(), n);
  // oneDNN overwrites its diff_src; the op adds
  float* gradient = scratch(result_, n);
  g.src.set_data_handle(const_cast<float*>(decoded(inp, n, decoded_[0])));
  g.diff_dst.set_data_handle(const_cast<float*>(decoded(dout, n, decoded_[1])));
  g.diff_src.set_data_handle(gradient);
  device_->execute(g.backward, g.backward_arguments, "eltwise gelu_tanh backward");
  in_chunks(n, [&](std::size_t first, std::size_t count) { add_values(dinp, first, gradient + first, count); });
}

void CpuTransformerOps::residual_forward(Tensor<float> out, ConstTensor<float> a, ConstTensor<float> b,
                                         std::size_t n) {
  in_chunks(n, [&](std::size_t first, std::size_t count) {
    const float* x = read_values(a, first, count, 0);
    const float* y = read_values(b, first, count, 1);
    float* sum = output_values(out, first, count, 2, false);
#pragma omp simd
    for (std::size_t i = 0; i < count; ++i) sum[i] = x[i] + y[i];
    write_values(out, first, count, sum);
  });
}

void CpuTransformerOps::residual_backward(Tensor<float> da, Tensor<float> db, ConstTensor<float> dout,
                                          std::size_t n) {
  in_chunks(n, [&](std::size_t first, std::size_t count) {
    const float* dy = read_values(dout, first, count, 0);
    add_values(da, first, dy, count);
    add_values(db, first, dy, count);
  });
}

void CpuTransformerOps::softmax_crossentropy_forward(float* losses, float* probs, ConstTensor<float> logits,
                                                     const std::int32_t* targets, int N, int V, int Vp) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<std::size_t>(N) * Vp))
  for (int n = 0; n < N; ++n) {
    const float* z = read_values(logits, static_cast<std::size_t>(n) * Vp, Vp, 0);
    float* p = probs + static_cast<std::size_t>(n) * Vp;
    float max_logit = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max_logit)
    for (int v = 0; v < V; ++v) max_logit = std::max(max_logit, z[v]);
    const double total = exp_shifted(z, max_logit, p, V);
    const float inverse = static_cast<float>(1.0 / total);
#pragma omp simd
    for (int v = 0; v < V; ++v) p[v] *= inverse;
    std::fill(p + V, p + Vp, 0.0f);
    // log p[target] from the logits, not from the rounded probability.
    losses[n] = static_cast<float>(std::log(total) - (double(z[targets[n]]) - max_logit));
  }
}

void CpuTransformerOps::softmax_crossentropy_backward(Tensor<float> dlogits, const float* dlosses, const float* probs,
                                                      const std::int32_t* targets, int N, int V, int Vp) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast<std::size_t>(N) * Vp))
  for (int n = 0; n < N; ++n) {
    const float* p = probs + static_cast<std::size_t>(n) * Vp;
    const std::size_t first = static_cast<std::size_t>(n) * Vp;
    float* dz = output_values(dlogits, first, Vp, 0, true);
    const float dloss = dlosses[n];
#pragma omp simd
    for (int v = 0; v < V; ++v) dz[v] += dloss * p[v];
    dz[targets[n]] -= dloss;
    write_values(dlogits, first, Vp, dz);
  }
}

namespace {

// adamw_update's loop over one thread's share, four doubles to a vector where the CPU has AVX2.
// Not the AVX-512 clone the other loops have: GCC's avx512f implies FMA, and fusing the products
// into the sums of adamw_update_element would give other bits than the reference's separate
// roundings (avx2 alone has no FMA). Wider vectors would not help: the three divisions and the
// square root per element keep the divider busy at any width. `step` by value, a copy no store to
// params can alias: with math functions that need not set errno (see CMakeLists.txt), its pow()
// terms are then hoisted out of the loop.
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target_clones("avx2", "default")]]
#endif
void adamw_share(float* params, const float* grads, float* m, float* v, std::size_t n, AdamWStep step) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    double p = params[i], mi = m[i], vi = v[i];
    adamw_update_element(p, mi, vi, double(grads[i]), step);
    params[i] = static_cast<float>(p);
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
  }
}

}  // namespace

// In double through adamw_update_element, as the reference does: the same bits.
void CpuTransformerOps::adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                                     const AdamWStep& step) {
  in_shares(n, [&](std::size_t first, std::size_t count) {
    adamw_share(params + first, grads + first, m + first, v + first, count, step);
  });
}

namespace {

// The sum of x[i]^2 in double over one thread's share, in kWays interleaved partial sums: with one
// vector of sums each add waits for the one before (the loop ran at a third of the memory's speed);
// with a fixed 32 the compiler keeps them all in registers, as several independent vectors.
MPBENCH_WIDEST_SIMD double sum_of_squares(const float* x, std::size_t n) {
  constexpr std::size_t kWays = 32;
  double sums[kWays] = {};
  const std::size_t whole = n - n % kWays;
  for (std::size_t i = 0; i < whole; i += kWays) {
#pragma omp simd
    for (std::size_t j = 0; j < kWays; ++j) sums[j] += double(x[i + j]) * x[i + j];
  }
  double total = 0;
  for (std::size_t i = whole; i < n; ++i) total += double(x[i]) * x[i];
  for (double s : sums) total += s;
  return total;
}

}  // namespace

// inf and NaN elements carry through the sum of squares (squares are never negative, so no
// inf - inf), so the norm is inf or NaN when any element is.
double CpuTransformerOps::global_norm(const float* grads, std::size_t n) {
  double sum = 0;
#pragma omp parallel reduction(+ : sum) if (worth_threads(n))
  {
    const auto [first, count] = thread_share(n);
    sum += sum_of_squares(grads + first, count);
  }
  return std::sqrt(sum);
}

void CpuTransformerOps::copy(float* dst, const float* src, std::size_t n) {
#pragma omp parallel for simd schedule(static) if (worth_threads(n))
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
}

}  // namespace mpbench::workloads
