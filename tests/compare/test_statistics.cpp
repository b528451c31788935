#include "compare/statistics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace mpbench::compare {
namespace {

// ---------------------------------------------------------------- Mann-Whitney U

TEST(MannWhitney, CompleteSeparationOfFiveAgainstFiveIsExact) {
  const auto t = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_NEAR(t.p_value, 2.0 / 252, 1e-12);  // 2 of the C(10,5) arrangements are this extreme
}

TEST(MannWhitney, InterleavedSmallSamples) {
  // U = 3 (3>2, 5>2, 5>4). Counts of U for 3 vs 3 are 1,1,2,3,3,3,3,2,1,1 (of 20): P(U<=3) = 7/20.
  const auto t = mann_whitney_u({1, 3, 5}, {2, 4, 6});
  EXPECT_DOUBLE_EQ(t.u, 3);
  EXPECT_NEAR(t.p_value, 0.7, 1e-12);
  const auto swapped = mann_whitney_u({2, 4, 6}, {1, 3, 5});
  EXPECT_DOUBLE_EQ(swapped.u, 6);
  EXPECT_NEAR(swapped.p_value, 0.7, 1e-12);
}

TEST(MannWhitney, TiesUseTheCorrectedNormalApproximation) {
  // By hand: ranks 1 | 3 3 3 | 6 6 6 | 8, R_a = 13, U = 3, mean 8, tie term 2*(27-3) = 48,
  // variance 16/12 * (9 - 48/56) = 10.857, z = (5 - 0.5) / 3.2950 = 1.3657, p = 0.1720.
  const auto t = mann_whitney_u({1, 2, 2, 3}, {2, 3, 3, 4});
  EXPECT_FALSE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 3);
  EXPECT_NEAR(t.p_value, 0.1720, 5e-4);
}

TEST(MannWhitney, AllValuesTiedGiveNoEvidence) {
  EXPECT_DOUBLE_EQ(mann_whitney_u({1, 1, 1}, {1, 1, 1}).p_value, 1.0);
}

TEST(MannWhitney, LargeSamplesUseTheNormalApproximation) {
  std::vector<double> a(30), b(30);
  std::iota(a.begin(), a.end(), 0.0);
  std::iota(b.begin(), b.end(), 100.0);
  const auto t = mann_whitney_u(a, b);
  EXPECT_FALSE(t.exact);
  EXPECT_LT(t.p_value, 1e-9);
}

TEST(MannWhitney, SmallestPValueDecidesWhetherTheTestCanBeUsed) {
  EXPECT_NEAR(smallest_p_value(3, 3), 0.1, 1e-12);
  EXPECT_NEAR(smallest_p_value(4, 4), 2.0 / 70, 1e-12);
  EXPECT_FALSE(rank_test_can_decide(3, 3, 0.05));
  EXPECT_TRUE(rank_test_can_decide(4, 4, 0.05));
  EXPECT_FALSE(rank_test_can_decide(1, 40, 0.05));
}

TEST(MannWhitney, NeedsValuesOnBothSides) {
  EXPECT_THROW(mann_whitney_u({}, {1.0}), std::invalid_argument);
}

// ---------------------------------------------------------------- Student's t

TEST(StudentT, DistributionMatchesTheClosedFormsOfOneAndTwoDegreesOfFreedom) {
  // df = 1 is Cauchy: F(t) = 1/2 + atan(t)/pi. df = 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
  for (double t : {-3.0, -0.5, 0.0, 1.0, 4.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / M_PI, 1e-12) << t;
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-12) << t;
  }
}

TEST(StudentT, QuantilesInvertTheClosedForms) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), std::tan(M_PI * 0.475), 1e-9);  // 12.7062
  // df = 2: t = (2p - 1) sqrt(2 / (4p(1 - p))).
  EXPECT_NEAR(student_t_quantile(0.995, 2), 0.99 * std::sqrt(2 / (4 * 0.995 * 0.005)), 1e-9);  // 9.9248
  EXPECT_NEAR(student_t_quantile(0.025, 1), -std::tan(M_PI * 0.475), 1e-9);
}

TEST(StudentT, QuantilesOfPrintedTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.776, 5e-4);
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.604, 5e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.960, 5e-4);  // the normal distribution's
}

// The t with student_t_cdf(t, df) = p for p > 0.5, by bisection alone: slow and plainly right.
double bisected_quantile(double p, double df) {
  double low = 0, high = 1;
  while (student_t_cdf(high, df) < p) high *= 2;
  for (int i = 0; i < 200 && high - low > 1e-13 * high; ++i) {
    const double middle = (low + high) / 2;
    (student_t_cdf(middle, df) < p ? low : high) = middle;
  }
  return (low + high) / 2;
}

// On fresh p and fractional degrees of freedom (as Welch's are): bisection's quantile, and asking
// again (the kept answer) gives the same bits.
TEST(StudentT, QuantilesAreBisectionsOfTheCdf) {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < 500; ++i) {
    const double p = 0.5 + 0.4999 * unit(random), df = 0.5 + 200 * unit(random) * unit(random);
    const double t = student_t_quantile(p, df);
    EXPECT_NEAR(t, bisected_quantile(p, df), 1e-9 * std::max(1.0, t)) << "p " << p << " df " << df;
    EXPECT_EQ(student_t_quantile(p, df), t);
    EXPECT_EQ(student_t_quantile(1 - p, df), -t);
  }
}

TEST(StudentT, QuantileRejectsImpossibleArguments) {
  EXPECT_THROW(student_t_quantile(1.0, 4), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.5, 0), std::invalid_argument);
}

// ---------------------------------------------------------------- between runs

TEST(LogDifference, ThreeRunsPerSideByHand) {
  // ln base = 0, 0.1, 0.2 (mean 0.1); ln new = 0.3, 0.4, 0.5 (mean 0.4). Each side's squared
  // deviations sum to 0.02: pooled variance 0.04 / 4 = 0.01, spread 0.1, standard error
  // 0.1 * sqrt(2/3) = 0.08165; at alpha 0.05, t(0.975, 4) = 2.7764 gives a half width of 0.22670.
  const auto d = log_difference({1, std::exp(0.1), std::exp(0.2)}, {std::exp(0.3), std::exp(0.4), std::exp(0.5)}, 0.05);
  EXPECT_NEAR(d.estimate, 0.3, 1e-12);
  EXPECT_NEAR(d.spread, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(d.degrees_of_freedom, 4);
  EXPECT_NEAR(d.low, 0.3 - 0.22670, 1e-5);
  EXPECT_NEAR(d.high, 0.3 + 0.22670, 1e-5);
  // At alpha 0.01, t(0.995, 4) = 4.6041: half width 0.37592, and the interval reaches below zero.
  const auto wide = log_difference({1, std::exp(0.1), std::exp(0.2)}, {std::exp(0.3), std::exp(0.4), std::exp(0.5)}, 0.01);
  EXPECT_NEAR(wide.low, 0.3 - 0.37592, 1e-5);
  EXPECT_LT(wide.low, 0);
}

TEST(LogDifference, OneRunAgainstAHistoryTakesTheHistorysSpread) {
  // ln base = 0.1, 0.3 (spread sqrt(0.02) = 0.14142, df 1); new one run at 0: estimate -0.2,
  // standard error 0.14142 * sqrt(1/2 + 1) = 0.17321.
  const auto d = log_difference({std::exp(0.1), std::exp(0.3)}, {1.0}, 0.05);
  EXPECT_NEAR(d.estimate, -0.2, 1e-12);
  EXPECT_NEAR(d.spread, std::sqrt(0.02), 1e-12);
  EXPECT_DOUBLE_EQ(d.degrees_of_freedom, 1);
  EXPECT_NEAR(d.high - d.estimate, std::tan(M_PI * 0.475) * 0.173205, 1e-4);
}

TEST(LogDifference, NeedsThreeValuesAndPositiveOnes) {
  EXPECT_THROW(log_difference({1.0}, {2.0}, 0.05), std::invalid_argument);
  EXPECT_THROW(log_difference({}, {1.0, 2.0}, 0.05), std::invalid_argument);
  EXPECT_THROW(log_difference({1.0, 0.0}, {2.0}, 0.05), std::invalid_argument);
}

TEST(NoChangeBand, IsTheThresholdInLogSpace) {
  const auto band = NoChangeBand::of(0.05);
  EXPECT_NEAR(band.low, std::log(0.95), 1e-12);
  EXPECT_NEAR(band.high, std::log(1.05), 1e-12);
  EXPECT_TRUE(band.contains(-0.05, 0.048));
  EXPECT_FALSE(band.contains(-0.06, 0.0));
  EXPECT_FALSE(band.contains(0.0, 0.05));
}

TEST(RunsToSettle, AClearChangeNeedsFewRuns) {
  // Estimate 0.3, spread 0.1, alpha 0.05: the interval must stay above ln 1.05 = 0.0488, so its
  // half width below 0.2512. 2 runs give t(0.975, 2) * 0.1 = 0.43; 3 runs give
  // 2.776 * 0.1 * sqrt(2/3) = 0.227.
  EXPECT_EQ(runs_to_settle(0.3, 0.1, NoChangeBand::of(0.05), 0.05, 30), 3);
}

TEST(RunsToSettle, NoChangeNeedsTheIntervalInsideTheBand) {
  // Estimate 0, spread 0.02, alpha 0.01, band up to ln 1.05 = 0.04879: 4 runs give
  // t(0.995, 6) * 0.02 * sqrt(1/2) = 3.707 * 0.01414 = 0.0524, too wide; 5 runs give
  // t(0.995, 8) * 0.02 * sqrt(2/5) = 3.355 * 0.01265 = 0.0424.
  EXPECT_EQ(runs_to_settle(0.0, 0.02, NoChangeBand::of(0.05), 0.01, 30), 5);
}

TEST(RunsToSettle, BeyondTheLimitIsNone) {
  // Spread 0.1 around no change needs 34 runs per side at alpha 0.05.
  EXPECT_EQ(runs_to_settle(0.0, 0.1, NoChangeBand::of(0.05), 0.05, 30), std::nullopt);
  EXPECT_EQ(runs_to_settle(0.0, 0.1, NoChangeBand::of(0.05), 0.05, 50), 34);
}

}  // namespace
}  // namespace mpbench::compare
