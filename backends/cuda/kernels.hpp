#pragma once
// Host-side entry points of the backend's own kernels (kernels.cu). Each one checks its launch;
// all work goes on the launcher's stream. Pointers come from cudaMalloc (256-byte aligned), which
// the 16-byte vector accesses rely on.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/dtype.hpp"

namespace mpbench::cuda::kernels {

constexpr int kBlockThreads = 256;

// The stream and grid sizes of one backend. A grid-stride kernel gets at most one full wave of
// blocks (resident blocks per SM, from the occupancy API, times the SMs), asked once per kernel so
// that no host work sits between a timer's start event and the launch.
class Launcher {
 public:
  Launcher(cudaStream_t stream, int multiprocessors) : stream_(stream), multiprocessors_(multiprocessors) {}
  cudaStream_t stream() const { return stream_; }
  // Blocks for `items` pieces of work of one thread each.
  unsigned grid(const void* kernel, std::size_t items);

 private:
  cudaStream_t stream_;
  int multiprocessors_;
  std::unordered_map<const void*, unsigned> wave_blocks_;
};

// Why this build's kernels cannot run on the current device (no image for its architecture), or
// nullopt when they can.
std::optional<std::string> kernel_image_problem();

// Element i = uniform_at(seed, i, lo, hi) rounded to `dtype` (every DType).
void fill_uniform(Launcher& launcher, DType dtype, void* out, std::size_t n, std::uint64_t seed, float lo,
                  float hi);

// Stream kernels on fp32, fp16 or bf16 arrays of n elements.
void stream_copy(Launcher& launcher, DType dtype, const void* a, void* c, std::size_t n);
void stream_scale(Launcher& launcher, DType dtype, const void* a, void* c, std::size_t n, float s);
void stream_add(Launcher& launcher, DType dtype, const void* a, const void* b, void* c, std::size_t n);
void stream_triad(Launcher& launcher, DType dtype, const void* a, const void* b, void* c, std::size_t n,
                  float s);
// *sum = sum a[i] * b[i] in fp32 (zeroed first, then one atomicAdd per block).
void stream_dot(Launcher& launcher, DType dtype, const void* a, const void* b, float* sum, std::size_t n);

// Round-to-nearest conversions between fp32 and fp16/bf16, either direction.
void convert(Launcher& launcher, DType from, DType to, const void* in, void* out, std::size_t n);
// *amax = max |x[i]| (zeroed first, then one atomicMax per block).
void amax(Launcher& launcher, const float* x, float* result, std::size_t n);
// out[i] = e4m3(x[i] * *scale), saturating; the scale stays on the device.
void f32_to_e4m3_scaled(Launcher& launcher, const float* x, const float* scale, std::uint8_t* out, std::size_t n);
// Current scaling of bf16 x in two launches on the stream, no host sync: *amax = max |x[i]| (zeroed
// first, NaNs left out), then *scale = elem::e4m3_current_scale(*amax) and out[i] = e4m3(x[i] * *scale),
// saturating. amax and scale are two buffers.
void bf16_to_e4m3_current(Launcher& launcher, const std::uint16_t* x, float* amax, float* scale, std::uint8_t* out,
                          std::size_t n);
// The fused cast-transpose-amax (core/backend.hpp's CastTransposeArgs) of a row-major bf16
// rows x cols matrix, one launch after zeroing *amax: codes = e4m3(x * *scale) row-major,
// transposed = the cols x rows transpose of the codes, *amax = max |x| (NaN if any x is NaN).
void bf16_to_e4m3_transpose_amax(Launcher& launcher, const std::uint16_t* x, std::size_t rows, std::size_t cols,
                                 const float* scale, std::uint8_t* codes, std::uint8_t* transposed, float* amax);
void f32_to_bf16_stochastic(Launcher& launcher, const float* x, std::uint64_t seed, std::uint16_t* out,
                            std::size_t n);

}  // namespace mpbench::cuda::kernels
