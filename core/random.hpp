#pragma once
// Counter-based random numbers: value i of stream `seed` is a pure function of (seed, i), so the
// CPU, the CUDA kernels and the reference produce the same inputs and stochastic-rounding words.
#include <cstdint>

#include "core/hostdevice.hpp"

namespace mpbench {

// splitmix64 finalizer over the combined counter.
MPB_HD std::uint64_t mix64(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

MPB_HD std::uint32_t random_word(std::uint64_t seed, std::uint64_t index) {
  return static_cast<std::uint32_t>(mix64(seed, index) >> 32);
}

// Uniform in [lo, hi): 24 random bits give an exact float in [0, 1). On the device the product and
// the sum are rounded apart, as on the host: nvcc would fuse them into one FMA, and the GPU would
// fill other values than the CPU and the reference.
MPB_HD float uniform_at(std::uint64_t seed, std::uint64_t index, float lo, float hi) {
  const float unit = static_cast<float>(mix64(seed, index) >> 40) * (1.0f / 16777216.0f);
#if defined(__CUDA_ARCH__)
  return __fadd_rn(lo, __fmul_rn(hi - lo, unit));
#else
  return lo + (hi - lo) * unit;
#endif
}

}  // namespace mpbench
