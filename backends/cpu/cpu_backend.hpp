#pragma once
// The CPU backend: oneDNN matmul (fp32, bf16 on AVX512-BF16/AMX, fp16 where the CPU has it) and
// the reference's element loops run on all cores, fp16/bf16 ones with AVX2+F16C where the CPU has
// them (environment() says which: "element_loops" is "avx2+f16c" or "scalar").
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace mpbench::cpu {

// Limits the instruction sets oneDNN may use (DNNL_MAX_CPU_ISA); must run before the first
// backend is made. Throws UsageError for a name oneDNN does not know or after oneDNN started.
void limit_isa(const std::string& isa);
const std::vector<std::string>& isa_names();

std::unique_ptr<Backend> make_backend();

}  // namespace mpbench::cpu
