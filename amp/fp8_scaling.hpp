#pragma once
// fp8 delayed scaling in the style of Transformer Engine: each tensor keeps a history of its amax
// (largest |x|) over recent steps; the scale used in a step comes from that history, so it is
// known before the tensor is produced. scale = (fp8 max / amax) / 2^margin; values that still
// exceed the format's range saturate, and are counted.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "amp/format_info.hpp"
#include "amp/formats.hpp"
#include "core/hostdevice.hpp"

namespace mpbench::amp {

// Folds |x| into a running amax held as fp32 bits. For non-negative floats the bit order is the
// value order, and every NaN is above +inf, so a NaN anywhere makes the result a NaN (sticky).
MPB_HD uint32_t fold_amax_bits(uint32_t amax_bits, float x) {
  const uint32_t abs_bits = num::float_to_bits(x) & 0x7FFFFFFFu;
  return abs_bits > amax_bits ? abs_bits : amax_bits;
}

// One element: x * scale to fp8, saturating. `saturated` is raised when the non-saturating
// conversion would have overflowed, i.e. the clamp changed the value. e4m3 when `e4m3`, else e5m2.
MPB_HD uint8_t quantize_fp8(float x, float scale, bool e4m3, uint32_t& saturated) {
  const float scaled = x * scale;
  const uint8_t exact = e4m3 ? num::f32_to_e4m3_bits(scaled, false) : num::f32_to_e5m2_bits(scaled, false);
  const bool overflowed = e4m3 ? (exact & 0x7Fu) == 0x7Fu : (exact & 0x7Fu) >= 0x7Cu;
  const uint32_t scaled_bits = num::float_to_bits(scaled);
  const bool input_nan = (scaled_bits & 0x7FFFFFFFu) > 0x7F800000u;
  if (overflowed && !input_nan) {
    saturated += 1;
    return uint8_t((exact & 0x80u) | (e4m3 ? 0x7Eu : 0x7Bu));
  }
  return exact;
}

// a where `condition`, else b, by masks: the ternary operator may become a branch, which stops a
// loop from vectorizing.
MPB_HD uint32_t select_bits(bool condition, uint32_t a, uint32_t b) {
  return b ^ ((a ^ b) & (0u - uint32_t(condition)));
}

// quantize_fp8 plus the underflow count, written without branches so that a loop over a tensor
// vectorizes (every path is computed and one is selected): the same code, saturation and underflow
// as quantize_fp8 and `(code & 0x7F) == 0 && x != 0` for every input (tests/amp compare them).
// Normal results round the re-biased fp32 pattern (add half - 1 plus the kept lsb, then shift:
// round to nearest even); results below the format's smallest normal are |x * scale| counted in
// subnormal quanta, rounded by the fp32 addition of 2^23 (exact: the count is below 2^23, and the
// rounding mode is the default nearest-even).
template <bool E4m3>
MPB_HD uint8_t quantize_fp8_branchless(float x, float scale, uint32_t& saturated, uint32_t& underflowed) {
  constexpr int kMantissaBits = E4m3 ? 3 : 2;
  constexpr int kBias = E4m3 ? 7 : 15;
  constexpr int kDrop = 23 - kMantissaBits;
  constexpr uint32_t kMaxCode = E4m3 ? 0x7Eu : 0x7Bu;
  constexpr uint32_t kRebias = uint32_t(127 - kBias) << 23;
  constexpr uint32_t kMinNormalBits = uint32_t(128 - kBias) << 23;
  constexpr float kQuantaPerUnit = float(1u << (kBias + kMantissaBits - 1));  // 1 / the subnormal quantum
  const uint32_t bits = num::float_to_bits(x * scale);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const uint32_t rebiased = abs_bits - kRebias;
  const uint32_t normal = (rebiased + ((1u << (kDrop - 1)) - 1) + ((rebiased >> kDrop) & 1u)) >> kDrop;
  const float quanta = num::bits_to_float(abs_bits) * kQuantaPerUnit;
  const uint32_t subnormal = num::float_to_bits(quanta + 8388608.0f) - 0x4B000000u;
  const uint32_t magnitude = select_bits(abs_bits >= kMinNormalBits, normal, subnormal);
  const bool nan = abs_bits > 0x7F800000u;
  // A quiet NaN keeps its sign and, in e5m2, the top payload bits (formats.hpp's quiet_nan_code).
  const uint32_t nan_code = E4m3 ? 0x7Fu : 0x7Eu | ((abs_bits >> 21) & 3u);
  const bool overflowed = !nan & (magnitude > kMaxCode);
  const uint32_t finite_code = select_bits(overflowed, kMaxCode, magnitude);
  const uint32_t code = ((bits >> 24) & 0x80u) | select_bits(nan, nan_code, finite_code);
  saturated += uint32_t(overflowed);
  underflowed += uint32_t((code & 0x7Fu) == 0) & uint32_t(x != 0.0f);
  return uint8_t(code);
}

MPB_HD float dequantize_fp8(uint8_t bits, float scale_inv, bool e4m3) {
  return (e4m3 ? num::e4m3_bits_to_f32(bits) : num::e5m2_bits_to_f32(bits)) * scale_inv;
}

// Transformer Engine's rule: a non-finite or non-positive amax keeps the previous scale; a scale
// that overflows fp32 (tiny amax) becomes the largest finite float.
MPB_HD float fp8_scale_from_amax(float amax, float fp8_max, int margin, float previous_scale) {
  const bool usable = amax > 0.0f && (num::float_to_bits(amax) & 0x7F800000u) != 0x7F800000u;
  if (!usable) return previous_scale;
  const float scaled_max = fp8_max / float(1u << margin);
  const float scale = scaled_max / amax;
  if ((num::float_to_bits(scale) & 0x7FFFFFFFu) == 0x7F800000u) return num::bits_to_float(0x7F7FFFFFu);
  return scale;
}

// ---- whole tensors (host): all OpenMP threads from kFp8ParallelElements on, vectorized ----------

// Below this many elements a loop stays on the calling thread (waking the team costs more).
constexpr std::size_t kFp8ParallelElements = 32768;

// max |x| over x as fp32 bits (fold_amax_bits's order: a NaN anywhere gives bits above inf).
uint32_t amax_bits(std::span<const float> x);

struct Fp8TensorCounts {
  uint64_t saturated = 0;
  uint64_t underflowed = 0;
};

// Host loops compiled for AVX-512 besides the baseline carry this attribute (GCC and Clang on x86)
// and run only where fp8_loop_isa() says avx512.
#if !defined(__CUDACC__) && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MPB_FP8_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#else
#define MPB_FP8_AVX512
#endif

// The instruction set of the loops below: AVX-512 (F, BW, DQ, VL) where the CPU has it, else the
// build's baseline. The setter (for tests and comparisons) falls back to baseline where the CPU
// lacks AVX-512 and returns the one in effect; set it only while no loop runs.
enum class Fp8LoopIsa { baseline, avx512 };
Fp8LoopIsa set_fp8_loop_isa(Fp8LoopIsa isa);
Fp8LoopIsa fp8_loop_isa();

// The loops under the two below, on the calling thread (for MX blocks and other callers' threads):
// AVX-512 where the CPU has it, else the baseline ISA, the same results.
uint32_t amax_bits_serial(const float* x, std::size_t n);
Fp8TensorCounts quantize_fp8_serial(const float* x, std::size_t n, float scale, bool e4m3, uint8_t* out);

// out[i] = quantize_fp8_branchless(x[i], scale) in the format (e4m3 or e5m2), with the counts.
Fp8TensorCounts quantize_fp8_tensor(std::span<const float> x, float scale, bool e4m3, std::span<uint8_t> out);
// out[i] = dequantize_fp8(q[i], scale_inv, e4m3), by a 256-entry table of the format's values.
void dequantize_fp8_tensor(std::span<const uint8_t> q, float scale_inv, bool e4m3, std::span<float> out);
// The format's 256 code values (num::e4m3_bits_to_f32 or e5m2_bits_to_f32 of every code).
const float* fp8_value_table(bool e4m3);

enum class AmaxAlgo { max, most_recent };

struct DelayedScalingConfig {
  num::Format format = num::Format::e4m3;  // e4m3 for activations and weights, e5m2 for gradients
  int history_length = 1024;               // Transformer Engine's current default
  int margin = 0;
  AmaxAlgo algo = AmaxAlgo::max;
};

struct QuantizeStats {
  float amax = 0;
  uint64_t saturated = 0;
  uint64_t underflowed = 0;  // nonzero finite inputs stored as +-0
  uint64_t elements = 0;
};

// The delayed-scaling state of one tensor.
class DelayedScaler {
 public:
  explicit DelayedScaler(DelayedScalingConfig config);

  float scale() const { return scale_; }
  float scale_inv() const { return 1.0f / scale_; }

  // Quantizes with the current scale and folds the tensor's amax into this step's history slot.
  QuantizeStats quantize(std::span<const float> x, std::span<uint8_t> out);
  // Folds an amax measured elsewhere (a GPU kernel) into this step's slot. NaN sticks.
  void record_amax(float amax);

  // Ends the step: the next scale from the amax of the last history_length steps (this one
  // included) or of this step alone, then a fresh slot for the next step.
  void update();

  // Newest first; entry 0 is the step in progress.
  std::vector<float> history() const;
  uint64_t saturated_total() const { return saturated_total_; }
  const DelayedScalingConfig& config() const { return config_; }

 private:
  float window_amax() const;

  DelayedScalingConfig config_;
  float fp8_max_;
  float scale_ = 1.0f;
  std::vector<float> ring_;  // ring buffer of per-step amax
  std::size_t newest_ = 0;   // ring index of the step in progress
  std::size_t filled_ = 1;   // steps recorded, at most history_length
  uint64_t saturated_total_ = 0;
};

}  // namespace mpbench::amp
