#pragma once
// `mpbench explain NEW --against OLD`: the same cases measured under other library versions (a
// CUDA upgrade, another cuBLAS loaded through LD_LIBRARY_PATH). Where a speedup over the baseline
// moved by kAgainstSpeedupChange or more and a GEMM algorithm of the case or of its baseline
// changed (core/gemm_choice.hpp: Tensor Cores on in one and off in the other, another algorithm
// id, tile or stages), rule `algorithm_changed` names the changed algorithms as the cause, with
// both speedups and the library versions that changed. Same algorithms: the rule stays silent.
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profiler/explain.hpp"

namespace mpbench::profiler {

// A speedup that moved by less than this share is left to `mpbench compare`'s interval.
inline constexpr double kAgainstSpeedupChange = 0.10;

// Findings in the order: the library versions that changed (library_versions, info; none when
// nothing changed), then algorithm_changed per case, in the new document's case order.
// `current_explanation` is explain(current, baseline).
std::vector<Finding> against_findings(const ResultDocument& current, const Explanation& current_explanation,
                                      const ResultDocument& old, const std::string& baseline);

}  // namespace mpbench::profiler
