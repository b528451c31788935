#pragma once
// The terminal summary of a run: per suite, each case with its time, its spread (marked * where the
// sampler stopped before reaching its noise target, with a footnote counting them), rate, share of
// the peak or of the copy ceiling, its speedup over fp32 on the same shape, and what the library chose.
#include <string>

#include "core/result.hpp"

namespace mpbench::microbench {

std::string format_summary(const ResultDocument& document);

}  // namespace mpbench::microbench
