#pragma once
// Per-element math of the stream and cast operations, shared by the reference loops, the CPU
// backend and the CUDA kernels so that all three compute the same bits.
#include <cmath>
#include <cstdint>

#include "amp/formats.hpp"
#include "amp/fp8_scaling.hpp"
#include "core/hostdevice.hpp"
#include "core/random.hpp"

namespace mpbench::elem {

// Storage types as seen by the per-element code: fp16/bf16 are raw bits.
struct f16_bits { std::uint16_t bits; };
struct bf16_bits { std::uint16_t bits; };

MPB_HD float load(float x) { return x; }
MPB_HD float load(f16_bits x) { return num::f16_bits_to_f32(x.bits); }
MPB_HD float load(bf16_bits x) { return num::bf16_bits_to_f32(x.bits); }

template <typename T>
MPB_HD T store(float x);
template <>
MPB_HD float store<float>(float x) { return x; }
template <>
MPB_HD f16_bits store<f16_bits>(float x) { return {num::f32_to_f16_bits(x)}; }
template <>
MPB_HD bf16_bits store<bf16_bits>(float x) { return {num::f32_to_bf16_bits(x)}; }

// Stream kernels (core/backend.hpp): math in fp32, one rounding to the storage type.
MPB_HD float scale(float a, float s) { return s * a; }
MPB_HD float add(float a, float b) { return a + b; }
MPB_HD float triad(float a, float b, float s) { return fmaf(s, b, a); }

// fp8 e4m3 with a per-tensor scale, saturating as Transformer Engine does.
MPB_HD std::uint8_t f32_to_e4m3_scaled(float x, float scale) {
  return num::f32_to_e4m3_bits(x * scale, true);
}

// bf16_to_e4m3_scaled's: the current-scaling scale of a tensor whose amax (NaNs left out) is `amax`,
// e4m3's largest value over it; 1 where the amax is 0 or inf (nothing to scale by), the largest
// float where the quotient overflows (Transformer Engine's rule, amp/fp8_scaling.hpp).
MPB_HD float e4m3_current_scale(float amax) { return amp::fp8_scale_from_amax(amax, 448.0f, 0, 1.0f); }

MPB_HD std::uint8_t bf16_to_e4m3_scaled(bf16_bits x, float scale) { return f32_to_e4m3_scaled(load(x), scale); }

// Stochastic rounding of element `index`, its random word drawn from stream `seed`.
MPB_HD std::uint16_t f32_to_bf16_stochastic_at(float x, std::uint64_t seed, std::uint64_t index) {
  return num::f32_to_bf16_bits_stochastic(x, random_word(seed, index));
}

}  // namespace mpbench::elem
