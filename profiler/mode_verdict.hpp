#pragma once
// The verdict on top of explain: for each low-precision mode, one sentence saying whether it pays
// here, by how much (the median of its speedups that passed the noise gate), what limits it (the
// first root cause that fired for it, in kLimitOrder, else the limiting category of its time) and
// what would change that (the fix of that rule). Ratios too noisy to read get no cause: the
// sentence says so and to rerun.
#include <vector>

#include "profiler/explain.hpp"

namespace mpbench::profiler {

// From an explanation's cases and whole-document findings; empty where no mode has a speedup.
std::vector<Finding> mode_verdicts(const Explanation& e);

}  // namespace mpbench::profiler
