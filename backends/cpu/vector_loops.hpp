#pragma once
// Stream kernels and casts on fp32/fp16/bf16 buffers with AVX2, FMA and F16C, on all cores (on the
// calling thread alone below 32K elements, where waking the team costs more than it saves); the same
// bits as the reference loops (math in fp32, one rounding to the storage type). Defined in
// vector_loops_avx2.cpp, the only file built with those instruction sets: call these only after
// checking the CPU has them. Plain declarations only, so no inline code of this header can be
// compiled for AVX2 and chosen by the linker for CPUs without it.
#include <cstddef>
#include <cstdint>

namespace mpbench::cpu::avx2 {

// The element-wise stream kernels of core/backend.hpp: copy c = a; scale c = s*a; add c = a + b;
// triad c = fma(s, b, a).
enum class StreamOp { copy, scale, add, triad };

void stream_f32(StreamOp op, const float* a, const float* b, float* c, float s, std::size_t n);
void stream_f16(StreamOp op, const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c, float s,
                std::size_t n);
void stream_bf16(StreamOp op, const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c, float s,
                 std::size_t n);

// Sum of a[i] * b[i] accumulated in double.
double dot_f32(const float* a, const float* b, std::size_t n);
double dot_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n);
double dot_bf16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n);

void f32_to_f16(const float* source, std::uint16_t* destination, std::size_t n);
void f32_to_bf16(const float* source, std::uint16_t* destination, std::size_t n);
void f16_to_f32(const std::uint16_t* source, float* destination, std::size_t n);
void bf16_to_f32(const std::uint16_t* source, float* destination, std::size_t n);
// destination[i] = amp/formats.hpp's f32_to_e4m3_bits(source[i] * scale, true); returns the
// largest |source[i]|, NaNs left out (the reference's fmax), in the same pass.
float f32_to_e4m3_scaled(const float* source, std::uint8_t* destination, float scale, std::size_t n);
// The largest |source[i]| of bf16 values, NaNs left out (as f32_to_e4m3_scaled's amax).
float bf16_amax(const std::uint16_t* source, std::size_t n);
// destination[i] = f32_to_e4m3_bits(bf16 source[i] * scale, true).
void bf16_to_e4m3_scaled(const std::uint16_t* source, std::uint8_t* destination, float scale, std::size_t n);
// destination[i] = f32_to_bf16_bits_stochastic(source[i], random_word(seed, i)).
void f32_to_bf16_stochastic(const float* source, std::uint16_t* destination, std::uint64_t seed, std::size_t n);
// destination[i] = source[i] rounded to fp16 (bf16) and back to fp32; destination may be source.
void round_through_f16(const float* source, float* destination, std::size_t n);
void round_through_bf16(const float* source, float* destination, std::size_t n);

}  // namespace mpbench::cpu::avx2

// Defined in vector_loops_avx512.cpp, built with AVX512F, BW, DQ and VL (oneDNN's avx512_core):
// call only after checking the CPU has them.
namespace mpbench::cpu::avx512 {

// As avx2::f32_to_bf16_stochastic, the same bits.
void f32_to_bf16_stochastic(const float* source, std::uint16_t* destination, std::uint64_t seed, std::size_t n);

}  // namespace mpbench::cpu::avx512
