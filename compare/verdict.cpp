#include "compare/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "compare/statistics.hpp"

namespace mpbench::compare {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::regressed: return "regressed";
    case Verdict::improved: return "improved";
    case Verdict::noisy: return "noisy";
    case Verdict::same: return "same";
  }
  return "same";
}

std::string_view noise_test_name(NoiseTest t) {
  switch (t) {
    case NoiseTest::spread: return "spread";
    case NoiseTest::rank: return "mann-whitney-u";
    case NoiseTest::between_runs: return "between-runs";
    case NoiseTest::samples: return "t-on-samples";
  }
  return "spread";
}

namespace {

// ln(new / base) with its interval, the spread of one run, and whether the rank test (where it
// applies) found the samples apart.
struct Evidence {
  double estimate = 0, low = 0, high = 0;
  double run_spread = 0;
  bool significant = true;
};

std::vector<double> values_of(const std::vector<RunFigure>& figures) {
  std::vector<double> values;
  for (const auto& f : figures) values.push_back(f.value);
  return values;
}

double geometric_mean(const std::vector<double>& values) {
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(values.size()));
}

Evidence between_runs(Comparison& c, const std::vector<RunFigure>& base, const std::vector<RunFigure>& current,
                      const Options& options) {
  const LogDifference d = log_difference(values_of(base), values_of(current), options.alpha);
  c.test = NoiseTest::between_runs;
  c.noise = d.spread;
  return {d.estimate, d.low, d.high, d.spread};
}

// One run per side. Where every case behind both figures has a noise (its samples, or a summary of
// two or more): Student's t on the
// change of their mean ln times (the variances of independent means add), the interval explain
// reads its speedups with; else the band of both runs' spreads (in log space a halving and a
// doubling are equally far). For times, the rank test on the samples where they can reach alpha.
Evidence within_one_run(Comparison& c, const RunFigure& base, const RunFigure& current, const Options& options) {
  const double estimate = std::log(current.value / base.value);
  c.noise = std::hypot(base.spread, current.spread);
  Evidence e{estimate, estimate - c.noise, estimate + c.noise, c.noise / std::sqrt(2.0)};
  if (base.noise && current.noise) {
    const MeanLogNoise both = *base.noise + *current.noise;
    const double half_width = student_t_quantile(1 - options.alpha / 2, both.degrees_of_freedom) * std::sqrt(both.variance);
    c.test = NoiseTest::samples;
    e.low = estimate - half_width;
    e.high = estimate + half_width;
  }
  if (c.metric == Metric::seconds && rank_test_can_decide(base.samples.size(), current.samples.size(), options.alpha)) {
    c.test = NoiseTest::rank;
    c.p_value = mann_whitney_u(base.samples, current.samples).p_value;
    e.significant = *c.p_value < options.alpha;
  }
  return e;
}

// The whole interval beyond the threshold (and, where the rank test spoke, significant), within
// it, or across one of its edges.
Verdict verdict_of(const Comparison& c, const Evidence& e, const NoChangeBand& band) {
  if (e.significant && (e.low > band.high || e.high < band.low)) {
    const bool better = (e.estimate > 0) == higher_is_better(c.metric);
    return better ? Verdict::improved : Verdict::regressed;
  }
  return band.contains(e.low, e.high) ? Verdict::same : Verdict::noisy;
}

std::size_t unconverged(const std::vector<RunFigure>& figures) {
  std::size_t n = 0;
  for (const auto& f : figures) n += f.converged ? 0 : 1;
  return n;
}

bool mostly_unconverged(const std::vector<RunFigure>& figures) { return 2 * unconverged(figures) > figures.size(); }

// The typical own spread of one run of the side: the root mean square of its runs' spreads.
double own_spread(const std::vector<RunFigure>& figures) {
  double squares = 0;
  for (const auto& f : figures) squares += f.spread * f.spread;
  return std::sqrt(squares / static_cast<double>(figures.size()));
}

// The band of the runs' own spreads around the estimate, as one run per side has it: a run that
// stopped before its noise target may have missed its typical time by about its spread, and the
// runs' agreement cannot vouch for runs that did not settle. The interval widens to cover it.
// Returns whether that band alone leaves the verdict open (reaches across an edge of `band`).
bool cover_own_spread(Evidence& e, const std::vector<RunFigure>& base, const std::vector<RunFigure>& current,
                      const NoChangeBand& band) {
  const double own = std::hypot(own_spread(base), own_spread(current));
  const double low = e.estimate - own, high = e.estimate + own;
  e.low = std::min(e.low, low);
  e.high = std::max(e.high, high);
  return !(low > band.high || high < band.low || band.contains(low, high));
}

}  // namespace

Comparison judge(Comparison c, const std::vector<RunFigure>& base, const std::vector<RunFigure>& current,
                 const Options& options) {
  if (base.empty() || current.empty()) throw std::invalid_argument("judge needs a figure on each side");
  c.base_runs = base.size();
  c.current_runs = current.size();
  c.unconverged_runs = unconverged(base) + unconverged(current);
  c.base = geometric_mean(values_of(base));
  c.current = geometric_mean(values_of(current));
  c.change = c.current / c.base - 1;
  Evidence e = base.size() + current.size() > 2 ? between_runs(c, base, current, options)
                                                      : within_one_run(c, base.front(), current.front(), options);
  const auto band = NoChangeBand::of(options.threshold);
  c.short_of_noise_target = mostly_unconverged(base) || mostly_unconverged(current);
  const bool own_spread_open = c.short_of_noise_target && cover_own_spread(e, base, current, band);
  c.change_low = std::expm1(e.low);
  c.change_high = std::expm1(e.high);
  c.verdict = verdict_of(c, e, band);
  c.needs_longer_runs = c.verdict == Verdict::noisy && own_spread_open;
  if (c.verdict == Verdict::noisy && !c.needs_longer_runs)
    c.runs_to_settle = runs_to_settle(e.estimate, e.run_spread, band, options.alpha, kMostRunsToSuggest);
  return c;
}

}  // namespace mpbench::compare
