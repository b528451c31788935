#include "amp/fp8_scaling.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <stdexcept>

namespace mpbench::amp {
namespace {

// NaN-propagating max, like torch.max over the history: a NaN amax must stay visible.
float max_propagating_nan(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::nanf("");
  return a > b ? a : b;
}

// Each serial loop is compiled twice, for the baseline ISA and for AVX-512 (F, BW, DQ, VL: the
// element math in 16 lanes with mask registers, about 3x the baseline's SSE2), and picked once by
// the CPU's flags. The bodies are inlined into both, so the two run the same math.
#if !defined(__CUDACC__) && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
bool cpu_has_avx512() {
  __builtin_cpu_init();  // this runs from a static initializer, maybe before libgcc's own
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return has;
}
#else
bool cpu_has_avx512() { return false; }
#endif

// The ISA the loops use now: AVX-512 where the CPU has it, unless set_fp8_loop_isa chose baseline.
std::atomic<bool> use_avx512{cpu_has_avx512()};

// A serial loop's share: small enough that its 32-bit counts cannot wrap.
constexpr std::size_t kChunk = 16384;

template <bool E4m3>
[[gnu::always_inline]] inline Fp8TensorCounts quantize_chunk(const float* x, std::size_t n, float scale, uint8_t* out) {
  uint32_t saturated = 0, underflowed = 0;
#pragma omp simd reduction(+ : saturated, underflowed)
  for (std::size_t i = 0; i < n; ++i) out[i] = quantize_fp8_branchless<E4m3>(x[i], scale, saturated, underflowed);
  return {saturated, underflowed};
}

[[gnu::always_inline]] inline uint32_t amax_chunk(const float* x, std::size_t n) {
  uint32_t amax = 0;
#pragma omp simd reduction(max : amax)
  for (std::size_t i = 0; i < n; ++i) amax = fold_amax_bits(amax, x[i]);
  return amax;
}

template <bool E4m3>
Fp8TensorCounts quantize_baseline(const float* x, std::size_t n, float scale, uint8_t* out) {
  return quantize_chunk<E4m3>(x, n, scale, out);
}
template <bool E4m3>
MPB_FP8_AVX512 Fp8TensorCounts quantize_avx512(const float* x, std::size_t n, float scale, uint8_t* out) {
  return quantize_chunk<E4m3>(x, n, scale, out);
}
uint32_t amax_baseline(const float* x, std::size_t n) { return amax_chunk(x, n); }
MPB_FP8_AVX512 uint32_t amax_avx512(const float* x, std::size_t n) { return amax_chunk(x, n); }

using QuantizeChunk = Fp8TensorCounts (*)(const float*, std::size_t, float, uint8_t*);
using AmaxChunk = uint32_t (*)(const float*, std::size_t);

QuantizeChunk quantize_kernel(bool e4m3) {
  if (use_avx512.load(std::memory_order_relaxed)) return e4m3 ? &quantize_avx512<true> : &quantize_avx512<false>;
  return e4m3 ? &quantize_baseline<true> : &quantize_baseline<false>;
}

AmaxChunk amax_kernel() { return use_avx512.load(std::memory_order_relaxed) ? &amax_avx512 : &amax_baseline; }

std::size_t chunks_of(std::size_t n) { return (n + kChunk - 1) / kChunk; }

std::array<float, 256> value_table(bool e4m3) {
  std::array<float, 256> table{};
  for (unsigned code = 0; code < 256; ++code)
    table[code] = e4m3 ? num::e4m3_bits_to_f32(uint8_t(code)) : num::e5m2_bits_to_f32(uint8_t(code));
  return table;
}

}  // namespace

Fp8LoopIsa set_fp8_loop_isa(Fp8LoopIsa isa) {
  use_avx512.store(isa == Fp8LoopIsa::avx512 && cpu_has_avx512());
  return fp8_loop_isa();
}

Fp8LoopIsa fp8_loop_isa() { return use_avx512.load() ? Fp8LoopIsa::avx512 : Fp8LoopIsa::baseline; }

uint32_t amax_bits_serial(const float* x, std::size_t n) {
  const AmaxChunk kernel = amax_kernel();
  uint32_t amax = 0;
  for (std::size_t begin = 0; begin < n; begin += kChunk)
    amax = std::max(amax, kernel(x + begin, std::min(kChunk, n - begin)));
  return amax;
}

Fp8TensorCounts quantize_fp8_serial(const float* x, std::size_t n, float scale, bool e4m3, uint8_t* out) {
  const QuantizeChunk kernel = quantize_kernel(e4m3);
  Fp8TensorCounts counts;
  for (std::size_t begin = 0; begin < n; begin += kChunk) {
    const Fp8TensorCounts c = kernel(x + begin, std::min(kChunk, n - begin), scale, out + begin);
    counts.saturated += c.saturated;
    counts.underflowed += c.underflowed;
  }
  return counts;
}

uint32_t amax_bits(std::span<const float> x) {
  const AmaxChunk kernel = amax_kernel();
  const float* data = x.data();
  const std::size_t n = x.size(), chunks = chunks_of(n);
  uint32_t amax = 0;
#pragma omp parallel for schedule(static) reduction(max : amax) if (n >= kFp8ParallelElements)
  for (std::size_t c = 0; c < chunks; ++c)
    amax = std::max(amax, kernel(data + c * kChunk, std::min(kChunk, n - c * kChunk)));
  return amax;
}

Fp8TensorCounts quantize_fp8_tensor(std::span<const float> x, float scale, bool e4m3, std::span<uint8_t> out) {
  if (out.size() < x.size()) throw std::invalid_argument("quantize_fp8_tensor: output smaller than input");
  const QuantizeChunk kernel = quantize_kernel(e4m3);
  const float* data = x.data();
  uint8_t* codes = out.data();
  const std::size_t n = x.size(), chunks = chunks_of(n);
  uint64_t saturated = 0, underflowed = 0;
#pragma omp parallel for schedule(static) reduction(+ : saturated, underflowed) if (n >= kFp8ParallelElements)
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t begin = c * kChunk;
    const Fp8TensorCounts counts = kernel(data + begin, std::min(kChunk, n - begin), scale, codes + begin);
    saturated += counts.saturated;
    underflowed += counts.underflowed;
  }
  return {saturated, underflowed};
}

const float* fp8_value_table(bool e4m3) {
  static const std::array<float, 256> e4m3_values = value_table(true), e5m2_values = value_table(false);
  return e4m3 ? e4m3_values.data() : e5m2_values.data();
}

void dequantize_fp8_tensor(std::span<const uint8_t> q, float scale_inv, bool e4m3, std::span<float> out) {
  if (out.size() < q.size()) throw std::invalid_argument("dequantize_fp8_tensor: output smaller than input");
  const float* table = fp8_value_table(e4m3);
  const uint8_t* codes = q.data();
  float* values = out.data();
  const std::size_t n = q.size();
#pragma omp parallel for simd schedule(static) if (n >= kFp8ParallelElements)
  for (std::size_t i = 0; i < n; ++i) values[i] = table[codes[i]] * scale_inv;
}

DelayedScaler::DelayedScaler(DelayedScalingConfig config)
    : config_(config), fp8_max_(float(num::format_info(config.format).max_finite)) {
  if (config.format != num::Format::e4m3 && config.format != num::Format::e5m2) {
    throw std::invalid_argument("delayed scaling: the format must be fp8-e4m3 or fp8-e5m2");
  }
  if (config.history_length < 1 || config.margin < 0 || config.margin > 30) {
    throw std::invalid_argument("delayed scaling: history_length >= 1 and margin in [0, 30]");
  }
  ring_.assign(std::size_t(config.history_length), 0.0f);
}

QuantizeStats DelayedScaler::quantize(std::span<const float> x, std::span<uint8_t> out) {
  if (out.size() < x.size()) throw std::invalid_argument("quantize: output smaller than input");
  QuantizeStats stats;
  stats.elements = x.size();
  // A NaN amax is the canonical quiet NaN, as max_propagating_nan gives.
  const uint32_t amax = amax_bits(x);
  stats.amax = amax > 0x7F800000u ? std::nanf("") : num::bits_to_float(amax);
  const Fp8TensorCounts counts = quantize_fp8_tensor(x, scale_, config_.format == num::Format::e4m3, out);
  stats.saturated = counts.saturated;
  stats.underflowed = counts.underflowed;
  saturated_total_ += counts.saturated;
  record_amax(stats.amax);
  return stats;
}

void DelayedScaler::record_amax(float amax) {
  ring_[newest_] = max_propagating_nan(ring_[newest_], amax);
}

float DelayedScaler::window_amax() const {
  if (config_.algo == AmaxAlgo::most_recent) return ring_[newest_];
  float amax = 0.0f;
  for (std::size_t i = 0; i < filled_; ++i) amax = max_propagating_nan(amax, ring_[i]);
  return amax;
}

void DelayedScaler::update() {
  scale_ = fp8_scale_from_amax(window_amax(), fp8_max_, config_.margin, scale_);
  newest_ = (newest_ + 1) % ring_.size();
  ring_[newest_] = 0.0f;
  if (filled_ < ring_.size()) ++filled_;
}

std::vector<float> DelayedScaler::history() const {
  std::vector<float> newest_first;
  for (std::size_t i = 0; i < filled_; ++i) {
    newest_first.push_back(ring_[(newest_ + ring_.size() - i) % ring_.size()]);
  }
  return newest_first;
}

}  // namespace mpbench::amp
