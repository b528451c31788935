#include "history/change_points.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpbench::history {
namespace {

// A seed that differs from run to run; the tests print it, and MPBENCH_TEST_SEED set to the printed
// value replays a failure.
std::uint64_t fresh_seed() {
  if (const char* replay = std::getenv("MPBENCH_TEST_SEED")) return std::stoull(replay);
  std::random_device device;
  return (std::uint64_t{device()} << 32) | device();
}

// A history of runs at piecewise constant levels ({runs, level} in run order), each run's value off
// its level by a lognormal factor of spread `cv`.
struct Level {
  int runs;
  double level;
};
std::vector<double> noisy_series(const std::vector<Level>& levels, double cv, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, cv);
  std::vector<double> values;
  for (const Level& l : levels)
    for (int i = 0; i < l.runs; ++i) values.push_back(l.level * std::exp(noise(rng)));
  return values;
}

const ChangePoint* change_near(const std::vector<ChangePoint>& points, std::size_t index, std::size_t within) {
  for (const ChangePoint& p : points)
    if (p.index + within >= index && p.index <= index + within) return &p;
  return nullptr;
}

bool has_change_near(const std::vector<ChangePoint>& points, std::size_t index, std::size_t within) {
  return change_near(points, index, within) != nullptr;
}

// The share of `trials` series of 30 runs at 1 and 30 at 1 + step that have a change point within 3
// runs of run 30.
double detection_rate(double step, double cv, int trials, std::mt19937_64& rng) {
  int found = 0;
  for (int t = 0; t < trials; ++t) {
    const auto values = noisy_series({{30, 1.0}, {30, 1.0 + step}}, cv, rng);
    found += has_change_near(find_change_points(values, rng()), 30, 3);
  }
  return static_cast<double>(found) / trials;
}

// The share of `trials` series made by `make` that have any change point.
template <class Make>
double flagged_rate(int trials, std::mt19937_64& rng, Make make) {
  int flagged = 0;
  for (int t = 0; t < trials; ++t) flagged += !find_change_points(make(), rng()).empty();
  return static_cast<double>(flagged) / trials;
}

// The most a false-flag rate of `trials` series may exceed the significance level by: 4 standard
// deviations of the binomial count (at 1%, a correct level fails this with probability 3e-4 over
// 1,000 series, 6e-4 over 500).
double binomial_margin(double alpha, int trials) { return 4 * std::sqrt(alpha * (1 - alpha) / trials); }

// ---------------------------------------------------------------- the statistic

TEST(EnergyStatistics, MatchesTheDefinitionAtEverySplit) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<double> series = noisy_series({{7, 1.0}, {6, 1.3}}, 0.2, rng);
  series.push_back(series[2]);  // a tie
  const std::size_t n = series.size(), min_segment = 2;
  const auto q = energy_statistics(series, min_segment);
  ASSERT_EQ(q.size(), n - 2 * min_segment + 1);
  for (std::size_t at = min_segment; at + min_segment <= n; ++at) {
    double between = 0, within_left = 0, within_right = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = i + 1; k < n; ++k) {
        const double d = std::abs(series[i] - series[k]);
        (k < at ? within_left : i >= at ? within_right : between) += d;
      }
    const double n_l = static_cast<double>(at), n_r = static_cast<double>(n - at);
    const double expected = n_l * n_r / (n_l + n_r) *
                            (2 * between / (n_l * n_r) - within_left / (n_l * (n_l - 1) / 2) -
                             within_right / (n_r * (n_r - 1) / 2));
    EXPECT_NEAR(q[at - min_segment], expected, 1e-12) << "split at " << at;
  }
}

TEST(EnergyStatistics, EmptyBelowTwoSegments) {
  EXPECT_TRUE(energy_statistics({}, 3).empty());
  EXPECT_TRUE(energy_statistics({1, 2, 3, 4, 5}, 3).empty());
  EXPECT_EQ(energy_statistics({1, 2, 3, 4, 5, 6}, 3).size(), 1u);
}

// ---------------------------------------------------------------- detection

TEST(ChangePoints, FivePercentStepInOnePercentNoise) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  EXPECT_GE(detection_rate(0.05, 0.01, 100, rng), 0.95);
}

struct StepCase {
  double step, cv;
  double min_rate;  // 4 standard deviations (of 400 series) below the rate measured on 2,000 (docs)
};

class StepDetection : public ::testing::TestWithParam<StepCase> {};

TEST_P(StepDetection, FoundWithinThreeRuns) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  EXPECT_GE(detection_rate(GetParam().step, GetParam().cv, 400, rng), GetParam().min_rate);
}

INSTANTIATE_TEST_SUITE_P(Steps, StepDetection,
                         ::testing::Values(StepCase{0.20, 0.01, 0.95}, StepCase{0.20, 0.03, 0.95},
                                           StepCase{0.20, 0.05, 0.95}, StepCase{0.05, 0.03, 0.78},
                                           StepCase{0.05, 0.05, 0.31}, StepCase{0.03, 0.01, 0.95},
                                           StepCase{0.03, 0.03, 0.35}, StepCase{0.03, 0.05, 0.02}),
                         [](const ::testing::TestParamInfo<StepCase>& info) {
                           return "step" + std::to_string(std::lround(info.param.step * 100)) + "pct_cv" +
                                  std::to_string(std::lround(info.param.cv * 100)) + "pct";
                         });

TEST(ChangePoints, ReportsTheLevelsAroundAStep) {
  // A +10% step in a repeating ±1% pattern: medians known exactly, and no permutation separates
  // the levels as well as the run order does.
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<double> values;
  for (int i = 0; i < 60; ++i) values.push_back((i < 30 ? 2.0 : 2.2) * (1 + 0.01 * (i % 3 - 1)));
  const auto points = find_change_points(values, seed);
  ASSERT_EQ(points.size(), 1u);
  const ChangePoint& p = points[0];
  EXPECT_EQ(p.index, 30u);
  EXPECT_DOUBLE_EQ(p.before, 2.0);
  EXPECT_DOUBLE_EQ(p.after, 2.2);
  EXPECT_NEAR(p.relative_change, 0.1, 1e-12);
  EXPECT_LT(p.low, p.relative_change);
  EXPECT_GT(p.high, p.relative_change);
  EXPECT_GT(p.low, 0.09);
  EXPECT_DOUBLE_EQ(p.p_value, 1.0 / (ChangePointOptions{}.permutations + 1));
}

TEST(ChangePoints, BothOfTwoStepsAreFound) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  int both = 0;
  const int trials = 100;
  for (int t = 0; t < trials; ++t) {
    const auto values = noisy_series({{30, 1.0}, {30, 1.1}, {30, 1.0}}, 0.02, rng);
    const auto points = find_change_points(values, rng());
    both += has_change_near(points, 30, 3) && has_change_near(points, 60, 3);
  }
  EXPECT_GE(both, 95);
}

// ---------------------------------------------------------------- no change

TEST(ChangePoints, StepFreeSeriesAreFlaggedAtTheSignificanceLevel) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> cv(0.01, 0.05);
  const int trials = 1000;
  const double rate = flagged_rate(trials, rng, [&] { return noisy_series({{40, 1.0}}, cv(rng), rng); });
  const double alpha = ChangePointOptions{}.alpha;
  EXPECT_LE(rate, alpha + binomial_margin(alpha, trials));
}

TEST(ChangePoints, AnOutlierAloneIsNoChangePoint) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> where(0, 39);
  std::uniform_real_distribution<double> cv(0.01, 0.05);
  const int trials = 500;
  const double rate = flagged_rate(trials, rng, [&] {
    auto values = noisy_series({{40, 1.0}}, cv(rng), rng);
    values[where(rng)] *= rng() % 2 ? 2.0 : 0.6;  // a run twice as slow, or a lucky one
    return values;
  });
  const double alpha = ChangePointOptions{}.alpha;
  EXPECT_LE(rate, alpha + binomial_margin(alpha, trials));
}

TEST(ChangePoints, ASlowDriftIsCutIntoSteps) {
  // +10% over 60 runs in 1% noise: a change of distribution that E-Divisive cuts into segments,
  // 2 to 6 of them measured (docs/history-change-points.md).
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<double> values;
  for (int i = 0; i < 60; ++i) values.push_back((1 + 0.1 * i / 59) * std::exp(noise(rng)));
  const auto points = find_change_points(values, rng());
  ASSERT_GE(points.size(), 2u);
  EXPECT_LT(points.front().before, points.back().after);
}

// ---------------------------------------------------------------- edge cases

TEST(ChangePoints, TooShortOrConstantSeriesHaveNone) {
  EXPECT_TRUE(find_change_points({}, 1).empty());
  EXPECT_TRUE(find_change_points({1.0}, 1).empty());
  EXPECT_TRUE(find_change_points({1.0, 2.0}, 1).empty());
  EXPECT_TRUE(find_change_points({1, 1, 1, 2, 2}, 1).empty());  // below two segments of 3
  EXPECT_TRUE(find_change_points(std::vector<double>(50, 0.3), 1).empty());
}

TEST(ChangePoints, TheSameSeedGivesTheSameAnswer) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const auto values = noisy_series({{20, 1.0}, {20, 1.03}, {20, 0.98}}, 0.02, rng);
  const auto a = find_change_points(values, seed), b = find_change_points(values, seed);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].p_value, b[i].p_value);
  }
}

TEST(ChangePoints, RejectsValuesThatAreNotPositive) {
  EXPECT_THROW(find_change_points({1, 0, 1}, 1), std::invalid_argument);
  EXPECT_THROW(find_change_points({1, -2}, 1), std::invalid_argument);
  EXPECT_THROW(find_change_points({1, std::numeric_limits<double>::quiet_NaN()}, 1), std::invalid_argument);
  EXPECT_THROW(find_change_points({1, std::numeric_limits<double>::infinity()}, 1), std::invalid_argument);
}

TEST(ChangePoints, RejectsOptionsOutOfRange) {
  const std::vector<double> values{1, 2, 3};
  EXPECT_THROW(find_change_points(values, 1, {.alpha = 0}), std::invalid_argument);
  EXPECT_THROW(find_change_points(values, 1, {.alpha = 1}), std::invalid_argument);
  EXPECT_THROW(find_change_points(values, 1, {.permutations = 0}), std::invalid_argument);
  EXPECT_THROW(find_change_points(values, 1, {.alpha = 0.01, .permutations = 98}), std::invalid_argument);
  EXPECT_NO_THROW(find_change_points(values, 1, {.alpha = 0.01, .permutations = 99}));
  EXPECT_THROW(find_change_points(values, 1, {.min_segment = 1}), std::invalid_argument);
}

}  // namespace
}  // namespace mpbench::history
