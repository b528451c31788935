// The AVX-512 loops of vector_loops.hpp, the one file built with -mavx512f -mavx512bw -mavx512dq
// -mavx512vl; the same rule as vector_loops_avx2.cpp's holds for what it may include. Only the
// stochastic-rounding cast is here: its counter hash is two 64-bit multiplies per element, one
// instruction per eight elements with AVX512DQ and eight 32-bit partial products with AVX2.
// GCC 12 warns, wrongly, that the undefined pass-through operand inside its AVX-512 intrinsics (the
// lanes a mask would keep, none here) may be used uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backends/cpu/vector_loops.hpp"

namespace mpbench::cpu::avx512 {

namespace {

constexpr std::size_t kLanes = 16;  // fp32 values in a __m512
// 32K elements, where the AVX2 loops start using all cores.
constexpr std::size_t kThreadedBlocks = 2048;

// core/random.hpp's mix64 (restated: see the top of the file) after the counter z is formed.
constexpr std::uint64_t kMixSeedFactor = 0x9E3779B97F4A7C15ull, kMixOffset = 0x632BE59BD9B4E019ull;

// z ^ (z >> shift) per 64-bit lane.
__m512i xor_shifted(__m512i z, unsigned shift) { return _mm512_xor_si512(z, _mm512_srli_epi64(z, shift)); }

__m512i finish_mix64(__m512i z) {
  z = _mm512_mullo_epi64(xor_shifted(z, 30), _mm512_set1_epi64(0xBF58476D1CE4E5B9ll));
  z = _mm512_mullo_epi64(xor_shifted(z, 27), _mm512_set1_epi64(0x94D049BB133111EBll));
  return xor_shifted(z, 31);
}

// random_word(seed, first + j) in 32-bit lane j, given start = seed * kMixSeedFactor + kMixOffset
// + first: the high halves of the two hashes' 64-bit lanes, in order.
__m512i random_words(std::uint64_t start) {
  const __m512i counter = _mm512_set1_epi64(static_cast<long long>(start));
  const __m512i low = finish_mix64(_mm512_add_epi64(counter, _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7)));
  const __m512i high = finish_mix64(_mm512_add_epi64(counter, _mm512_setr_epi64(8, 9, 10, 11, 12, 13, 14, 15)));
  const __m512i odd_halves = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_permutex2var_epi32(low, odd_halves, high);
}

// amp/formats.hpp's f32_to_bf16_bits_stochastic: the word's low 16 bits added under the dropped
// bits; inf unchanged; NaN quieted as in the round-to-nearest narrowing.
__m256i bf16_stochastic(__m512 x, __m512i words) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i high = _mm512_srli_epi32(bits, 16);
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_and_si512(words, _mm512_set1_epi32(0xFFFF))), 16);
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 special = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7F7FFFFF));  // inf or NaN
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7F800000));
  const __m512i kept = _mm512_mask_mov_epi32(rounded, special, high);
  return _mm512_cvtepi32_epi16(_mm512_mask_or_epi32(kept, nan, kept, _mm512_set1_epi32(0x0040)));
}

// Elements first .. first + 16 where `lanes` has their bits: masked loads and stores, so a tail
// needs no copies.
void stochastic_block(const float* source, std::uint16_t* destination, std::uint64_t start, std::size_t first,
                      __mmask16 lanes) {
  // As in the AVX2 loops: a loop this long per element falls behind the hardware prefetcher. The
  // address as a number: past the buffer's end no pointer may point, but a prefetch may.
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(source + first) + 4096), _MM_HINT_T0);
  const __m512 x = _mm512_maskz_loadu_ps(lanes, source + first);
  _mm256_mask_storeu_epi16(destination + first, lanes, bf16_stochastic(x, random_words(start + first)));
}

}  // namespace

void f32_to_bf16_stochastic(const float* source, std::uint16_t* destination, std::uint64_t seed, std::size_t n) {
  const std::uint64_t start = seed * kMixSeedFactor + kMixOffset;
  const std::size_t blocks = n / kLanes;
  const auto block = [&](std::size_t b) { stochastic_block(source, destination, start, b * kLanes, 0xFFFF); };
  if (blocks < kThreadedBlocks) {  // no parallel region at all: even an inactive one costs a call
    for (std::size_t b = 0; b < blocks; ++b) block(b);
  } else {
#pragma omp parallel for schedule(static)
    for (std::size_t b = 0; b < blocks; ++b) block(b);
  }
  const std::size_t rest = n - blocks * kLanes;
  if (rest > 0) stochastic_block(source, destination, start, blocks * kLanes, static_cast<__mmask16>((1u << rest) - 1));
}

}  // namespace mpbench::cpu::avx512
