#pragma once
// Conversions between fp32 and the narrow formats mixed precision uses: fp16, bf16, fp8 (OCP e4m3fn
// and e5m2) and tf32. One software implementation, written on the fp32 bit pattern, serves the CPU
// path, the tests and the CUDA kernels; on the device fp16/bf16 use the conversion instructions,
// whose results are identical (NaNs are handled before them so their payloads match too).
//
// Rules shared by every conversion: round to nearest, ties to even; subnormals of the target are
// produced, not flushed; a NaN stays a quiet NaN keeping its sign and the top payload bits.
#include <cstdint>
#include <cstring>

#include "core/hostdevice.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace mpbench::num {

MPB_HD uint32_t float_to_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

MPB_HD float bits_to_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

namespace detail {

constexpr uint32_t kF32SignMask = 0x80000000u;
constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr int kF32MantissaBits = 23;
constexpr int kF32Bias = 127;

// A binary floating-point format narrower than fp32, described by its fields. `ieee_specials`:
// the all-ones exponent encodes inf (mantissa 0) and NaN (otherwise), as in IEEE 754. Without it
// (e4m3fn) the all-ones exponent holds normal numbers and only the all-ones code is NaN.
struct NarrowFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool ieee_specials;

  MPB_HD constexpr uint32_t exponent_all_ones() const { return (1u << exponent_bits) - 1; }
  MPB_HD constexpr uint32_t magnitude_mask() const { return (1u << (exponent_bits + mantissa_bits)) - 1; }
  MPB_HD constexpr uint32_t sign_bit() const { return 1u << (exponent_bits + mantissa_bits); }
  MPB_HD constexpr uint32_t inf_code() const { return exponent_all_ones() << mantissa_bits; }
  MPB_HD constexpr uint32_t max_finite_code() const {
    return ieee_specials ? inf_code() - 1 : magnitude_mask() - 1;
  }
};

constexpr NarrowFormat kFp16{5, 10, 15, true};
constexpr NarrowFormat kBf16{8, 7, 127, true};
constexpr NarrowFormat kE4m3{4, 3, 7, false};
constexpr NarrowFormat kE5m2{5, 2, 15, true};

// value / 2^shift rounded to nearest, ties to even; shift in [1, 31].
MPB_HD uint32_t shift_right_rne(uint32_t value, int shift) {
  const uint32_t half = 1u << (shift - 1);
  const uint32_t remainder = value & ((half << 1) - 1);
  uint32_t quotient = value >> shift;
  if (remainder > half || (remainder == half && (quotient & 1u))) ++quotient;
  return quotient;
}

// Magnitude code of |x| (given as fp32 bits without sign) in format F, rounded to nearest even.
// A result above F.max_finite_code() means overflow; inputs that are inf land there too. NaN is
// handled by the caller.
MPB_HD uint32_t round_magnitude(uint32_t abs_bits, NarrowFormat f) {
  const int drop = kF32MantissaBits - f.mantissa_bits;
  const uint32_t min_normal_bits = uint32_t(kF32Bias + 1 - f.bias) << kF32MantissaBits;
  if (abs_bits >= min_normal_bits) {
    // Re-bias the exponent in place; rounding the whole pattern lets a mantissa carry ripple into
    // the exponent, which is exactly the next binade (or overflow).
    const uint32_t rebias = uint32_t(kF32Bias - f.bias) << kF32MantissaBits;
    return shift_right_rne(abs_bits - rebias, drop);
  }
  // Below the target's smallest normal: count units of the target's subnormal quantum
  // 2^(1 - bias - mantissa_bits). The fp32 value is significand * 2^(exponent - 23).
  const uint32_t exponent_field = abs_bits >> kF32MantissaBits;
  const uint32_t fraction = abs_bits & ((1u << kF32MantissaBits) - 1);
  const uint32_t significand = exponent_field == 0 ? fraction : fraction | (1u << kF32MantissaBits);
  const int exponent = exponent_field == 0 ? 1 - kF32Bias : int(exponent_field) - kF32Bias;
  const int shift = (1 - f.bias - f.mantissa_bits) - (exponent - kF32MantissaBits);
  // significand < 2^24, so a shift of 25 or more leaves less than half a quantum: rounds to 0.
  if (shift >= 25) return 0;
  return shift_right_rne(significand, shift);
}

MPB_HD uint32_t quiet_nan_code(uint32_t f32_bits, NarrowFormat f) {
  const uint32_t sign = (f32_bits & kF32SignMask) ? f.sign_bit() : 0u;
  if (!f.ieee_specials) return sign | f.magnitude_mask();
  const uint32_t quiet_bit = 1u << (f.mantissa_bits - 1);
  const uint32_t payload = (f32_bits & ((1u << kF32MantissaBits) - 1)) >> (kF32MantissaBits - f.mantissa_bits);
  return sign | f.inf_code() | quiet_bit | payload;
}

MPB_HD bool is_nan_bits(uint32_t f32_bits) { return (f32_bits & kF32AbsMask) > kF32Inf; }

// fp32 -> F. On overflow (including inf inputs): saturate -> largest finite; otherwise inf where F
// has one, NaN where it does not.
MPB_HD uint32_t encode(float x, NarrowFormat f, bool saturate) {
  const uint32_t bits = float_to_bits(x);
  if (is_nan_bits(bits)) return quiet_nan_code(bits, f);
  const uint32_t sign = (bits & kF32SignMask) ? f.sign_bit() : 0u;
  const uint32_t magnitude = round_magnitude(bits & kF32AbsMask, f);
  if (magnitude <= f.max_finite_code()) return sign | magnitude;
  if (saturate) return sign | f.max_finite_code();
  return sign | (f.ieee_specials ? f.inf_code() : f.magnitude_mask());
}

MPB_HD float decode(uint32_t code, NarrowFormat f) {
  const uint32_t sign = (code & f.sign_bit()) ? kF32SignMask : 0u;
  const uint32_t exponent = (code >> f.mantissa_bits) & f.exponent_all_ones();
  const uint32_t mantissa = code & ((1u << f.mantissa_bits) - 1);
  const int widen = kF32MantissaBits - f.mantissa_bits;
  const bool special = f.ieee_specials ? exponent == f.exponent_all_ones()
                                       : (code & f.magnitude_mask()) == f.magnitude_mask();
  if (special) {
    if (f.ieee_specials && mantissa == 0) return bits_to_float(sign | kF32Inf);
    return bits_to_float(sign | kF32Inf | (1u << (kF32MantissaBits - 1)) | (mantissa << widen));
  }
  if (exponent == 0) {
    // Subnormal: mantissa * 2^(1 - bias - mantissa_bits). Both factors and the product are normal,
    // exact fp32 values for fp16 and fp8; bf16 (whose subnormals are fp32's) decodes by a shift.
    const float quantum = bits_to_float(uint32_t(1 - f.bias - f.mantissa_bits + kF32Bias) << kF32MantissaBits);
    const float magnitude = float(mantissa) * quantum;
    return bits_to_float(sign | float_to_bits(magnitude));
  }
  const uint32_t f32_exponent = exponent - uint32_t(f.bias) + uint32_t(kF32Bias);
  return bits_to_float(sign | (f32_exponent << kF32MantissaBits) | (mantissa << widen));
}

}  // namespace detail

MPB_HD uint16_t f32_to_f16_bits(float x) {
#if defined(__CUDA_ARCH__)
  if (detail::is_nan_bits(float_to_bits(x))) return uint16_t(detail::quiet_nan_code(float_to_bits(x), detail::kFp16));
  return __half_as_ushort(__float2half_rn(x));
#else
  return uint16_t(detail::encode(x, detail::kFp16, false));
#endif
}

MPB_HD float f16_bits_to_f32(uint16_t h) { return detail::decode(h, detail::kFp16); }

MPB_HD uint16_t f32_to_bf16_bits(float x) {
#if defined(__CUDA_ARCH__)
  if (detail::is_nan_bits(float_to_bits(x))) return uint16_t(detail::quiet_nan_code(float_to_bits(x), detail::kBf16));
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
#else
  // bf16 is the top half of fp32, so round to nearest even is one add on the bit pattern (a carry
  // into the exponent is the next binade, or inf), and a NaN keeps its sign and top payload bits
  // and turns quiet (quiet_nan_code for bf16). A select rather than a branch, so loops vectorize.
  const uint32_t bits = float_to_bits(x);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  return uint16_t(detail::is_nan_bits(bits) ? (bits >> 16) | 0x0040u : rounded);
#endif
}

MPB_HD float bf16_bits_to_f32(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }

// Stochastic rounding: rounds up with probability (dropped bits) / 2^16, so the expected result is
// x itself. That keeps small updates to bf16 weights alive on average where RNE would drop them.
MPB_HD uint16_t f32_to_bf16_bits_stochastic(float x, uint32_t random_word) {
  const uint32_t bits = float_to_bits(x);
  if (detail::is_nan_bits(bits)) return uint16_t(detail::quiet_nan_code(bits, detail::kBf16));
  if ((bits & detail::kF32AbsMask) == detail::kF32Inf) return uint16_t(bits >> 16);
  return uint16_t((bits + (random_word & 0xFFFFu)) >> 16);
}

MPB_HD uint8_t f32_to_e4m3_bits(float x, bool saturate) {
  return uint8_t(detail::encode(x, detail::kE4m3, saturate));
}

MPB_HD float e4m3_bits_to_f32(uint8_t b) { return detail::decode(b, detail::kE4m3); }

MPB_HD uint8_t f32_to_e5m2_bits(float x, bool saturate) {
  return uint8_t(detail::encode(x, detail::kE5m2, saturate));
}

MPB_HD float e5m2_bits_to_f32(uint8_t b) { return detail::decode(b, detail::kE5m2); }

// TF32 keeps fp32's exponent and 10 mantissa bits: the precision a TF32 Tensor Core reads its
// fp32 inputs with. Overflow past tf32's largest finite value gives inf, as RNE demands.
MPB_HD float round_to_tf32(float x) {
  constexpr int kDrop = detail::kF32MantissaBits - 10;
  const uint32_t bits = float_to_bits(x);
  if (detail::is_nan_bits(bits)) {
    const uint32_t kept = (bits >> kDrop) << kDrop;
    return bits_to_float(kept | (1u << (detail::kF32MantissaBits - 1)));
  }
  const uint32_t sign = bits & detail::kF32SignMask;
  const uint32_t magnitude = detail::shift_right_rne(bits & detail::kF32AbsMask, kDrop) << kDrop;
  return bits_to_float(sign | magnitude);
}

}  // namespace mpbench::num
