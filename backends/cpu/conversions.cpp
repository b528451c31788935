#include "backends/cpu/conversions.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "amp/formats.hpp"
#include "backends/cpu/vector_loops.hpp"

namespace mpbench::cpu {

namespace {

// Below this many values a conversion runs on one thread: waking the team costs more than it saves.
constexpr std::size_t kThreadedValues = std::size_t{1} << 15;

template <typename In, typename Out, typename Convert>
void map_values(const void* source, void* destination, std::size_t n, Convert convert) {
  const auto* in = static_cast<const In*>(source);
  auto* out = static_cast<Out*>(destination);
  if (n < kThreadedValues) {  // no parallel region at all: even an inactive one costs a call
    for (std::size_t i = 0; i < n; ++i) out[i] = convert(in[i]);
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = convert(in[i]);
}

// Every fp8 code's value: a table lookup instead of a decode per element.
template <float (*Decode)(std::uint8_t)>
const std::array<float, 256>& fp8_values() {
  static const std::array<float, 256> kValues = [] {
    std::array<float, 256> values{};
    for (int code = 0; code < 256; ++code) values[code] = Decode(static_cast<std::uint8_t>(code));
    return values;
  }();
  return kValues;
}

template <float (*Decode)(std::uint8_t)>
void widen_fp8(const void* source, float* destination, std::size_t n) {
  const std::array<float, 256>& values = fp8_values<Decode>();
  map_values<std::uint8_t, float>(source, destination, n, [&values](std::uint8_t code) { return values[code]; });
}

}  // namespace

#if MPBENCH_HAVE_AVX2_LOOPS
bool cpu_has_vector_loops() {
  static const bool kHas =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return kHas;
}
#else
bool cpu_has_vector_loops() { return false; }
#endif

std::string element_loops_name() { return cpu_has_vector_loops() ? "avx2+f16c" : "scalar"; }

void widen_to_f32(DType from, const void* source, float* destination, std::size_t n) {
  const auto* codes = static_cast<const std::uint16_t*>(source);
  switch (from) {
    case DType::f32: std::memcpy(destination, source, n * sizeof(float)); return;
    case DType::f16:
      if (cpu_has_vector_loops()) return avx2::f16_to_f32(codes, destination, n);
      return map_values<std::uint16_t, float>(source, destination, n, num::f16_bits_to_f32);
    case DType::bf16:
      if (cpu_has_vector_loops()) return avx2::bf16_to_f32(codes, destination, n);
      return map_values<std::uint16_t, float>(source, destination, n, num::bf16_bits_to_f32);
    case DType::e4m3: return widen_fp8<num::e4m3_bits_to_f32>(source, destination, n);
    case DType::e5m2: return widen_fp8<num::e5m2_bits_to_f32>(source, destination, n);
  }
}

void narrow_from_f32(DType to, const float* source, void* destination, std::size_t n) {
  auto* codes = static_cast<std::uint16_t*>(destination);
  switch (to) {
    case DType::f32: std::memcpy(destination, source, n * sizeof(float)); return;
    case DType::f16:
      if (cpu_has_vector_loops()) return avx2::f32_to_f16(source, codes, n);
      return map_values<float, std::uint16_t>(source, destination, n, num::f32_to_f16_bits);
    case DType::bf16:
      if (cpu_has_vector_loops()) return avx2::f32_to_bf16(source, codes, n);
      return map_values<float, std::uint16_t>(source, destination, n, num::f32_to_bf16_bits);
    case DType::e4m3:
    case DType::e5m2: break;
  }
  throw std::logic_error("narrow_from_f32: GEMM results are fp32, fp16 or bf16");
}

void round_through(DType format, const float* source, float* destination, std::size_t n) {
  if (format != DType::f16 && format != DType::bf16) throw std::logic_error("round_through: fp16 or bf16 only");
  const bool f16 = format == DType::f16;
  if (cpu_has_vector_loops()) return (f16 ? avx2::round_through_f16 : avx2::round_through_bf16)(source, destination, n);
  for (std::size_t i = 0; i < n; ++i)
    destination[i] = f16 ? num::f16_bits_to_f32(num::f32_to_f16_bits(source[i]))
                         : num::bf16_bits_to_f32(num::f32_to_bf16_bits(source[i]));
}

}  // namespace mpbench::cpu
