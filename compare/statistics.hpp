#pragma once
// The tests behind compare's verdicts: Mann-Whitney U on the samples inside one run, and
// Student's t on the figures of several runs (one value per run, in log scale), where run-to-run
// drift shows and the samples inside one run cannot show it.
#include <cstddef>
#include <optional>
#include <vector>

#include "core/stats.hpp"

namespace mpbench::compare {

// ---- Mann-Whitney U (two-sided) ----

struct RankTest {
  double u = 0;        // U of the first sample: pairs where it is larger, ties count 1/2
  double p_value = 1;  // two-sided
  bool exact = false;  // exact distribution (small samples, no ties) or normal approximation
};

// Needs at least one value on each side.
RankTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);
// The smallest two-sided p-value samples of these sizes can give (complete separation, no ties).
double smallest_p_value(std::size_t n_a, std::size_t n_b);
// Whether samples of these sizes can reach significance at all; below that the spreads decide.
bool rank_test_can_decide(std::size_t n_a, std::size_t n_b, double alpha);

// ---- Student's t ----

// The noise of a measured time's mean ln value: the variance of that mean and its degrees of
// freedom. From the samples where kept; where a document left them out, from its summary
// (stddev / mean as the spread of the ln times, for small spreads, and its sample count).
struct MeanLogNoise {
  double variance = 0;
  double degrees_of_freedom = 0;
};
// Empty with fewer than two samples, or a summary without a positive mean.
std::optional<MeanLogNoise> mean_log_noise(const Statistics& s);
// Two independent means' noise, as that of their difference: variances and degrees of freedom add.
MeanLogNoise operator+(const MeanLogNoise& a, const MeanLogNoise& b);

double student_t_cdf(double t, double degrees_of_freedom);
// The t with student_t_cdf(t, df) = p; p in (0, 1), df > 0.
double student_t_quantile(double p, double degrees_of_freedom);

// mean(ln current) - mean(ln base) over the runs of each side, with its (1 - alpha) confidence
// interval from Student's t with the variance pooled over both sides (runs of one machine and one
// suite selection spread alike; with one run on a side, the other side's runs give the spread).
struct LogDifference {
  double estimate = 0;
  double low = 0, high = 0;
  double spread = 0;  // pooled standard deviation of one run's ln value: the relative spread between runs
  double degrees_of_freedom = 0;
};

// Values must be positive; needs a value on each side and at least three in all (throws
// std::invalid_argument otherwise).
LogDifference log_difference(const std::vector<double>& base, const std::vector<double>& current, double alpha);

// The band of ln(new/base) that counts as no change: [ln(1 - threshold), ln(1 + threshold)].
struct NoChangeBand {
  double low = 0, high = 0;
  static NoChangeBand of(double threshold);
  bool contains(double low_end, double high_end) const { return low_end >= low && high_end <= high; }
};

// The smallest number of runs per side (2 to `limit`) at which an interval around `estimate`,
// with `spread` between runs, would decide: reach across neither edge of the band. Empty when even
// `limit` runs would not (an estimate on the band's edge).
std::optional<int> runs_to_settle(double estimate, double spread, const NoChangeBand& band, double alpha, int limit);

}  // namespace mpbench::compare
