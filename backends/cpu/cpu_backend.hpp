#pragma once
// The CPU backend: oneDNN matmul (fp32, bf16 on AVX512-BF16/AMX, fp16 where the CPU has it) and
// the reference's element loops run on all cores, fp16/bf16 ones with AVX2+F16C where the CPU has
// them (environment() says which: "element_loops" is "avx2+f16c" or "scalar").
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/isa.hpp"
#include "core/backend.hpp"

namespace mpbench::cpu {

std::unique_ptr<Backend> make_backend();

}  // namespace mpbench::cpu
