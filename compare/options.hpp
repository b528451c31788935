#pragma once
#include <string>
#include <string_view>

namespace mpbench::compare {

struct Options {
  double threshold = 0.05;        // smallest relative change that counts
  double alpha = 0.01;            // significance level of the tests; intervals are 1 - alpha
  bool absolute = false;          // also compare the times of cases tracked by a ratio
  std::string baseline = "fp32";  // the precision speedups are taken over
  int min_runs = 1;               // runs each side must have
};

// "5%" or "0.05" -> 0.05. Throws UsageError for anything else (negative, "5" without a percent sign).
double parse_threshold(std::string_view text);

// The significance level of compare's tests: smaller than kMinAlpha asks the t quantiles for more
// than doubles give; above kMaxAlpha an interval is narrower than the estimate's own spread.
inline constexpr double kMinAlpha = 1e-9, kMaxAlpha = 0.5;
// "0.01" -> 0.01. Throws UsageError naming the range for anything outside it, 0 among them.
double parse_alpha(std::string_view text);

}  // namespace mpbench::compare
