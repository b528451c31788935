#pragma once
// NVFP4, the 4-bit block-scaled format of Blackwell's block-scaled GEMMs (cuBLASLt's VEC16_UE4M3
// scales) and of Transformer Engine's NVFP4BlockScaling recipe: fp4 e2m1 elements in blocks of 16
// consecutive elements along a GEMM's K, one e4m3 scale per block and one fp32 scale per tensor.
// Per element and per block `__host__ __device__`; the whole-tensor functions are host code.
//
// The rules, as NVIDIA's libraries state them (cuDNN's FP4 row-quantization page; TensorRT-LLM's
// fp4Quantize: "globalScale = (448 * 6) / amax"), all arithmetic in fp32:
// - e2m1: a sign, 2 exponent bits (bias 1) and 1 mantissa bit: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, no
//   infinity and no NaN. fp32 -> e2m1 rounds to nearest, ties to the even code, saturating at +-6.
// - The tensor scale s = 448 * 6 / amax(tensor): it maps the tensor's amax to the largest e2m1
//   value times the largest e4m3 block scale. Choices where the sources are silent: amax 0, inf or
//   NaN gives s = 1; a quotient that overflows fp32 (a tiny amax) gives FLT_MAX.
// - A block's scale is the e4m3 code (sign 0, RNE, saturating at 448) of s * (amax_b * fp32(1/6)),
//   amax_b = max |x| over the block; its value is v.
// - The elements: e2m1(x * encode) with encode = 1 / (v * (1 / s)), or 0 when v is 0 (the block's
//   scale underflowed: every element is stored as zero).
// - Decoding (what the GEMM reads): e2m1 value * v / s.
// - A block holding a NaN or an infinity gets the e4m3 NaN code 0x7F as its scale and zero codes,
//   and decodes to NaN (our choice, as for MX blocks: e2m1 has no NaN).
// Counts: `saturated` = elements whose x * encode rounded beyond 6 (|x * encode| >= 7, the midpoint
// to the next binade's 8) and were clamped to 6: the block scale's e4m3 rounding went down by more
// than 6/7; `underflowed` = nonzero finite inputs whose code is +-0.
#include <cstddef>
#include <cstdint>
#include <span>

#include "amp/block_scaling.hpp"
#include "amp/formats.hpp"
#include "amp/fp8_scaling.hpp"
#include "core/hostdevice.hpp"

namespace mpbench::amp {

constexpr int kNvfp4BlockSize = 16;
constexpr float kE2m1Max = 6.0f;
constexpr float kNvfp4ScaleMax = 448.0f;  // e4m3's largest finite value, the block scales' ceiling
constexpr uint8_t kNvfp4NanScale = 0x7F;  // the e4m3 NaN code

// The value of an e2m1 code (bits 0..3; bit 3 the sign).
MPB_HD float e2m1_to_f32(uint8_t code) {
  constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float magnitude = kMagnitudes[code & 0x7u];
  return (code & 0x8u) != 0 ? -magnitude : magnitude;
}

// fp32 -> e2m1, RNE, saturating at +-6 (`saturated` raised when the rounding went beyond 6). The
// magnitude rounds as a narrow float with 2 exponent bits, bias 1 and 1 mantissa bit, whose
// subnormal quantum is 0.5; codes above 7 are overflow. NaN gives +-0 (callers keep NaN out).
MPB_HD uint8_t f32_to_e2m1(float x, uint32_t& saturated) {
  constexpr num::detail::NarrowFormat kE2m1{2, 1, 1, false};
  const uint32_t bits = num::float_to_bits(x);
  const uint8_t sign = (bits & 0x80000000u) != 0 ? 0x8u : 0x0u;
  if (num::detail::is_nan_bits(bits)) return sign;
  const uint32_t magnitude = num::detail::round_magnitude(bits & 0x7FFFFFFFu, kE2m1);
  if (magnitude > 7u) {
    saturated += 1;
    return uint8_t(sign | 0x7u);
  }
  return uint8_t(sign | magnitude);
}

// The tensor scale s from the tensor's amax (above).
MPB_HD float nvfp4_tensor_scale(float amax) {
  return fp8_scale_from_amax(amax, kE2m1Max * kNvfp4ScaleMax, 0, 1.0f);
}

// A block's e4m3 scale code from its amax and the tensor scale (NaN code for a NaN or inf amax).
MPB_HD uint8_t nvfp4_block_scale_code(float block_amax, float tensor_scale) {
  const uint32_t bits = num::float_to_bits(block_amax) & 0x7FFFFFFFu;
  if (bits >= 0x7F800000u) return kNvfp4NanScale;
  constexpr float kSixth = 1.0f / 6.0f;
  return num::f32_to_e4m3_bits(tensor_scale * (block_amax * kSixth), true);
}

// What the block's elements are multiplied by before their e2m1 rounding: 1 / (v * (1 / s)), or 0
// for a zero block scale.
MPB_HD float nvfp4_encode_factor(uint8_t scale_code, float tensor_scale) {
  const float v = num::e4m3_bits_to_f32(scale_code);
  if (v == 0.0f) return 0.0f;
  return 1.0f / (v * (1.0f / tensor_scale));
}

// One block of n (1..16) consecutive elements into e2m1 codes (one per byte); returns its scale code.
MPB_HD uint8_t nvfp4_quantize_block(const float* x, int n, float tensor_scale, uint8_t* out, uint32_t& saturated,
                                    uint32_t& underflowed) {
  uint32_t amax_bits = 0;
  for (int i = 0; i < n; ++i) amax_bits = fold_amax_bits(amax_bits, x[i]);
  const uint8_t scale_code = nvfp4_block_scale_code(num::bits_to_float(amax_bits), tensor_scale);
  if (scale_code == kNvfp4NanScale) {
    for (int i = 0; i < n; ++i) out[i] = 0;
    return scale_code;
  }
  const float encode = nvfp4_encode_factor(scale_code, tensor_scale);
  for (int i = 0; i < n; ++i) {
    out[i] = f32_to_e2m1(x[i] * encode, saturated);
    if ((out[i] & 0x7u) == 0 && x[i] != 0.0f) underflowed += 1;
  }
  return scale_code;
}

// e2m1 value * v / s; NaN for a NaN block scale.
MPB_HD float nvfp4_dequantize_element(uint8_t code, uint8_t scale_code, float tensor_scale) {
  if (scale_code == kNvfp4NanScale) return num::bits_to_float(0x7FC00000u);
  return e2m1_to_f32(code) * num::e4m3_bits_to_f32(scale_code) / tensor_scale;
}

// ---- whole tensors (host) -------------------------------------------------------------------

// Scale codes a row of `cols` elements needs: ceil(cols / 16).
constexpr std::size_t nvfp4_blocks_per_row(std::size_t cols) {
  return (cols + kNvfp4BlockSize - 1) / kNvfp4BlockSize;
}

struct Nvfp4Stats {
  float amax = 0;          // of the tensor (NaN if any element is)
  float tensor_scale = 1;  // s
  BlockQuantizeStats blocks;
};

// A row-major rows x cols matrix blocked along its rows (K), a tail block per row when cols % 16
// != 0: codes one per element (unpacked; the GPU layouts pack two per byte), scales
// nvfp4_blocks_per_row(cols) per row, row after row. The tensor scale comes from the whole matrix.
Nvfp4Stats nvfp4_quantize_rows(std::span<const float> x, std::size_t rows, std::size_t cols, std::span<uint8_t> codes,
                               std::span<uint8_t> scales);
void nvfp4_dequantize_rows(std::span<const uint8_t> codes, std::span<const uint8_t> scales, std::size_t rows,
                           std::size_t cols, float tensor_scale, std::span<float> out);

}  // namespace mpbench::amp
