#pragma once
// The verdict on top of explain: for each low-precision mode, one sentence saying whether it pays
// here, is on par or does not (its speedups' intervals against the no-change band, noise_gate.hpp),
// by how much (the median of its speedups whose interval is decided), what limits it (the first
// root cause that fired for it, in kLimitOrder, else the limiting category of its time) and what
// would change that (the fix of that rule). A mode whose every interval reaches across an edge of
// the band gets no cause: the sentence gives the interval and how to rerun.
#include <vector>

#include "profiler/explain.hpp"

namespace mpbench::profiler {

// From an explanation's cases and whole-document findings; empty where no mode has a speedup.
std::vector<Finding> mode_verdicts(const Explanation& e);

}  // namespace mpbench::profiler
