#include "compare/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

namespace mpbench::compare {

// ---------------------------------------------------------------- Mann-Whitney U

namespace {

constexpr std::size_t kExactLimit = 50;  // total samples; keeps the exact counts below 2^53

// Probability of each U for samples of sizes n_a, n_b without ties. The counts are the
// coefficients of the Gaussian binomial [n_a + n_b choose n_a] in q, built as
// prod_{i=1..n_a} (1 - q^(n_b + i)) / (1 - q^i).
std::vector<double> u_distribution(std::size_t n_a, std::size_t n_b) {
  std::vector<double> counts(n_a * n_b + 1, 0.0);
  counts[0] = 1;
  for (std::size_t i = 1; i <= n_a; ++i) {
    for (std::size_t j = counts.size(); j-- > n_b + i;) counts[j] -= counts[j - n_b - i];
    for (std::size_t j = i; j < counts.size(); ++j) counts[j] += counts[j - i];
  }
  double total = 0;
  for (double c : counts) total += c;
  for (double& c : counts) c /= total;
  return counts;
}

struct Ranked {
  double rank_sum_a = 0;
  double tie_term = 0;  // sum of t^3 - t over groups of t tied values
};

Ranked rank(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<std::pair<double, bool>> all;  // value, from a
  for (double v : a) all.emplace_back(v, true);
  for (double v : b) all.emplace_back(v, false);
  std::sort(all.begin(), all.end());
  Ranked r;
  for (std::size_t first = 0; first < all.size();) {
    std::size_t last = first;
    while (last + 1 < all.size() && all[last + 1].first == all[first].first) ++last;
    const double average_rank = 0.5 * static_cast<double>(first + last) + 1;
    for (std::size_t i = first; i <= last; ++i)
      if (all[i].second) r.rank_sum_a += average_rank;
    const double t = static_cast<double>(last - first + 1);
    r.tie_term += t * t * t - t;
    first = last + 1;
  }
  return r;
}

double normal_approximation_p(double u, double n_a, double n_b, double tie_term) {
  const double n = n_a + n_b;
  const double variance = n_a * n_b / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (variance <= 0) return 1;  // every value tied
  const double z = std::max(0.0, std::abs(u - n_a * n_b / 2) - 0.5) / std::sqrt(variance);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

}  // namespace

RankTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) throw std::invalid_argument("Mann-Whitney U needs values on both sides");
  const double n_a = static_cast<double>(a.size()), n_b = static_cast<double>(b.size());
  const Ranked r = rank(a, b);
  RankTest test;
  test.u = r.rank_sum_a - n_a * (n_a + 1) / 2;
  test.exact = r.tie_term == 0 && a.size() + b.size() <= kExactLimit;
  if (!test.exact) {
    test.p_value = normal_approximation_p(test.u, n_a, n_b, r.tie_term);
    return test;
  }
  const auto distribution = u_distribution(a.size(), b.size());
  const auto smaller_tail = static_cast<std::size_t>(std::min(test.u, n_a * n_b - test.u));
  double tail = 0;
  for (std::size_t u = 0; u <= smaller_tail; ++u) tail += distribution[u];
  test.p_value = std::min(1.0, 2 * tail);
  return test;
}

double smallest_p_value(std::size_t n_a, std::size_t n_b) {
  const double log_arrangements = std::lgamma(static_cast<double>(n_a + n_b + 1)) -
                                  std::lgamma(static_cast<double>(n_a + 1)) -
                                  std::lgamma(static_cast<double>(n_b + 1));
  return std::min(1.0, 2 * std::exp(-log_arrangements));
}

bool rank_test_can_decide(std::size_t n_a, std::size_t n_b, double alpha) {
  return n_a >= 2 && n_b >= 2 && smallest_p_value(n_a, n_b) < alpha;
}

// ---------------------------------------------------------------- Student's t

namespace {

// Continued fraction of the regularized incomplete beta function (modified Lentz's method),
// which converges fast for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  const auto guarded = [](double v) { return std::abs(v) < kTiny ? kTiny : v; };
  double c = 1, d = 1 / guarded(1 - (a + b) * x / (a + 1)), result = d;
  for (int m = 1; m <= 500; ++m) {
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 / guarded(1 + even * d);
    c = guarded(1 + even / c);
    result *= d * c;
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 / guarded(1 + odd * d);
    c = guarded(1 + odd / c);
    result *= d * c;
    if (std::abs(d * c - 1) < kEpsilon) break;
  }
  return result;
}

// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double df) {
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

namespace {

// The density of Student's t with df degrees of freedom at t.
double student_t_density(double t, double df) {
  const double log_norm = std::lgamma((df + 1) / 2) - std::lgamma(df / 2) - 0.5 * std::log(df * M_PI);
  return std::exp(log_norm - (df + 1) / 2 * std::log1p(t * t / df));
}

// Newton's method on the CDF inside a bracket that every step narrows, bisecting wherever a Newton
// step would leave it: a handful of CDF evaluations where bisection alone took forty (the
// quantile of every comparison was a third of comparing 10^6 cases).
double quantile_above_half(double p, double df) {
  double low = 0, high = 1;
  while (student_t_cdf(high, df) < p) high *= 2;
  double t = high / 2;
  for (int i = 0; i < 200; ++i) {
    const double miss = student_t_cdf(t, df) - p;
    if (miss == 0) return t;
    (miss < 0 ? low : high) = t;
    const double newton = t - miss / student_t_density(t, df);
    const double next = newton > low && newton < high ? newton : (low + high) / 2;
    if (std::abs(next - t) <= 1e-12 * next) return next;
    t = next;
  }
  return t;
}

}  // namespace

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) throw std::invalid_argument("student_t_quantile needs 0 < p < 1 and df > 0");
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  // Cases measured alike share their degrees of freedom, and runs_to_settle asks for the same few
  // again and again: the answers are kept (a bounded table, per thread).
  thread_local std::map<std::pair<double, double>, double> known;
  if (const auto found = known.find({p, df}); found != known.end()) return found->second;
  if (known.size() >= 4096) known.clear();
  return known[{p, df}] = quantile_above_half(p, df);
}

// ---------------------------------------------------------------- between runs

namespace {

struct LogSample {
  double mean = 0, squares = 0;  // squares: sum of squared deviations from the mean
  std::size_t n = 0;
};

LogSample log_sample(const std::vector<double>& values) {
  LogSample s;
  s.n = values.size();
  for (double v : values) {
    if (!(v > 0)) throw std::invalid_argument("log_difference needs positive values");
    s.mean += std::log(v) / static_cast<double>(s.n);
  }
  for (double v : values) s.squares += (std::log(v) - s.mean) * (std::log(v) - s.mean);
  return s;
}

}  // namespace

std::optional<MeanLogNoise> mean_log_noise(const Statistics& s) {
  if (s.values.size() >= 2) {
    const double n = static_cast<double>(s.values.size());
    double mean = 0, squares = 0;
    for (double v : s.values) mean += std::log(v) / n;
    for (double v : s.values) squares += (std::log(v) - mean) * (std::log(v) - mean);
    return MeanLogNoise{squares / (n - 1) / n, n - 1};
  }
  if (!s.values.empty() || s.samples < 2 || !(s.mean > 0)) return std::nullopt;
  const double n = static_cast<double>(s.samples), spread = s.relative_spread();
  return MeanLogNoise{spread * spread / n, n - 1};
}

MeanLogNoise operator+(const MeanLogNoise& a, const MeanLogNoise& b) {
  return {a.variance + b.variance, a.degrees_of_freedom + b.degrees_of_freedom};
}

LogDifference log_difference(const std::vector<double>& base, const std::vector<double>& current, double alpha) {
  if (base.empty() || current.empty() || base.size() + current.size() < 3)
    throw std::invalid_argument("log_difference needs a value on each side and three in all");
  const LogSample b = log_sample(base), c = log_sample(current);
  LogDifference d;
  d.estimate = c.mean - b.mean;
  d.degrees_of_freedom = static_cast<double>(b.n + c.n - 2);
  d.spread = std::sqrt((b.squares + c.squares) / d.degrees_of_freedom);
  const double standard_error = d.spread * std::sqrt(1.0 / static_cast<double>(b.n) + 1.0 / static_cast<double>(c.n));
  const double half_width = student_t_quantile(1 - alpha / 2, d.degrees_of_freedom) * standard_error;
  d.low = d.estimate - half_width;
  d.high = d.estimate + half_width;
  return d;
}

NoChangeBand NoChangeBand::of(double threshold) {
  return {threshold < 1 ? std::log1p(-threshold) : -INFINITY, std::log1p(threshold)};
}

std::optional<int> runs_to_settle(double estimate, double spread, const NoChangeBand& band, double alpha, int limit) {
  const double to_nearest_edge = std::min(std::abs(estimate - band.low), std::abs(estimate - band.high));
  for (int n = 2; n <= limit; ++n) {
    const double half_width = student_t_quantile(1 - alpha / 2, 2.0 * n - 2) * spread * std::sqrt(2.0 / n);
    if (half_width < to_nearest_edge) return n;
  }
  return std::nullopt;
}

}  // namespace mpbench::compare
