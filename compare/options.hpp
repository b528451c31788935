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

}  // namespace mpbench::compare
