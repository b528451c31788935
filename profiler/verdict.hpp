#pragma once
// The verdict `explain` opens with: whether the device ran the document's low-precision GEMMs
// natively (so mixed precision can make them faster) and what the gemm suite measured of them,
// converted to fp32 (and why, where the CPU has the instructions) or not at all, what hardware
// would run them natively or faster (AMX the run left out among it), and what the run measured
// mixed precision gaining or losing all the same (per mode, per GEMM precision, memory-bound kernels at half the bytes, casts). Ratios
// whose noise closes explain's gate (profiler/noise_gate.hpp) are left out of those figures and counted.
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profiler/explain.hpp"

namespace mpbench::profiler {

// Empty when no case records how its GEMMs ran (details.gemm_path): a document of memory-bound
// suites only, or one written before mpbench recorded it.
std::vector<Finding> verdict(const ResultDocument& document, const std::string& baseline);

}  // namespace mpbench::profiler
