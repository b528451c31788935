#pragma once
// Block-scaled fp8 (OCP Microscaling, "MX", v1.0: MXFP8 with e4m3 or e5m2 elements) and per-tensor
// current scaling (Transformer Engine's Float8CurrentScaling, torchao's "tensorwise"): the numbers
// of the mxfp8 and fp8-current training modes. Per element and per block `__host__ __device__`;
// the whole-tensor functions (host) are threaded and vectorized and give the same bits.
//
// MX rules implemented (the spec's conversion of an FP32 vector to MX, section 6.3 as we recall it;
// the spec text was not at hand in this session, so the section numbers are from memory):
// - A block is 32 consecutive elements sharing one scale X; a tensor whose length is not a
//   multiple of 32 ends with a shorter tail block, which follows the same rules.
// - X is an e8m0 code: an 8-bit biased exponent, value 2^(code - 127), code 0xFF is NaN; there is
//   no zero, no sign and no infinity.
// - X = 2^(floor(log2(amax)) - emax_elem), amax = max |x| over the block, emax_elem the exponent of
//   the element format's largest normal (e4m3: 8, since 448 = 1.75 * 2^8; e5m2: 15, 57344 =
//   1.75 * 2^15). The largest element then lands in [2^emax, 2^(emax+1)), so it may exceed the
//   element's max finite: elements are x / X converted with round to nearest, ties to even, and
//   saturation to the max finite (the spec clamps normal numbers to the max normal).
// - The scale rounding (MxScaleRounding): `down` is the spec's floor rule above; `up` is Transformer
//   Engine's MXFP8 rule, X = 2^ceil(log2(amax / max_elem)) (its float_to_e8m0 of amax / 448 rounds a
//   quotient with nonzero mantissa bits up), the smallest power of two that puts amax at or below
//   the element's max finite: no element saturates, and the block's largest element sits in
//   (max/2, max] instead of [2^emax, 2^(emax+1)). The two agree when amax's significand is at most
//   the max finite's (1.75 for e4m3 and e5m2); above it `up` is twice `down`.
// - Choices where the spec leaves room (documented in docs/amp.md):
//   * amax = 0 (a block of zeros): scale code 0 (2^-127), the smallest scale; elements are +-0.
//   * A shared exponent below -127 (amax < 2^-119 for e4m3) is clamped to -127, as the reference
//     implementation (microsoft/microxcaling, from memory) does; the block's elements may then
//     underflow.
//   * A NaN or an infinity in the block: scale code 0xFF (NaN). floor(log2(inf)) is above e8m0's
//     range; the reference implementation maps a shared exponent above 127 to NaN, and a NaN scale
//     makes every element of the block decode to NaN (the spec's rule for a NaN scale). Elements
//     are stored as 0x7F (a NaN in both element formats).
// - Finite fp32 inputs never need a scale above 2^119 rounding down, so X * element never
//   overflows fp32, and x * 2^-e and element * 2^e are exact in fp32 (IEEE, no flush to zero)
//   except where the scaled value is below fp32's normal range, far below the fp8 subnormals (it
//   rounds to zero either way). Rounding up, a block whose amax is above 1.75 * 2^127 gets
//   X = 2^120, and its elements of 256 or more (x rounded up to 2^128 or beyond) dequantize to
//   +-inf in fp32: the MX value exists, fp32 has no number for it.
//
// Counts, per tensor (issue 31 item 2): `saturated` = elements the clamp changed (the conversion
// without saturation would have overflowed; a value between max finite and the rounding boundary
// rounds to max finite and is not counted); `underflowed` = nonzero finite inputs whose element is
// +-0 (flushed to zero by the scale and the element's range).
#include <cstddef>
#include <cstdint>
#include <span>

#include "amp/format_info.hpp"
#include "amp/formats.hpp"
#include "amp/fp8_scaling.hpp"
#include "core/hostdevice.hpp"

#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

namespace mpbench::amp {

// ---- e8m0 scale codes -----------------------------------------------------------------------

constexpr int kE8m0Bias = 127;
constexpr uint8_t kE8m0Nan = 0xFF;
constexpr int kMxBlockSize = 32;
// The element code stored in a block whose scale is NaN (NaN in e4m3 and in e5m2).
constexpr uint8_t kMxNanElement = 0x7F;

// 2^e as an exact fp32 value, subnormal below 2^-126; 0 below 2^-149, inf above 2^127.
MPB_HD float pow2_f32(int e) {
  if (e > 127) return num::bits_to_float(0x7F800000u);
  if (e >= -126) return num::bits_to_float(uint32_t(e + 127) << 23);
  if (e >= -149) return num::bits_to_float(1u << (e + 149));
  return 0.0f;
}

// floor(log2(x)) for x positive and finite, fp32 subnormals included (exact, from the bits).
MPB_HD int floor_log2_f32(float x) {
  const uint32_t bits = num::float_to_bits(x) & 0x7FFFFFFFu;
  const uint32_t exponent_field = bits >> 23;
  if (exponent_field != 0) return int(exponent_field) - 127;
  // Subnormal: fraction * 2^-149, so the top set bit gives the binade.
#if defined(__CUDA_ARCH__)
  const int top_bit = 31 - __clz(bits);
#else
  const int top_bit = 31 - std::countl_zero(bits);
#endif
  return top_bit - 149;
}

// The value of an e8m0 code: 2^(code - 127); NaN for 0xFF. Code 0 is 2^-127, an fp32 subnormal.
MPB_HD float e8m0_to_f32(uint8_t code) {
  if (code == kE8m0Nan) return num::bits_to_float(0x7FC00000u);
  return pow2_f32(int(code) - kE8m0Bias);
}

// An e8m0 code from an unbiased exponent: clamped to 2^-127 below; above 2^127 (not
// representable) gives NaN, as the MX reference implementation does for its shared exponent.
MPB_HD uint8_t e8m0_from_exponent(int e) {
  if (e > 127) return kE8m0Nan;
  if (e < -127) e = -127;
  return uint8_t(e + kE8m0Bias);
}

// fp32 -> e8m0, rounding down to a power of two (exact for powers of two 2^-127..2^127; smaller
// positive values clamp to code 0). NaN, infinities, zero and negative values have no e8m0
// encoding and give NaN (0xFF).
MPB_HD uint8_t f32_to_e8m0(float x) {
  const uint32_t bits = num::float_to_bits(x);
  if ((bits & 0x80000000u) != 0 || bits == 0 || bits >= 0x7F800000u) return kE8m0Nan;
  return e8m0_from_exponent(floor_log2_f32(x));
}

// ---- MX (block-scaled) fp8 ------------------------------------------------------------------

// Exponent of the element format's largest normal number (OCP MX: emax_elem).
MPB_HD constexpr int mx_emax_elem(bool e4m3) { return e4m3 ? 8 : 15; }

// How a block's power-of-two scale is chosen from its amax (above): the OCP spec's floor rule, or
// Transformer Engine's round-up.
enum class MxScaleRounding { down, up };
const char* mx_scale_rounding_name(MxScaleRounding rounding);  // "down", "up"

// The 23 fraction bits of x's significand in [1, 2), x positive and finite (subnormals normalized).
MPB_HD uint32_t significand_fraction_f32(float x) {
  const uint32_t bits = num::float_to_bits(x) & 0x7FFFFFFFu;
  if ((bits >> 23) != 0) return bits & 0x7FFFFFu;
  const int top_bit = floor_log2_f32(x) + 149;  // the subnormal's leading one, bit 0..22
  return (bits << (23 - top_bit)) & 0x7FFFFFu;
}

// The fraction bits of e4m3's and e5m2's largest finite significand, 1.75.
constexpr uint32_t kFp8MaxFraction = 0x600000u;

// The block's scale code from its amax (NaN if any element was NaN, inf if one was infinite).
// up: one binade above down when amax's significand exceeds the element max's (1.75), so that
// amax / X <= max finite.
MPB_HD uint8_t mx_scale_code(float amax, bool e4m3, MxScaleRounding rounding = MxScaleRounding::down) {
  const uint32_t bits = num::float_to_bits(amax) & 0x7FFFFFFFu;
  if (bits >= 0x7F800000u) return kE8m0Nan;  // NaN or inf in the block
  if (bits == 0) return 0;                   // all zeros: the smallest scale, 2^-127
  const float magnitude = num::bits_to_float(bits);
  int exponent = floor_log2_f32(magnitude) - mx_emax_elem(e4m3);
  if (rounding == MxScaleRounding::up && significand_fraction_f32(magnitude) > kFp8MaxFraction) exponent += 1;
  return e8m0_from_exponent(exponent);
}

// One element of a block: x / X to the element format, RNE, saturating. The division is a
// multiplication by 2^-e, exact in fp32 wherever the result can be nonzero in fp8.
MPB_HD uint8_t mx_quantize_element(float x, uint8_t scale_code, bool e4m3, uint32_t& saturated,
                                   uint32_t& underflowed) {
  if (scale_code == kE8m0Nan) return kMxNanElement;
  const uint8_t q = quantize_fp8(x, pow2_f32(kE8m0Bias - int(scale_code)), e4m3, saturated);
  // x != 0 is also true for NaN, but a NaN never reaches a non-NaN block's zero code.
  if ((q & 0x7Fu) == 0 && x != 0.0f) underflowed += 1;
  return q;
}

// element * X; NaN for a NaN scale. Exact in fp32 (IEEE subnormals) for every code pair.
MPB_HD float mx_dequantize_element(uint8_t q, uint8_t scale_code, bool e4m3) {
  if (scale_code == kE8m0Nan) return num::bits_to_float(0x7FC00000u);
  const float element = e4m3 ? num::e4m3_bits_to_f32(q) : num::e5m2_bits_to_f32(q);
  return element * e8m0_to_f32(scale_code);
}

// One block of n (1..32) consecutive elements; returns its scale code. A NaN-scale block does
// not count saturations or underflows.
MPB_HD uint8_t mx_quantize_block(const float* x, int n, bool e4m3, uint8_t* out, uint32_t& saturated,
                                 uint32_t& underflowed, MxScaleRounding rounding = MxScaleRounding::down) {
  uint32_t amax_bits = 0;
  for (int i = 0; i < n; ++i) amax_bits = fold_amax_bits(amax_bits, x[i]);
  const uint8_t code = mx_scale_code(num::bits_to_float(amax_bits), e4m3, rounding);
  for (int i = 0; i < n; ++i) out[i] = mx_quantize_element(x[i], code, e4m3, saturated, underflowed);
  return code;
}

MPB_HD void mx_dequantize_block(const uint8_t* q, int n, uint8_t scale_code, bool e4m3, float* out) {
  for (int i = 0; i < n; ++i) out[i] = mx_dequantize_element(q[i], scale_code, e4m3);
}

// ---- whole tensors (host) -------------------------------------------------------------------

struct BlockQuantizeStats {
  uint64_t elements = 0;
  uint64_t blocks = 0;
  uint64_t saturated = 0;
  uint64_t underflowed = 0;
  uint64_t nan_blocks = 0;  // blocks with a NaN or an infinity: scale code 0xFF
};

// Scale codes a row of `cols` elements needs: ceil(cols / 32).
constexpr std::size_t mx_blocks_per_row(std::size_t cols) { return (cols + kMxBlockSize - 1) / kMxBlockSize; }

// A flat tensor: blocks of 32 consecutive elements, the last one shorter when n % 32 != 0.
// `element` is Format::e4m3 or Format::e5m2; out holds n codes, scales mx_blocks_per_row(n).
BlockQuantizeStats mx_quantize(std::span<const float> x, num::Format element, std::span<uint8_t> out,
                               std::span<uint8_t> scales, MxScaleRounding rounding = MxScaleRounding::down);
void mx_dequantize(std::span<const uint8_t> q, std::span<const uint8_t> scales, num::Format element,
                   std::span<float> out);

// A row-major rows x cols matrix blocked along its rows (the K dimension of a GEMM operand, as
// cuBLASLt's VEC32_UE8M0 scales are): each row has mx_blocks_per_row(cols) scales, row after row,
// with a tail block per row when cols % 32 != 0.
BlockQuantizeStats mx_quantize_rows(std::span<const float> x, std::size_t rows, std::size_t cols,
                                    num::Format element, std::span<uint8_t> out, std::span<uint8_t> scales,
                                    MxScaleRounding rounding = MxScaleRounding::down);
void mx_dequantize_rows(std::span<const uint8_t> q, std::span<const uint8_t> scales, std::size_t rows,
                        std::size_t cols, num::Format element, std::span<float> out);

// A row-major rows x cols matrix blocked down its columns (an operand whose K is its row index):
// block s of column c is rows [32s, 32s + 32) of column c, the last block shorter when
// rows % 32 != 0, its scale scales[s * cols + c]. The codes and counts of mx_quantize_rows on x^T,
// in x's layout, without transposing (Transformer Engine's columnwise MXFP8 copy).
BlockQuantizeStats mx_quantize_columns(std::span<const float> x, std::size_t rows, std::size_t cols,
                                       num::Format element, std::span<uint8_t> out, std::span<uint8_t> scales,
                                       MxScaleRounding rounding = MxScaleRounding::down);
void mx_dequantize_columns(std::span<const uint8_t> q, std::span<const uint8_t> scales, std::size_t rows,
                           std::size_t cols, num::Format element, std::span<float> out);

struct CurrentScalingResult {
  float amax = 0;       // max |x|, NaN if any element is NaN
  float scale = 1;      // x * scale is what is stored
  float scale_inv = 1;  // 1 / scale, what dequantization multiplies by
  uint64_t elements = 0;
  uint64_t saturated = 0;
  uint64_t underflowed = 0;
};

// Per-tensor current scaling: scale = fp8_scale_from_amax(amax of this tensor, fp8 max, margin,
// previous 1), i.e. (fp8 max / 2^margin) / amax, 1 when amax is 0, inf or NaN (Transformer
// Engine's current-scaling rule), FLT_MAX when the quotient overflows; then quantize_fp8 per
// element.
CurrentScalingResult quantize_current_scaling(std::span<const float> x, num::Format format, std::span<uint8_t> out,
                                              int margin = 0);
void dequantize_per_tensor(std::span<const uint8_t> q, float scale_inv, num::Format format, std::span<float> out);

}  // namespace mpbench::amp
