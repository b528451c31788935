#pragma once
// `mpbench explain RESULT --peer TORCH`: mpbench against PyTorch (a document of
// scripts/torch_baseline.py, backend torch or torch-compile) per suite and precision or mode, with
// each side's own speedup over the baseline, and the rule that says where PyTorch's low-precision
// path is much slower than the same hardware allows: mpbench's speedup on the same cases is what
// the hardware allows at least. Where the CPU lacks the instructions (env.cpu.flags: no
// AVX512-BF16/AMX-BF16 for bf16, no AVX512-FP16/AMX-FP16 for fp16) the rule names PyTorch's
// fallback; elsewhere it gives the measured ratios without naming a cause.
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profiler/explain.hpp"

namespace mpbench::profiler {

// PyTorch's low-precision speedup below this share of mpbench's on the same cases is "much slower
// than the hardware allows".
inline constexpr double kPeerSlowShare = 0.5;

// Findings in the order: the sides' machines where they differ, per suite and precision mpbench
// against PyTorch (rule peer_comparison), then the slow-path rules (peer_bf16_fallback,
// peer_fp16_fallback, peer_slow_low_precision). Empty where no ok case pairs.
std::vector<Finding> peer_findings(const ResultDocument& mpbench, const ResultDocument& torch,
                                   const std::string& baseline);

// "PyTorch 2.5.1 (cpu)" from the document's env and run.
std::string peer_label(const ResultDocument& torch);

}  // namespace mpbench::profiler
