#pragma once
// The work of one thread of each element-wise kernel, as __host__ __device__ functions of
// (thread, threads). The kernels in kernels.cu call them with the global thread index and the grid
// size; the host tests call them for every thread in turn, so the 16-byte packing, the grid-stride
// indexing, the scalar tail and the per-element math are all checked without a GPU.
#include <vector_types.h>  // uint4

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "amp/formats.hpp"
#include "backends/elementwise.hpp"
#include "core/hostdevice.hpp"
#include "core/random.hpp"

namespace mpbench::cuda::body {

// fp8 storage, one type per format so that templates tell them apart.
struct e4m3_bits { std::uint8_t bits; };
struct e5m2_bits { std::uint8_t bits; };

// N elements of T filling whole 16-byte words, moved with 128-bit loads and stores.
template <typename T, int N>
union Pack {
  static constexpr int kWords = static_cast<int>(sizeof(T)) * N / 16;
  static_assert(static_cast<int>(sizeof(T)) * N % 16 == 0, "a pack is made of whole 16-byte words");
  uint4 word[kWords];
  T value[N];
};

// Elements per pack of a conversion: the narrower type moves one 16-byte word, the wider several.
template <typename In, typename Out>
constexpr int pack_elements() {
  return 16 / static_cast<int>(sizeof(In) < sizeof(Out) ? sizeof(In) : sizeof(Out));
}

template <int N, typename T>
MPB_HD Pack<T, N> load_pack(const T* base, std::size_t pack) {
  Pack<T, N> p;
  const T* from = base + pack * N;
#if defined(__CUDA_ARCH__)
  const uint4* words = reinterpret_cast<const uint4*>(from);
  for (int w = 0; w < Pack<T, N>::kWords; ++w) p.word[w] = words[w];
#else
  std::memcpy(&p, from, sizeof p);
#endif
  return p;
}

template <int N, typename T>
MPB_HD void store_pack(T* base, std::size_t pack, const Pack<T, N>& p) {
  T* to = base + pack * N;
#if defined(__CUDA_ARCH__)
  uint4* words = reinterpret_cast<uint4*>(to);
  for (int w = 0; w < Pack<T, N>::kWords; ++w) words[w] = p.word[w];
#else
  std::memcpy(to, &p, sizeof p);
#endif
}

// Thread `thread` of `threads` takes packs thread, thread + threads, ... (grid-stride), then its
// share of the n % N elements past the last whole pack, one at a time.

// out[i] = make(i)
template <int N, typename Out, typename Make>
MPB_HD void generate_elements(std::size_t thread, std::size_t threads, std::size_t n, Out* out, Make make) {
  const std::size_t packs = n / N;
  for (std::size_t p = thread; p < packs; p += threads) {
    Pack<Out, N> y;
    for (int j = 0; j < N; ++j) y.value[j] = make(p * N + j);
    store_pack<N>(out, p, y);
  }
  for (std::size_t i = packs * N + thread; i < n; i += threads) out[i] = make(i);
}

// out[i] = f(in[i], i)
template <int N, typename In, typename Out, typename F>
MPB_HD void map_elements(std::size_t thread, std::size_t threads, std::size_t n, const In* in, Out* out, F f) {
  const std::size_t packs = n / N;
  for (std::size_t p = thread; p < packs; p += threads) {
    const Pack<In, N> x = load_pack<N>(in, p);
    Pack<Out, N> y;
    for (int j = 0; j < N; ++j) y.value[j] = f(x.value[j], p * N + j);
    store_pack<N>(out, p, y);
  }
  for (std::size_t i = packs * N + thread; i < n; i += threads) out[i] = f(in[i], i);
}

// out[i] = f(a[i], b[i])
template <int N, typename T, typename F>
MPB_HD void zip_elements(std::size_t thread, std::size_t threads, std::size_t n, const T* a, const T* b,
                         T* out, F f) {
  const std::size_t packs = n / N;
  for (std::size_t p = thread; p < packs; p += threads) {
    const Pack<T, N> x = load_pack<N>(a, p);
    const Pack<T, N> y = load_pack<N>(b, p);
    Pack<T, N> z;
    for (int j = 0; j < N; ++j) z.value[j] = f(x.value[j], y.value[j]);
    store_pack<N>(out, p, z);
  }
  for (std::size_t i = packs * N + thread; i < n; i += threads) out[i] = f(a[i], b[i]);
}

// This thread's share of sum a[i] * b[i], accumulated in fp32 with fma.
template <int N, typename T>
MPB_HD float dot_partial(std::size_t thread, std::size_t threads, std::size_t n, const T* a, const T* b) {
  float sum = 0.0f;
  const std::size_t packs = n / N;
  for (std::size_t p = thread; p < packs; p += threads) {
    const Pack<T, N> x = load_pack<N>(a, p);
    const Pack<T, N> y = load_pack<N>(b, p);
    for (int j = 0; j < N; ++j) sum = fmaf(elem::load(x.value[j]), elem::load(y.value[j]), sum);
  }
  for (std::size_t i = packs * N + thread; i < n; i += threads) sum = fmaf(elem::load(a[i]), elem::load(b[i]), sum);
  return sum;
}

// This thread's max |x[i]| of fp32 or bf16 x, never below 0. NaNs are skipped (fmaxf), as the
// reference does.
template <int N, typename T>
MPB_HD float amax_partial(std::size_t thread, std::size_t threads, std::size_t n, const T* x) {
  float amax = 0.0f;
  const std::size_t packs = n / N;
  for (std::size_t p = thread; p < packs; p += threads) {
    const Pack<T, N> v = load_pack<N>(x, p);
    for (int j = 0; j < N; ++j) amax = fmaxf(amax, fabsf(elem::load(v.value[j])));
  }
  for (std::size_t i = packs * N + thread; i < n; i += threads) amax = fmaxf(amax, fabsf(elem::load(x[i])));
  return amax;
}

// fp32 rounded to a buffer's storage type, as fill_uniform stores it (fp8 saturates).
template <typename T>
MPB_HD T round_to(float x) { return elem::store<T>(x); }
template <>
MPB_HD e4m3_bits round_to<e4m3_bits>(float x) { return {num::f32_to_e4m3_bits(x, true)}; }
template <>
MPB_HD e5m2_bits round_to<e5m2_bits>(float x) { return {num::f32_to_e5m2_bits(x, true)}; }

template <typename T>
struct FillUniform {
  std::uint64_t seed;
  float lo, hi;
  MPB_HD T operator()(std::size_t i) const { return round_to<T>(uniform_at(seed, i, lo, hi)); }
};

// Stream kernels (core/backend.hpp): math in fp32 through backends/elementwise.hpp, one rounding.
struct CopyBits {
  template <typename T>
  MPB_HD T operator()(T x, std::size_t) const { return x; }
};

template <typename T>
struct Scale {
  float s;
  MPB_HD T operator()(T x, std::size_t) const { return elem::store<T>(elem::scale(elem::load(x), s)); }
};

template <typename T>
struct Add {
  MPB_HD T operator()(T x, T y) const { return elem::store<T>(elem::add(elem::load(x), elem::load(y))); }
};

template <typename T>
struct Triad {
  float s;
  MPB_HD T operator()(T x, T y) const { return elem::store<T>(elem::triad(elem::load(x), elem::load(y), s)); }
};

// Casts (CastKind).
template <typename In, typename Out>
struct Convert {
  MPB_HD Out operator()(In x, std::size_t) const { return elem::store<Out>(elem::load(x)); }
};

struct ScaledE4m3 {
  float scale;
  MPB_HD e4m3_bits operator()(float x, std::size_t) const { return {elem::f32_to_e4m3_scaled(x, scale)}; }
};

struct ScaledBf16E4m3 {
  float scale;
  MPB_HD e4m3_bits operator()(elem::bf16_bits x, std::size_t) const { return {elem::bf16_to_e4m3_scaled(x, scale)}; }
};

// The random word of element i depends on its index in the whole buffer, not on the thread.
struct StochasticBf16 {
  std::uint64_t seed;
  MPB_HD elem::bf16_bits operator()(float x, std::size_t i) const {
    return {elem::f32_to_bf16_stochastic_at(x, seed, i)};
  }
};

}  // namespace mpbench::cuda::body
