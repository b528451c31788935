// Compiled to PTX by the test core.UniformAtIsUnfusedOnTheDevice, never run: the fill's
// arithmetic must not become an fma.rn.f32, or the GPU fills other values than the host.
#include "core/random.hpp"

__global__ void fill_uniform(float* out, unsigned long long seed, float lo, float hi, unsigned long long n) {
  const unsigned long long i = blockIdx.x * 256ull + threadIdx.x;
  if (i < n) out[i] = mpbench::uniform_at(seed, i, lo, hi);
}
