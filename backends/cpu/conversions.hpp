#pragma once
// Conversions between fp32 and the formats GEMM operands come in, on all cores: the AVX2+F16C
// loops of vector_loops.hpp where the CPU has those instructions, amp/formats.hpp's scalar
// rounding elsewhere (the same bits either way). The converted GEMM path and the casts use them.
#include <cstddef>
#include <string>

#include "core/dtype.hpp"

namespace mpbench::cpu {

// Whether the CPU has AVX2, FMA and F16C, which the vector loops need.
bool cpu_has_vector_loops();
// "avx2+f16c" or "scalar": which loops the conversions and the element loops run.
std::string element_loops_name();

// destination[i] = source[i] as fp32, n values of type `from` (a copy for f32).
void widen_to_f32(DType from, const void* source, float* destination, std::size_t n);
// destination[i] = source[i] rounded to nearest even in `to` (f32, f16 or bf16; inf past the range).
void narrow_from_f32(DType to, const float* source, void* destination, std::size_t n);
// destination[i] = source[i] rounded to `format` (f16 or bf16) and back: the value the format holds,
// as fp32 (destination may be source). On one thread: for loops that already share the work out.
void round_through(DType format, const float* source, float* destination, std::size_t n);

}  // namespace mpbench::cpu
