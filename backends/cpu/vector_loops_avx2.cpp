// The loops of vector_loops.hpp, the one file built with -mavx2 -mfma -mf16c. It includes no header
// with inline or template code that other files instantiate too (amp/formats.hpp, the standard
// library's algorithms): the linker keeps one copy of such code for the whole program and could
// pick this file's AVX2 build, which would crash CPUs without AVX2. Hence the conversions below
// restate amp/formats.hpp's rounding rather than call it; the conformance tests hold them equal.
#include "backends/cpu/vector_loops.hpp"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace mpbench::cpu::avx2 {

namespace {

constexpr std::size_t kLanes = 8;  // fp32 values in a __m256

// F16C converts both ways with amp/formats.hpp's rounding: nearest even, subnormals kept, NaN
// quieted with its sign and top payload bits (tests/amp/test_formats.cpp checks every input).
struct Fp16 {
  using Element = std::uint16_t;
  static __m256 widen(__m128i h) { return _mm256_cvtph_ps(h); }
  static __m128i narrow(__m256 x) { return _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
};

// Eight 32-bit values below 2^16 as eight 16-bit values, in order: packus packs within each
// 128-bit half, so the permute gathers the two halves' results into the low 128 bits.
__m128i pack_low_halves(__m256i v) {
  const __m256i packed = _mm256_packus_epi32(v, v);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0b10'00'10'00));
}

// bf16 is the top half of fp32. Narrowing is amp/formats.hpp's f32_to_bf16_bits: round to nearest
// even by one add on the bit pattern; a NaN keeps its sign and top payload bits and turns quiet.
struct Bf16 {
  using Element = std::uint16_t;
  static __m256 widen(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static __m128i narrow(__m256 x) {
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i high = _mm256_srli_epi32(bits, 16);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(high, _mm256_set1_epi32(1)));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, bias), 16);
    // |bits| fits in 31 bits, so the signed compare is the unsigned one.
    const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
    const __m256i quiet_nan = _mm256_or_si256(high, _mm256_set1_epi32(0x0040));
    return pack_low_halves(_mm256_blendv_epi8(rounded, quiet_nan, is_nan));
  }
};

__m128i load_bits(const std::uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
void store_bits(std::uint16_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

template <typename Format>
__m256 load8(const typename Format::Element* p) {
  if constexpr (std::is_same_v<typename Format::Element, float>) return _mm256_loadu_ps(p);
  else return Format::widen(load_bits(p));
}

template <typename Format>
void store8(typename Format::Element* p, __m256 x) {
  if constexpr (std::is_same_v<typename Format::Element, float>) _mm256_storeu_ps(p, x);
  else store_bits(p, Format::narrow(x));
}

// Eight elements as they are, bits untouched (as the reference copies: no NaN quieting).
template <typename Format>
void copy8(const typename Format::Element* from, typename Format::Element* to) {
  if constexpr (std::is_same_v<typename Format::Element, float>) _mm256_storeu_ps(to, _mm256_loadu_ps(from));
  else store_bits(to, load_bits(from));
}

// fp32 needs no conversion; it is here for the fused triad, which the portable build of the
// reference loops can only reach through a call to fmaf per element.
struct Fp32 {
  using Element = float;
};

// Below this many octets a loop runs on the calling thread: waking the team costs more than it
// saves, and callers that already share work among threads convert a row at a time.
constexpr std::size_t kThreadedOctets = 4096;

// body(v) for v in [0, octets), on all cores from kThreadedOctets on.
template <typename Body>
void each_octet(std::size_t octets, Body body) {
  if (octets < kThreadedOctets) {  // no parallel region at all: even an inactive one costs a call
    for (std::size_t v = 0; v < octets; ++v) body(v);
  } else {
#pragma omp parallel for schedule(static)
    for (std::size_t v = 0; v < octets; ++v) body(v);
  }
}

// kernel(a + i, b + i, c + i) for i = 0, 8, 16, ... on all cores. The last n % 8 elements go
// through zero-padded copies on the stack, so the vector code never reads or writes past the
// buffers and no scalar conversion is needed.
template <typename In, typename Out, typename Kernel>
void for_each_octet(const In* a, const In* b, Out* c, std::size_t n, Kernel kernel) {
  const std::size_t octets = n / kLanes;
  each_octet(octets, [&](std::size_t v) { kernel(a + v * kLanes, b + v * kLanes, c + v * kLanes); });
  const std::size_t done = octets * kLanes, rest = n - done;
  if (rest == 0) return;
  In a_tail[kLanes] = {}, b_tail[kLanes] = {};
  Out c_tail[kLanes];
  std::memcpy(a_tail, a + done, rest * sizeof(In));
  std::memcpy(b_tail, b + done, rest * sizeof(In));
  kernel(a_tail, b_tail, c_tail);
  std::memcpy(c + done, c_tail, rest * sizeof(Out));
}

// convert(i, source + i, destination + i) for i = 0, 8, 16, ..., the tail as for_each_octet's:
// i is the index of the octet's first element, for conversions that depend on it.
template <typename In, typename Out, typename Convert>
void map_octets_at(const In* source, Out* destination, std::size_t n, Convert convert) {
  const std::size_t octets = n / kLanes;
  each_octet(octets, [&](std::size_t v) { convert(v * kLanes, source + v * kLanes, destination + v * kLanes); });
  const std::size_t done = octets * kLanes, rest = n - done;
  if (rest == 0) return;
  In in_tail[kLanes] = {};
  Out out_tail[kLanes];
  std::memcpy(in_tail, source + done, rest * sizeof(In));
  convert(done, in_tail, out_tail);
  std::memcpy(destination + done, out_tail, rest * sizeof(Out));
}

// destination[i] = convert(source[i]), eight at a time.
template <typename In, typename Out, typename Convert>
void map_octets(const In* source, Out* destination, std::size_t n, Convert convert) {
  map_octets_at(source, destination, n, [convert](std::size_t, const In* x, Out* y) { convert(x, y); });
}

template <typename Format>
void stream(StreamOp op, const typename Format::Element* a, const typename Format::Element* b,
            typename Format::Element* c, float s, std::size_t n) {
  using E = typename Format::Element;
  const __m256 scalar = _mm256_set1_ps(s);
  switch (op) {
    case StreamOp::copy:
      return for_each_octet(a, b, c, n, [](const E* x, const E*, E* z) { copy8<Format>(x, z); });
    case StreamOp::scale:
      return for_each_octet(a, b, c, n, [scalar](const E* x, const E*, E* z) {
        store8<Format>(z, _mm256_mul_ps(scalar, load8<Format>(x)));
      });
    case StreamOp::add:
      return for_each_octet(a, b, c, n, [](const E* x, const E* y, E* z) {
        store8<Format>(z, _mm256_add_ps(load8<Format>(x), load8<Format>(y)));
      });
    case StreamOp::triad:  // fmaf(s, b, a): the same single rounding
      return for_each_octet(a, b, c, n, [scalar](const E* x, const E* y, E* z) {
        store8<Format>(z, _mm256_fmadd_ps(scalar, load8<Format>(y), load8<Format>(x)));
      });
  }
}

// The low and high four lanes of x in double, exactly.
__m256d low_lanes(__m256 x) { return _mm256_cvtps_pd(_mm256_castps256_ps128(x)); }
__m256d high_lanes(__m256 x) { return _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)); }

// Partial sums of a dot product in double, two chains so consecutive FMAs need not wait.
struct DoubleSums {
  __m256d low = _mm256_setzero_pd();
  __m256d high = _mm256_setzero_pd();

  // Products of fp32 (and so fp16/bf16) values are exact in double: only the sums round.
  void add_products(__m256 x, __m256 y) {
    low = _mm256_fmadd_pd(low_lanes(x), low_lanes(y), low);
    high = _mm256_fmadd_pd(high_lanes(x), high_lanes(y), high);
  }
  double total() const {
    const __m256d both = _mm256_add_pd(low, high);
    const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(both), _mm256_extractf128_pd(both, 1));
    return _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
  }
};

template <typename Format>
double dot(const typename Format::Element* a, const typename Format::Element* b, std::size_t n) {
  const std::size_t octets = n / kLanes;
  double sum = 0;
#pragma omp parallel reduction(+ : sum) if (octets >= kThreadedOctets)
  {
    DoubleSums sums;
#pragma omp for schedule(static)
    for (std::size_t v = 0; v < octets; ++v)
      sums.add_products(load8<Format>(a + v * kLanes), load8<Format>(b + v * kLanes));
    sum += sums.total();
  }
  const std::size_t done = octets * kLanes, rest = n - done;
  if (rest == 0) return sum;
  typename Format::Element a_tail[kLanes] = {}, b_tail[kLanes] = {};  // zero pads add nothing
  std::memcpy(a_tail, a + done, rest * sizeof a_tail[0]);
  std::memcpy(b_tail, b + done, rest * sizeof b_tail[0]);
  DoubleSums tail;
  tail.add_products(load8<Format>(a_tail), load8<Format>(b_tail));
  return sum + tail.total();
}

template <typename Format>
void narrow(const float* source, std::uint16_t* destination, std::size_t n) {
  map_octets(source, destination, n, [](const float* x, std::uint16_t* y) { store8<Format>(y, _mm256_loadu_ps(x)); });
}

template <typename Format>
void widen(const std::uint16_t* source, float* destination, std::size_t n) {
  map_octets(source, destination, n, [](const std::uint16_t* x, float* y) { _mm256_storeu_ps(y, load8<Format>(x)); });
}

// Rounded to the format and back in registers: one pass, no codes in memory.
template <typename Format>
void round_through(const float* source, float* destination, std::size_t n) {
  map_octets(source, destination, n,
             [](const float* x, float* y) { _mm256_storeu_ps(y, Format::widen(Format::narrow(_mm256_loadu_ps(x)))); });
}

// The loops that spend more than a few instructions per element fall behind the hardware
// prefetcher's stream from memory (on a 2-core Xeon VM, the fp8 cast took 3x its in-cache time
// without this): ask for the line 4 KiB ahead of the one being read. The address as a number: past
// the buffer's end (or the stack copy of a tail) no pointer may point, but a prefetch may.
void prefetch_ahead(const float* x) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(x) + 4096), _MM_HINT_T0);
}

// ---- fp32 -> fp8 e4m3 of x * scale, with the amax of x -----------------------------------------

// amp/formats.hpp's f32_to_e4m3_bits(y, true) on eight values, each code in its 32-bit lane.
__m256i e4m3_saturated(__m256 y) {
  const __m256i bits = _mm256_castps_si256(y);
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 24), _mm256_set1_epi32(0x80));
  // From e4m3's smallest normal 2^-6 on: the exponent re-biased (127 -> 7) and the pattern rounded
  // to 3 mantissa bits, nearest even, by one add; a carry into the exponent is the next binade.
  const __m256i rebiased = _mm256_sub_epi32(magnitude, _mm256_set1_epi32(120 << 23));
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(rebiased, 20), _mm256_set1_epi32(1));
  const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFFF), odd);
  const __m256i normal = _mm256_srli_epi32(_mm256_add_epi32(rebiased, bias), 20);
  // Below it: units of the subnormal quantum 2^-9, rounded to nearest even by the fp32 add of
  // 2^14, whose ulp is 2^-9; the sum's pattern less 2^14's is the count.
  const __m256 shifted = _mm256_add_ps(_mm256_castsi256_ps(magnitude), _mm256_set1_ps(16384.0f));
  const __m256i subnormal = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_set1_epi32(0x46800000));
  const __m256i is_normal = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32((121 << 23) - 1));
  // Past 448 (inf included) the largest finite code 0x7E; NaN is the all-ones 0x7F, both signed.
  const __m256i code = _mm256_min_epi32(_mm256_blendv_epi8(subnormal, normal, is_normal), _mm256_set1_epi32(0x7E));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  return _mm256_or_si256(_mm256_or_si256(code, _mm256_and_si256(is_nan, _mm256_set1_epi32(0x7F))), sign);
}

// Eight codes below 256, one per 32-bit lane, as eight bytes.
void store_bytes(std::uint8_t* p, __m256i codes) {
  const __m128i halves = pack_low_halves(codes);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(halves, halves));
}

// Stores the codes of x[0..8) * scale and returns max(amax, |x|) per lane. max_ps returns its
// second operand where either is NaN, so NaN inputs leave the amax alone, as fmax does.
__m256 e4m3_octet(const float* x, std::uint8_t* y, __m256 scale, __m256 amax) {
  prefetch_ahead(x);
  const __m256 value = _mm256_loadu_ps(x);
  store_bytes(y, e4m3_saturated(_mm256_mul_ps(value, scale)));
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(value), _mm256_set1_epi32(0x7FFFFFFF)));
  return _mm256_max_ps(magnitude, amax);
}

// The largest of eight values, none NaN.
float largest(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

// max(amax, |x|) per lane of eight bf16 values; NaNs leave the amax alone, as in e4m3_octet.
__m256 bf16_magnitude_max(const std::uint16_t* x, __m256 amax) {
  const __m256 value = load8<Bf16>(x);
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(value), _mm256_set1_epi32(0x7FFFFFFF)));
  return _mm256_max_ps(magnitude, amax);
}

// ---- fp32 -> bf16 with stochastic rounding -------------------------------------------------------
// The loop is bound by its count of vector instructions (some 58 per eight elements in the plain
// form, most of them the counter hash's 64-bit multiplies, three 32 x 32-bit products each), so
// what the hash does not need is left out: see first_product and random_words.

// The low 64 bits of a * b in each 64-bit lane. AVX2 multiplies only 32 x 32 -> 64 bits: three
// partial products, since a_high * b_high lands at bit 64 and above.
__m256i multiply_low64(__m256i a, std::uint64_t b) {
  const __m256i b_low = _mm256_set1_epi64x(static_cast<long long>(b & 0xFFFFFFFFu));
  const __m256i b_high = _mm256_set1_epi64x(static_cast<long long>(b >> 32));
  const __m256i cross =
      _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b_low), _mm256_mul_epu32(a, b_high));
  return _mm256_add_epi64(_mm256_mul_epu32(a, b_low), _mm256_slli_epi64(cross, 32));
}

// core/random.hpp's mix64 (restated: see the top of the file) after the counter z is formed.
constexpr std::uint64_t kMixSeedFactor = 0x9E3779B97F4A7C15ull, kMixOffset = 0x632BE59BD9B4E019ull;
constexpr std::uint64_t kMix1 = 0xBF58476D1CE4E5B9ull, kMix2 = 0x94D049BB133111EBull;

__m256i xor_shifted(__m256i z, int shift) { return _mm256_xor_si256(z, _mm256_srli_epi64(z, shift)); }

// mix64's first product, (z ^ (z >> 30)) * kMix1, for counters z that share their high half: the
// high half of z ^ (z >> 30) is then the same in every lane, and so is its partial product with
// kMix1's low half, `high_term` (already shifted into the high half, from first_product_term): two
// 32 x 32-bit multiplies instead of three. Counters run on for 2^32 before their high half changes.
__m256i first_product(__m256i z, __m256i high_term) {
  const __m256i x = xor_shifted(z, 30);
  const __m256i low = _mm256_mul_epu32(x, _mm256_set1_epi64x(static_cast<long long>(kMix1 & 0xFFFFFFFFu)));
  const __m256i cross = _mm256_mul_epu32(x, _mm256_set1_epi64x(static_cast<long long>(kMix1 >> 32)));
  return _mm256_add_epi64(_mm256_add_epi64(low, high_term), _mm256_slli_epi64(cross, 32));
}

// first_product's high_term for counters whose high half is z_high.
__m256i first_product_term(std::uint64_t z_high) {
  const std::uint32_t x_high = static_cast<std::uint32_t>(z_high ^ (z_high >> 30));
  const std::uint32_t term = x_high * static_cast<std::uint32_t>(kMix1 & 0xFFFFFFFFu);
  return _mm256_set1_epi64x(static_cast<long long>(std::uint64_t{term} << 32));
}

// The same product for any counters (eight that straddle a change of the high half).
__m256i first_product_any(__m256i z) { return multiply_low64(xor_shifted(z, 30), kMix1); }

// random_word(seed, first + j) in 32-bit lane j, from first_product of the 64-bit lanes that count
// first + {0, 1, 4, 5} (a) and first + {2, 3, 6, 7} (b): shuffle_ps, which picks within 128-bit
// halves, then leaves the high halves of the second products in order, and mix64's last
// z ^ (z >> 31), of which random_word keeps the high half, is w ^ (w >> 31) on those 32 bits.
__m256i random_words(__m256i a, __m256i b) {
  a = multiply_low64(xor_shifted(a, 27), kMix2);
  b = multiply_low64(xor_shifted(b, 27), kMix2);
  const __m256i w =
      _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm256_xor_si256(w, _mm256_srli_epi32(w, 31));
}

// The 64-bit lanes of counters first + {0, 1, 4, 5} and first + {2, 3, 6, 7}, given start = seed *
// kMixSeedFactor + kMixOffset.
__m256i counters_a(std::uint64_t z) {
  return _mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(z)), _mm256_setr_epi64x(0, 1, 4, 5));
}
__m256i counters_b(std::uint64_t z) {
  return _mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(z)), _mm256_setr_epi64x(2, 3, 6, 7));
}

// amp/formats.hpp's f32_to_bf16_bits_stochastic: the word's low 16 bits added under the dropped
// bits; inf unchanged (its dropped bits are 0: the add carries nothing into it); NaN quieted as in
// the round-to-nearest narrowing, its bits shifted with nothing added.
__m128i bf16_stochastic(__m256 x, __m256i words) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  const __m256i added = _mm256_andnot_si256(_mm256_or_si256(is_nan, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))), words);
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, added), 16);
  return pack_low_halves(_mm256_or_si256(rounded, _mm256_and_si256(is_nan, _mm256_set1_epi32(0x0040))));
}

void stochastic_octet(const float* x, std::uint16_t* y, __m256i words) {
  prefetch_ahead(x);
  store_bits(y, bf16_stochastic(_mm256_loadu_ps(x), words));
}

void stochastic_octet_any(const float* x, std::uint16_t* y, std::uint64_t z) {
  stochastic_octet(x, y, random_words(first_product_any(counters_a(z)), first_product_any(counters_b(z))));
}

// Octets [begin, end) of the cast, in runs of octets whose counters share their high half.
void stochastic_octets(const float* source, std::uint16_t* destination, std::uint64_t start, std::size_t begin,
                       std::size_t end) {
  std::size_t v = begin;
  while (v < end) {
    const std::uint64_t z = start + v * kLanes;
    const std::uint64_t same_high = (std::uint64_t{1} << 32) - (z & 0xFFFFFFFFu);  // counters from z on
    if (same_high < kLanes) {
      stochastic_octet_any(source + v * kLanes, destination + v * kLanes, z);
      ++v;
      continue;
    }
    const std::size_t run_end = same_high / kLanes < end - v ? v + same_high / kLanes : end;
    const __m256i high_term = first_product_term(z >> 32), step = _mm256_set1_epi64x(kLanes);
    __m256i a = counters_a(z), b = counters_b(z);  // counted on in the vectors: no broadcast per octet
    for (; v < run_end; ++v) {
      stochastic_octet(source + v * kLanes, destination + v * kLanes,
                       random_words(first_product(a, high_term), first_product(b, high_term)));
      a = _mm256_add_epi64(a, step);
      b = _mm256_add_epi64(b, step);
    }
  }
}

}  // namespace

float f32_to_e4m3_scaled(const float* source, std::uint8_t* destination, float scale, std::size_t n) {
  const std::size_t octets = n / kLanes;
  const __m256 factor = _mm256_set1_ps(scale);
  float amax = 0;
#pragma omp parallel reduction(max : amax) if (octets >= kThreadedOctets)
  {
    __m256 local = _mm256_setzero_ps();
#pragma omp for schedule(static)
    for (std::size_t v = 0; v < octets; ++v)
      local = e4m3_octet(source + v * kLanes, destination + v * kLanes, factor, local);
    amax = largest(local);
  }
  const std::size_t done = octets * kLanes, rest = n - done;
  if (rest == 0) return amax;
  float in_tail[kLanes] = {};  // zero pads add nothing to the amax
  std::uint8_t out_tail[kLanes];
  std::memcpy(in_tail, source + done, rest * sizeof(float));
  const float tail_amax = largest(e4m3_octet(in_tail, out_tail, factor, _mm256_setzero_ps()));
  std::memcpy(destination + done, out_tail, rest);
  return tail_amax > amax ? tail_amax : amax;
}

float bf16_amax(const std::uint16_t* source, std::size_t n) {
  const std::size_t octets = n / kLanes;
  float amax = 0;
#pragma omp parallel reduction(max : amax) if (octets >= kThreadedOctets)
  {
    __m256 local = _mm256_setzero_ps();
#pragma omp for schedule(static)
    for (std::size_t v = 0; v < octets; ++v) local = bf16_magnitude_max(source + v * kLanes, local);
    amax = largest(local);
  }
  const std::size_t done = octets * kLanes, rest = n - done;
  if (rest == 0) return amax;
  std::uint16_t tail[kLanes] = {};  // zero pads add nothing to the amax
  std::memcpy(tail, source + done, rest * sizeof tail[0]);
  const float tail_amax = largest(bf16_magnitude_max(tail, _mm256_setzero_ps()));
  return tail_amax > amax ? tail_amax : amax;
}

void bf16_to_e4m3_scaled(const std::uint16_t* source, std::uint8_t* destination, float scale, std::size_t n) {
  const __m256 factor = _mm256_set1_ps(scale);
  map_octets(source, destination, n, [factor](const std::uint16_t* x, std::uint8_t* y) {
    store_bytes(y, e4m3_saturated(_mm256_mul_ps(load8<Bf16>(x), factor)));
  });
}

void f32_to_bf16_stochastic(const float* source, std::uint16_t* destination, std::uint64_t seed, std::size_t n) {
  const std::uint64_t start = seed * kMixSeedFactor + kMixOffset;
  const std::size_t octets = n / kLanes;
  // Blocks of octets on the threads: each block's runs start with one high_term.
  constexpr std::size_t kBlock = 512;
  const std::size_t blocks = (octets + kBlock - 1) / kBlock;
  const auto block = [&](std::size_t b) {
    stochastic_octets(source, destination, start, b * kBlock, b + 1 < blocks ? (b + 1) * kBlock : octets);
  };
  if (octets < kThreadedOctets) {  // no parallel region at all: even an inactive one costs a call
    for (std::size_t b = 0; b < blocks; ++b) block(b);
  } else {
#pragma omp parallel for schedule(static)
    for (std::size_t b = 0; b < blocks; ++b) block(b);
  }
  const std::size_t done = octets * kLanes, rest = n - done;
  if (rest == 0) return;
  float in_tail[kLanes] = {};
  std::uint16_t out_tail[kLanes];
  std::memcpy(in_tail, source + done, rest * sizeof(float));
  stochastic_octet_any(in_tail, out_tail, start + done);
  std::memcpy(destination + done, out_tail, rest * sizeof(std::uint16_t));
}

void stream_f16(StreamOp op, const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c, float s,
                std::size_t n) {
  stream<Fp16>(op, a, b, c, s, n);
}

void stream_bf16(StreamOp op, const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c, float s,
                 std::size_t n) {
  stream<Bf16>(op, a, b, c, s, n);
}

void stream_f32(StreamOp op, const float* a, const float* b, float* c, float s, std::size_t n) {
  stream<Fp32>(op, a, b, c, s, n);
}

double dot_f32(const float* a, const float* b, std::size_t n) { return dot<Fp32>(a, b, n); }
double dot_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) { return dot<Fp16>(a, b, n); }
double dot_bf16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) { return dot<Bf16>(a, b, n); }

void f32_to_f16(const float* source, std::uint16_t* destination, std::size_t n) {
  narrow<Fp16>(source, destination, n);
}
void f32_to_bf16(const float* source, std::uint16_t* destination, std::size_t n) {
  narrow<Bf16>(source, destination, n);
}
void f16_to_f32(const std::uint16_t* source, float* destination, std::size_t n) {
  widen<Fp16>(source, destination, n);
}
void bf16_to_f32(const std::uint16_t* source, float* destination, std::size_t n) {
  widen<Bf16>(source, destination, n);
}
void round_through_f16(const float* source, float* destination, std::size_t n) {
  round_through<Fp16>(source, destination, n);
}
void round_through_bf16(const float* source, float* destination, std::size_t n) {
  round_through<Bf16>(source, destination, n);
}

}  // namespace mpbench::cpu::avx2
