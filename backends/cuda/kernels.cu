// The backend's own kernels: thin __global__ wrappers around the per-thread bodies of
// kernel_bodies.hpp, plus the block reductions of dot and amax. All are memory-bound; byte counts
// below are per element, STREAM-style (reads + writes, no write-allocate traffic).
#include <algorithm>
#include <string>

#include "backends/cast_transpose.hpp"
#include "backends/cuda/check.hpp"
#include "backends/cuda/kernel_bodies.hpp"
#include "backends/cuda/kernels.hpp"
#include "core/error.hpp"

namespace mpbench::cuda::kernels {

namespace {

__device__ std::size_t global_thread() { return blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; }
__device__ std::size_t grid_threads() { return std::size_t(gridDim.x) * blockDim.x; }

// Writes make(i) to every element: sizeof(Out) bytes per element.
template <int N, typename Out, typename Make>
__global__ void __launch_bounds__(kBlockThreads) generate_kernel(std::size_t n, Out* out, Make make) {
  body::generate_elements<N>(global_thread(), grid_threads(), n, out, make);
}

// out[i] = f(in[i], i): sizeof(In) + sizeof(Out) bytes per element.
template <int N, typename In, typename Out, typename F>
__global__ void __launch_bounds__(kBlockThreads) map_kernel(std::size_t n, const In* in, Out* out, F f) {
  body::map_elements<N>(global_thread(), grid_threads(), n, in, out, f);
}

// out[i] = f(a[i], b[i]): 3 * sizeof(T) bytes per element.
template <int N, typename T, typename F>
__global__ void __launch_bounds__(kBlockThreads) zip_kernel(std::size_t n, const T* a, const T* b, T* out, F f) {
  body::zip_elements<N>(global_thread(), grid_threads(), n, a, b, out, f);
}

struct SumOp {
  __device__ float operator()(float x, float y) const { return x + y; }
};
struct MaxOp {
  __device__ float operator()(float x, float y) const { return fmaxf(x, y); }
};

// Reduces one value per thread over the block (warp shuffles, then the first warp over the warps'
// results); the result is valid in thread 0. 0 is the identity of both uses (sums, max of |x|).
template <typename Op>
__device__ float block_reduce(float value, Op op) {
  constexpr int kWarps = kBlockThreads / 32;
  __shared__ float warp_results[kWarps];
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) warp_results[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < kWarps ? warp_results[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

// *sum += sum a[i] * b[i]: 2 * sizeof(T) bytes per element, one atomic per block.
template <int N, typename T>
__global__ void __launch_bounds__(kBlockThreads) dot_kernel(std::size_t n, const T* a, const T* b, float* sum) {
  const float block_sum = block_reduce(body::dot_partial<N>(global_thread(), grid_threads(), n, a, b), SumOp{});
  if (threadIdx.x == 0) atomicAdd(sum, block_sum);
}

// *amax = max(*amax, |x[i]|): sizeof(T) bytes per element. Non-negative floats order like their bit
// patterns, so an integer atomicMax on the bits is a float max.
template <int N, typename T = float>
__global__ void __launch_bounds__(kBlockThreads) amax_kernel(std::size_t n, const T* x, float* amax) {
  const float block_max = block_reduce(body::amax_partial<N>(global_thread(), grid_threads(), n, x), MaxOp{});
  if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned int*>(amax), __float_as_uint(block_max));
}

// out[i] = e4m3(x[i] * *scale): 4 + 1 bytes per element (the scale is one cached load per thread).
template <int N>
__global__ void __launch_bounds__(kBlockThreads) scaled_e4m3_kernel(std::size_t n, const float* x,
                                                                    const float* scale, body::e4m3_bits* out) {
  body::map_elements<N>(global_thread(), grid_threads(), n, x, out, body::ScaledE4m3{*scale});
}

// out[i] = e4m3(x[i] * scale), the scale chosen from *amax (written by the amax kernel before this
// launch on the same stream) and stored once for the GEMM: 2 + 1 bytes per element.
template <int N>
__global__ void __launch_bounds__(kBlockThreads) current_e4m3_kernel(std::size_t n, const elem::bf16_bits* x,
                                                                     const float* amax, float* scale,
                                                                     body::e4m3_bits* out) {
  const float chosen = elem::e4m3_current_scale(*amax);
  if (global_thread() == 0) *scale = chosen;
  body::map_elements<N>(global_thread(), grid_threads(), n, x, out, body::ScaledBf16E4m3{chosen});
}

// The fused cast-transpose-amax: each block does one 32 x 32 tile of the row-major bf16 matrix x
// [rows x cols] with 32 x 8 threads. It reads the tile once (a warp a 64-byte row segment), writes
// codes[r][c] = e4m3(x[r][c] * scale) row-major as it goes and keeps the codes in shared memory,
// then writes the tile's transpose into transposed [cols x rows] a row at a time (a warp 32
// consecutive bytes; the tile's extra column keeps the column reads free of bank conflicts). The
// amax is reduced over the block on fp32 bits (|x| with the sign cleared orders like its bits, a
// NaN above inf), then one atomicMax on the bits per block: NaN anywhere gives a NaN amax, as
// amp::fold_amax_bits does on the host. Bytes per element: 2 read (bf16), 2 written (two e4m3
// codes). Tiles are numbered along the columns first, one-dimensional grid.
constexpr int kTransposeTile = 32, kTransposeTileRows = kBlockThreads / kTransposeTile;

__global__ void __launch_bounds__(kBlockThreads)
    cast_transpose_kernel(std::size_t rows, std::size_t cols, std::size_t col_tiles, const elem::bf16_bits* x,
                          const float* scale, std::uint8_t* codes, std::uint8_t* transposed, float* amax) {
  __shared__ std::uint8_t tile[kTransposeTile][kTransposeTile + 1];
  __shared__ unsigned warp_amax[kTransposeTileRows];
  const float s = *scale;
  const std::size_t row0 = blockIdx.x / col_tiles * kTransposeTile;
  const std::size_t col0 = blockIdx.x % col_tiles * kTransposeTile;
  elem::CastTransposeTotals totals;
  const std::size_t c = col0 + threadIdx.x;
  for (int i = threadIdx.y; i < kTransposeTile; i += kTransposeTileRows) {
    const std::size_t r = row0 + i;
    if (r < rows && c < cols) {
      const std::uint8_t code = elem::cast_transpose_element(x[r * cols + c], s, totals);
      codes[r * cols + c] = code;
      tile[i][threadIdx.x] = code;
    }
  }
  __syncthreads();
  const std::size_t t_col = row0 + threadIdx.x;  // a column of the transpose: a row of x
  for (int i = threadIdx.y; i < kTransposeTile; i += kTransposeTileRows) {
    const std::size_t t_row = col0 + i;  // a row of the transpose: a column of x
    if (t_row < cols && t_col < rows) transposed[t_row * rows + t_col] = tile[threadIdx.x][i];
  }
  unsigned bits = totals.amax_bits;
  for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
  if (threadIdx.x == 0) warp_amax[threadIdx.y] = bits;
  __syncthreads();
  if (threadIdx.y == 0 && threadIdx.x == 0) {
    for (int w = 1; w < kTransposeTileRows; ++w) bits = max(bits, warp_amax[w]);
    atomicMax(reinterpret_cast<unsigned int*>(amax), bits);
  }
}

// Calls f with a value of the storage type of `dtype`, one of the three stream/cast float types.
template <typename F>
void with_float_type(DType dtype, const char* operation, F&& f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::f16: return f(elem::f16_bits{});
    case DType::bf16: return f(elem::bf16_bits{});
    default:
      throw UsageError(std::string(operation) + " runs on fp32, fp16 or bf16 buffers, not " +
                       std::string(dtype_name(dtype)));
  }
}

template <typename T>
constexpr int pack_of() { return 16 / static_cast<int>(sizeof(T)); }

template <typename Kernel, typename... Args>
void launch(Launcher& launcher, const char* name, Kernel kernel, std::size_t items, Args... args) {
  const unsigned blocks = launcher.grid(reinterpret_cast<const void*>(kernel), items);
  kernel<<<blocks, kBlockThreads, 0, launcher.stream()>>>(args...);
  check_launch(name);
}

template <typename T, typename F>
void launch_map(Launcher& launcher, const char* name, const void* in, void* out, std::size_t n, F f) {
  constexpr int N = pack_of<T>();
  launch(launcher, name, map_kernel<N, T, T, F>, n / N + 1, n, static_cast<const T*>(in), static_cast<T*>(out), f);
}

template <typename T, typename F>
void launch_zip(Launcher& launcher, const char* name, const void* a, const void* b, void* out, std::size_t n,
                F f) {
  constexpr int N = pack_of<T>();
  launch(launcher, name, zip_kernel<N, T, F>, n / N + 1, n, static_cast<const T*>(a), static_cast<const T*>(b),
         static_cast<T*>(out), f);
}

template <typename In, typename Out, typename F>
void launch_cast(Launcher& launcher, const char* name, const In* in, Out* out, std::size_t n, F f) {
  constexpr int N = body::pack_elements<In, Out>();
  launch(launcher, name, map_kernel<N, In, Out, F>, n / N + 1, n, in, out, f);
}

}  // namespace

std::optional<std::string> kernel_image_problem() {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(amax_kernel<4>));
  if (status == cudaSuccess) return std::nullopt;
  cudaGetLastError();
  return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

unsigned Launcher::grid(const void* kernel, std::size_t items) {
  auto found = wave_blocks_.find(kernel);
  if (found == wave_blocks_.end()) {
    int per_multiprocessor = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, kBlockThreads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    const unsigned wave = static_cast<unsigned>(std::max(per_multiprocessor, 1) * std::max(multiprocessors_, 1));
    found = wave_blocks_.emplace(kernel, wave).first;
  }
  const std::size_t wanted = (items + kBlockThreads - 1) / kBlockThreads;
  return static_cast<unsigned>(std::clamp<std::size_t>(wanted, 1, found->second));
}

void fill_uniform(Launcher& launcher, DType dtype, void* out, std::size_t n, std::uint64_t seed, float lo,
                  float hi) {
  if (n == 0) return;
  const auto fill = [&](auto tag) {
    using T = decltype(tag);
    constexpr int N = pack_of<T>();
    launch(launcher, "fill_uniform", generate_kernel<N, T, body::FillUniform<T>>, n / N + 1, n,
           static_cast<T*>(out), body::FillUniform<T>{seed, lo, hi});
  };
  switch (dtype) {
    case DType::e4m3: return fill(body::e4m3_bits{});
    case DType::e5m2: return fill(body::e5m2_bits{});
    default: return with_float_type(dtype, "fill_uniform", fill);
  }
}

void stream_copy(Launcher& launcher, DType dtype, const void* a, void* c, std::size_t n) {
  if (n == 0) return;
  with_float_type(dtype, "stream copy", [&](auto tag) {
    launch_map<decltype(tag)>(launcher, "stream_copy", a, c, n, body::CopyBits{});
  });
}

void stream_scale(Launcher& launcher, DType dtype, const void* a, void* c, std::size_t n, float s) {
  if (n == 0) return;
  with_float_type(dtype, "stream scale", [&](auto tag) {
    using T = decltype(tag);
    launch_map<T>(launcher, "stream_scale", a, c, n, body::Scale<T>{s});
  });
}

void stream_add(Launcher& launcher, DType dtype, const void* a, const void* b, void* c, std::size_t n) {
  if (n == 0) return;
  with_float_type(dtype, "stream add", [&](auto tag) {
    using T = decltype(tag);
    launch_zip<T>(launcher, "stream_add", a, b, c, n, body::Add<T>{});
  });
}

void stream_triad(Launcher& launcher, DType dtype, const void* a, const void* b, void* c, std::size_t n,
                  float s) {
  if (n == 0) return;
  with_float_type(dtype, "stream triad", [&](auto tag) {
    using T = decltype(tag);
    launch_zip<T>(launcher, "stream_triad", a, b, c, n, body::Triad<T>{s});
  });
}

void stream_dot(Launcher& launcher, DType dtype, const void* a, const void* b, float* sum, std::size_t n) {
  check(cudaMemsetAsync(sum, 0, sizeof(float), launcher.stream()), "cudaMemsetAsync (dot sum)");
  if (n == 0) return;
  with_float_type(dtype, "stream dot", [&](auto tag) {
    using T = decltype(tag);
    constexpr int N = pack_of<T>();
    launch(launcher, "stream_dot", dot_kernel<N, T>, n / N + 1, n, static_cast<const T*>(a),
           static_cast<const T*>(b), sum);
  });
}

void convert(Launcher& launcher, DType from, DType to, const void* in, void* out, std::size_t n) {
  if (n == 0) return;
  const auto cast = [&](auto in_tag, auto out_tag) {
    using In = decltype(in_tag);
    using Out = decltype(out_tag);
    launch_cast(launcher, "convert", static_cast<const In*>(in), static_cast<Out*>(out), n, body::Convert<In, Out>{});
  };
  if (from == DType::f32 && to == DType::f16) return cast(float{}, elem::f16_bits{});
  if (from == DType::f32 && to == DType::bf16) return cast(float{}, elem::bf16_bits{});
  if (from == DType::f16 && to == DType::f32) return cast(elem::f16_bits{}, float{});
  if (from == DType::bf16 && to == DType::f32) return cast(elem::bf16_bits{}, float{});
  throw UsageError("no conversion kernel from " + std::string(dtype_name(from)) + " to " +
                   std::string(dtype_name(to)));
}

void amax(Launcher& launcher, const float* x, float* result, std::size_t n) {
  check(cudaMemsetAsync(result, 0, sizeof(float), launcher.stream()), "cudaMemsetAsync (amax)");
  if (n == 0) return;
  constexpr int N = pack_of<float>();
  launch(launcher, "amax", amax_kernel<N>, n / N + 1, n, x, result);
}

void f32_to_e4m3_scaled(Launcher& launcher, const float* x, const float* scale, std::uint8_t* out, std::size_t n) {
  if (n == 0) return;
  constexpr int N = body::pack_elements<float, body::e4m3_bits>();
  launch(launcher, "f32_to_e4m3_scaled", scaled_e4m3_kernel<N>, n / N + 1, n, x, scale,
         reinterpret_cast<body::e4m3_bits*>(out));
}

// The scale is written even for an empty tensor (1, as the reference writes it), so the second
// launch is unconditional.
void bf16_to_e4m3_current(Launcher& launcher, const std::uint16_t* x, float* amax, float* scale, std::uint8_t* out,
                          std::size_t n) {
  check(cudaMemsetAsync(amax, 0, sizeof(float), launcher.stream()), "cudaMemsetAsync (bf16 amax)");
  const auto* bits = reinterpret_cast<const elem::bf16_bits*>(x);
  constexpr int kAmaxPack = pack_of<elem::bf16_bits>();
  if (n > 0)
    launch(launcher, "bf16_amax", amax_kernel<kAmaxPack, elem::bf16_bits>, n / kAmaxPack + 1, n, bits, amax);
  constexpr int kCastPack = body::pack_elements<elem::bf16_bits, body::e4m3_bits>();
  launch(launcher, "bf16_to_e4m3_scaled", current_e4m3_kernel<kCastPack>, n / kCastPack + 1, n, bits,
         static_cast<const float*>(amax), scale, reinterpret_cast<body::e4m3_bits*>(out));
}

void bf16_to_e4m3_transpose_amax(Launcher& launcher, const std::uint16_t* x, std::size_t rows, std::size_t cols,
                                 const float* scale, std::uint8_t* codes, std::uint8_t* transposed, float* amax) {
  check(cudaMemsetAsync(amax, 0, sizeof(float), launcher.stream()), "cudaMemsetAsync (cast-transpose amax)");
  if (rows == 0 || cols == 0) return;
  const std::size_t col_tiles = (cols + kTransposeTile - 1) / kTransposeTile;
  const std::size_t tiles = (rows + kTransposeTile - 1) / kTransposeTile * col_tiles;
  if (tiles > 0x7FFFFFFFu) throw UsageError("bf16_to_e4m3_transpose_amax: more 32 x 32 tiles than a grid holds");
  const dim3 threads(kTransposeTile, kTransposeTileRows);
  cast_transpose_kernel<<<static_cast<unsigned>(tiles), threads, 0, launcher.stream()>>>(
      rows, cols, col_tiles, reinterpret_cast<const elem::bf16_bits*>(x), scale, codes, transposed, amax);
  check_launch("bf16_to_e4m3_transpose_amax");
}

void f32_to_bf16_stochastic(Launcher& launcher, const float* x, std::uint64_t seed, std::uint16_t* out,
                            std::size_t n) {
  if (n == 0) return;
  launch_cast(launcher, "f32_to_bf16_stochastic", x, reinterpret_cast<elem::bf16_bits*>(out), n,
              body::StochasticBf16{seed});
}

}  // namespace mpbench::cuda::kernels
