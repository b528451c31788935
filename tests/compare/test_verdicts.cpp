#include "compare/verdict.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compare/render.hpp"
#include "compare/report.hpp"
#include "compare/statistics.hpp"
#include "core/error.hpp"
#include "documents.hpp"

namespace mpbench::compare {
namespace {

using namespace testing;

Report compare_docs(const ResultDocument& base, const ResultDocument& current, Options options = {}) {
  return compare(side_of("base", {base}), side_of("new", {current}), options);
}

Report compare_runs(const std::vector<ResultDocument>& base, const std::vector<ResultDocument>& current,
                    Options options = {}) {
  return compare(side_of("base", base), side_of("new", current), options);
}

const Comparison& find(const Report& r, Metric metric, const std::string& precision = "bf16") {
  for (const auto& c : r.comparisons)
    if (c.metric == metric && c.key.precision == precision) return c;
  throw std::logic_error("no such comparison in the report");
}

const Comparison& only_speedup(const Report& r) { return find(r, Metric::speedup); }

// Runs whose bf16 speedups over fp32 (1 ms) are exactly `speedups`.
std::vector<ResultDocument> runs_with_speedups(const std::vector<double>& speedups, double spread = 0.01) {
  std::vector<ResultDocument> runs;
  for (double s : speedups) runs.push_back(gemm_run(1e-3 / s, spread));
  return runs;
}

// ---------------------------------------------------------------- one run per side

TEST(OneRunPerSide, EqualRunsAreTheSameAndExitZero) {
  const auto r = compare_docs(gemm_run(1e-4), gemm_run(1e-4));
  ASSERT_EQ(r.comparisons.size(), 2u) << "bf16 by its speedup, fp32 by its time";
  EXPECT_EQ(only_speedup(r).verdict, Verdict::same);
  EXPECT_NEAR(only_speedup(r).base, 10.0, 1e-9);
  EXPECT_EQ(find(r, Metric::seconds, "fp32").verdict, Verdict::same);
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
}

TEST(OneRunPerSide, SpeedupTwentyPercentLowerRegressesAndExitsOne) {
  const auto r = compare_docs(gemm_run(1e-4), gemm_run(1.25e-4));  // speedup 10x -> 8x
  const auto& c = only_speedup(r);
  EXPECT_EQ(c.verdict, Verdict::regressed);
  EXPECT_NEAR(c.change, -0.2, 1e-9);
  EXPECT_EQ(c.test, NoiseTest::samples);
  EXPECT_NEAR(c.noise, 0.02, 1e-9);  // four times of 1% spread each
  // Every case kept its 9 samples: the interval is Student's t on the four cases' mean ln times,
  // 0.8 * exp(+-t * sqrt(sum of s^2 / 9)) - 1, with 4 x 8 degrees of freedom.
  double variance_of_means = 0;
  for (double median : {1e-3, 1e-4, 1e-3, 1.25e-4}) {
    double mean = 0, squares = 0;
    const auto values = samples_around(median, 0.01);
    for (double v : values) mean += std::log(v) / 9;
    for (double v : values) squares += (std::log(v) - mean) * (std::log(v) - mean);
    variance_of_means += squares / 8 / 9;
  }
  const double half_width = student_t_quantile(1 - 0.01 / 2, 32) * std::sqrt(variance_of_means);
  EXPECT_NEAR(c.change_low, 0.8 * std::exp(-half_width) - 1, 1e-9);
  EXPECT_NEAR(c.change_high, 0.8 * std::exp(half_width) - 1, 1e-9);
  EXPECT_EQ(c.base_runs, 1u);
  EXPECT_EQ(r.exit_code(), kExitRegressed);
}

TEST(OneRunPerSide, FasterRunImprovesAndExitsZero) {
  const auto r = compare_docs(gemm_run(1e-4), gemm_run(0.8e-4));
  EXPECT_EQ(only_speedup(r).verdict, Verdict::improved);
  EXPECT_EQ(r.count(Verdict::improved), 1u);
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
}

TEST(OneRunPerSide, ChangeWithinTheMeasuredSpreadIsNoisy) {
  // 10% lower speedup, but each time has a 15% spread: the noise band is 30%, which reaches both
  // beyond the threshold and past no change.
  const auto r = compare_docs(gemm_run(1e-4, 0.15), gemm_run(1.11e-4, 0.15));
  const auto& c = only_speedup(r);
  EXPECT_LT(c.change, -0.09);
  EXPECT_GT(c.noise, std::abs(std::log1p(c.change)));
  EXPECT_EQ(c.verdict, Verdict::noisy);
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
}

TEST(OneRunPerSide, ChangeBelowTheThresholdIsTheSameUnlessTheThresholdIsLowered) {
  const auto base = gemm_run(1e-4, 0.001), current = gemm_run(1.04e-4, 0.001);  // 3.8% lower
  EXPECT_EQ(only_speedup(compare_docs(base, current)).verdict, Verdict::same);
  Options strict;
  strict.threshold = 0.02;
  EXPECT_EQ(only_speedup(compare_docs(base, current, strict)).verdict, Verdict::regressed);
}

TEST(OneRunPerSide, AbsoluteTimesUseTheRankTestWhenBothRunsHaveSamples) {
  Options options;
  options.absolute = true;
  const auto r = compare_docs(gemm_run(1e-4), gemm_run(1.25e-4), options);
  const auto& c = find(r, Metric::seconds, "bf16");
  EXPECT_EQ(c.test, NoiseTest::rank);
  ASSERT_TRUE(c.p_value.has_value());
  EXPECT_NEAR(*c.p_value, 2.0 / 48620, 1e-12);  // 9 vs 9, completely separated
  EXPECT_EQ(c.verdict, Verdict::regressed);
  EXPECT_EQ(r.count(Verdict::regressed), 2u);  // the speedup and the bf16 time
}

TEST(OneRunPerSide, OverlappingSamplesAreNoisyUnderTheRankTest) {
  Options options;
  options.absolute = true;
  // 8% slower median, samples spread by 20%: the rank test cannot tell the runs apart, and the
  // spreads leave the change anywhere within +-28%.
  const auto r = compare_docs(gemm_run(1e-4, 0.2), gemm_run(1.08e-4, 0.2), options);
  for (const auto& c : r.comparisons) {
    if (c.metric != Metric::seconds) continue;
    EXPECT_EQ(c.test, NoiseTest::rank);
    EXPECT_GE(*c.p_value, options.alpha);
    EXPECT_EQ(c.verdict, Verdict::noisy);
  }
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
}

TEST(OneRunPerSide, SpreadTestIsSymmetricInLogSpace) {
  // Spreads of 50% per run: a halving of the time and a doubling are ln 2 = 0.69 away, beyond a
  // noise band of 0.5 * sqrt(2) = 0.71 neither: both noisy.
  Comparison slower;
  slower.metric = Metric::seconds;
  const auto verdict = [&](double current, double spread) {
    RunFigure base, now;
    base.value = 1.0;
    now.value = current;
    base.spread = now.spread = spread;
    return judge(slower, {base}, {now}, Options{}).verdict;
  };
  EXPECT_EQ(verdict(2.0, 0.5), Verdict::noisy);
  EXPECT_EQ(verdict(0.5, 0.5), Verdict::noisy);
  // With 40% spreads (band 0.57) both leave the noise, in opposite directions.
  EXPECT_EQ(verdict(2.0, 0.4), Verdict::regressed);
  EXPECT_EQ(verdict(0.5, 0.4), Verdict::improved);
}

TEST(OneRunPerSide, TooFewSamplesForTheRankTestAreReadByTheirT) {
  const auto base = document({timed_case("k", "fp32", samples_around(1e-3, 0.01, 3))});
  const auto current = document({timed_case("k", "fp32", samples_around(1.2e-3, 0.01, 3))});
  const auto r = compare_docs(base, current);
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].test, NoiseTest::samples);
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::regressed);
  // One sample a side has no spread of its own to weigh: the band of the runs' spreads.
  const auto single = compare_docs(document({timed_case("k", "fp32", {1e-3})}), document({timed_case("k", "fp32", {1.2e-3})}));
  EXPECT_EQ(single.comparisons[0].test, NoiseTest::spread);
  EXPECT_EQ(single.comparisons[0].verdict, Verdict::regressed);
}

// A verdict and its evidence agree: 7% slower over 100 samples a side at ±3% is apart (the rank
// test's p far below alpha) and its interval from the samples lies beyond 5%, so it regressed; the
// runs' spreads alone (±4.2%) would have reached across the edge and called it noisy.
TEST(OneRunPerSide, SamplesFarApartAreNotCalledNoisy) {
  const auto base = document({timed_case("k", "fp32", samples_around(1e-3, 0.03, 100))});
  const auto current = document({timed_case("k", "fp32", samples_around(1.07e-3, 0.03, 100))});
  const Report r = compare_docs(base, current);
  const auto& c = r.comparisons.at(0);
  ASSERT_TRUE(c.p_value.has_value());
  EXPECT_LT(*c.p_value, 1e-10);
  EXPECT_EQ(c.verdict, Verdict::regressed);
  EXPECT_GT(c.change_low, 0.05);
  EXPECT_LT(std::log1p(0.07) - std::hypot(0.03, 0.03), std::log1p(0.05)) << "the old band reached across the edge";
}

// A document that left its samples out: the summary's spread and sample count give the t interval.
TEST(OneRunPerSide, SummariesWithoutSamplesUseTheirSpreadAndCount) {
  const auto base = document({without_samples(timed_case("k", "fp32", samples_around(1e-3, 0.1)))});
  const auto current = document({without_samples(timed_case("k", "fp32", samples_around(1.12e-3, 0.1)))});
  const auto r = compare_docs(base, current);
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].test, NoiseTest::samples);
  // 12% slower, ±10% over 9 samples a side: t(0.995, 16) * 0.1 * sqrt(2/9) = 0.137 either side.
  const double half_width = student_t_quantile(0.995, 16) * std::sqrt(2 * 0.1 * 0.1 / 9);
  EXPECT_NEAR(std::log1p(r.comparisons[0].change_high) - std::log1p(r.comparisons[0].change), half_width, 0.01);
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::noisy);
}

// ---------------------------------------------------------------- several runs per side

TEST(SeveralRuns, IntervalComesFromTheSpreadBetweenRuns) {
  // ln speedups: base ln 10 + {0, 0.1, 0.2}, new ln 10 + {0.3, 0.4, 0.5}. By hand (as in
  // LogDifference.ThreeRunsPerSideByHand): estimate 0.3, spread 0.1, at alpha 0.05 the interval
  // 0.3 +- 0.22670, so the change is e^0.3 - 1 = +35.0% within [+7.6%, +69.3%].
  Options options;
  options.alpha = 0.05;
  const auto r = compare_runs(runs_with_speedups({10, 10 * std::exp(0.1), 10 * std::exp(0.2)}),
                              runs_with_speedups({10 * std::exp(0.3), 10 * std::exp(0.4), 10 * std::exp(0.5)}), options);
  const auto& c = only_speedup(r);
  EXPECT_EQ(c.test, NoiseTest::between_runs);
  EXPECT_EQ(c.base_runs, 3u);
  EXPECT_EQ(c.current_runs, 3u);
  EXPECT_NEAR(c.noise, 0.1, 1e-9);
  EXPECT_NEAR(c.change, std::expm1(0.3), 1e-9);
  EXPECT_NEAR(c.change_low, std::expm1(0.3 - 0.22670), 1e-5);
  EXPECT_NEAR(c.change_high, std::expm1(0.3 + 0.22670), 1e-5);
  EXPECT_EQ(c.verdict, Verdict::improved);
  // At the default alpha 0.01 the interval (half width 0.376) reaches below no change.
  EXPECT_EQ(only_speedup(compare_runs(runs_with_speedups({10, 10 * std::exp(0.1), 10 * std::exp(0.2)}),
                                      runs_with_speedups({10 * std::exp(0.3), 10 * std::exp(0.4), 10 * std::exp(0.5)})))
                .verdict,
            Verdict::noisy);
}

TEST(SeveralRuns, RunsThatAgreeAreTheSameWhateverEachRunsOwnSpread) {
  // Each run's samples spread by 30%, but the runs' speedups agree to 0.5%: repeated runs show
  // the spread that matters, and it is small.
  const auto r = compare_runs(runs_with_speedups({10.0, 10.05, 9.95}, 0.3), runs_with_speedups({10.02, 9.98, 10.0}, 0.3));
  EXPECT_EQ(only_speedup(r).verdict, Verdict::same);
  EXPECT_LT(only_speedup(r).noise, 0.01);
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
}

TEST(SeveralRuns, AClearDropRegresses) {
  const auto r = compare_runs(runs_with_speedups({10.0, 10.1, 9.9}), runs_with_speedups({8.0, 8.1, 7.9}));
  const auto& c = only_speedup(r);
  EXPECT_EQ(c.verdict, Verdict::regressed);
  EXPECT_LT(c.change_high, -0.05);
  EXPECT_EQ(r.exit_code(), kExitRegressed);
}

TEST(SeveralRuns, AChangeNotSurelyBeyondTheThresholdIsNoisyThoughNotZero) {
  // Speedups 10 +- 1% against 9.3 +- 1%: -7%, its 99% interval about [-10.4%, -3.5%] excludes no
  // change but reaches inside -5%: a regression of more than 5% is not shown.
  const auto r = compare_runs(runs_with_speedups({10.0, 10.1, 9.9}), runs_with_speedups({9.3, 9.393, 9.207}));
  const auto& c = only_speedup(r);
  EXPECT_LT(c.change_high, 0.0);
  EXPECT_GT(c.change_high, -0.05);
  EXPECT_EQ(c.verdict, Verdict::noisy);
  // Lowered to 3%, the whole interval is beyond it.
  Options lower;
  lower.threshold = 0.03;
  EXPECT_EQ(only_speedup(compare_runs(runs_with_speedups({10.0, 10.1, 9.9}), runs_with_speedups({9.3, 9.393, 9.207}),
                                      lower))
                .verdict,
            Verdict::regressed);
}

TEST(SeveralRuns, RunsThatDisagreeAreNoisyAndSayHowManyRunsWouldSettleIt) {
  const auto r = compare_runs(runs_with_speedups({10.0, 13.0, 8.0}), runs_with_speedups({9.0, 12.0, 7.5}));
  const auto& c = only_speedup(r);
  EXPECT_EQ(c.verdict, Verdict::noisy);
  EXPECT_EQ(r.exit_code(), kExitNoRegression) << "noisy never fails";
  EXPECT_LT(c.change_low, -0.05);
  EXPECT_GT(c.change_high, 0.0);
  // Spread between runs: ln speedups of both sides pooled; whether its runs settle within the
  // limit is what runs_to_settle says, and the summary repeats it.
  EXPECT_EQ(c.runs_to_settle.has_value(),
            runs_to_settle(std::log1p(c.change), c.noise, NoChangeBand::of(0.05), 0.01, kMostRunsToSuggest).has_value());
  EXPECT_NE(noisy_summary(r).find("1 noisy case"), std::string::npos) << noisy_summary(r);
}

TEST(SeveralRuns, OneNewRunIsJudgedAgainstTheBaseHistory) {
  const auto r = compare_runs(runs_with_speedups({10.0, 10.1, 9.9, 10.05}), runs_with_speedups({8.0}));
  const auto& c = only_speedup(r);
  EXPECT_EQ(c.test, NoiseTest::between_runs);
  EXPECT_EQ(c.base_runs, 4u);
  EXPECT_EQ(c.current_runs, 1u);
  EXPECT_EQ(c.verdict, Verdict::regressed);
}

TEST(SeveralRuns, FiguresAreGeometricMeansOfTheRuns) {
  const auto r = compare_runs(runs_with_speedups({5.0, 20.0}), runs_with_speedups({10.0, 10.0}));
  EXPECT_NEAR(only_speedup(r).base, 10.0, 1e-9);
  EXPECT_NEAR(only_speedup(r).current, 10.0, 1e-9);
}

TEST(SeveralRuns, RunsShortOfTheirNoiseTargetAreCounted) {
  auto runs = runs_with_speedups({10.0, 10.0, 10.0});
  runs[1].cases[1].details["measurement"]["converged"] = false;
  runs[2].cases[0].details["measurement"]["converged"] = false;  // the fp32 partner of the speedup
  const auto r = compare_runs(runs, runs_with_speedups({10.0, 10.0, 10.0}));
  EXPECT_EQ(only_speedup(r).unconverged_runs, 2u);
  EXPECT_EQ(find(r, Metric::seconds, "fp32").unconverged_runs, 1u);
}

// Marks the bf16 case of the first `n` runs as stopped before its noise target.
std::vector<ResultDocument> unconverged(std::vector<ResultDocument> runs, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) runs[i].cases[1].details["measurement"]["converged"] = false;
  return runs;
}

TEST(Unconverged, AgreeingRunsThatMostlyDidNotConvergeAreNoisyUnlessTheirOwnSpreadDecides) {
  // Speedups 10 -> 8 (-20%), the runs agreeing to 0.5%: between runs alone a clear regression. But
  // each time spread by 30% in its run: a speedup's own spread is hypot(0.3, 0.3) = 0.424, both
  // sides' hypot(0.424, 0.424) = 0.6 in log space, so ln 0.8 +- 0.6 reaches across both edges.
  const auto base = runs_with_speedups({10.0, 10.05, 9.95}, 0.3), current = runs_with_speedups({8.0, 8.04, 7.96}, 0.3);
  ASSERT_EQ(only_speedup(compare_runs(base, current)).verdict, Verdict::regressed) << "converged runs";
  ASSERT_EQ(only_speedup(compare_runs(unconverged(base, 1), unconverged(current, 1))).verdict, Verdict::regressed)
      << "one unconverged run of three per side is no majority";

  const auto r = compare_runs(unconverged(base, 2), current);  // most of the base side
  const auto& c = only_speedup(r);
  EXPECT_TRUE(c.short_of_noise_target);
  EXPECT_EQ(c.unconverged_runs, 2u);
  EXPECT_EQ(c.verdict, Verdict::noisy);
  const double own = std::hypot(std::hypot(0.3, 0.3), std::hypot(0.3, 0.3));
  EXPECT_NEAR(c.change_low, std::expm1(std::log1p(c.change) - own), 1e-6) << "the interval covers the own spread";
  EXPECT_NEAR(c.change_high, std::expm1(std::log1p(c.change) + own), 1e-6);
  EXPECT_TRUE(c.needs_longer_runs);
  EXPECT_FALSE(c.runs_to_settle.has_value()) << "more runs as short as these would not settle it";
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
  EXPECT_NE(noisy_summary(r).find("1 stopped before their noise target"), std::string::npos) << noisy_summary(r);
  EXPECT_NE(noisy_summary(r).find("--timeout"), std::string::npos) << noisy_summary(r);
}

TEST(Unconverged, AnEffectBeyondEvenTheOwnSpreadStillRegresses) {
  // Speedups 10 -> 3 (-70%, ln 0.3 = -1.20) with 5% spreads: the own band is hypot of four 5%
  // spreads, 0.1, so the whole interval [-1.30, -1.10] lies beyond ln 0.95 = -0.05.
  const auto r = compare_runs(unconverged(runs_with_speedups({10.0, 10.05, 9.95}, 0.05), 3),
                              unconverged(runs_with_speedups({3.0, 3.015, 2.985}, 0.05), 3));
  const auto& c = only_speedup(r);
  EXPECT_TRUE(c.short_of_noise_target);
  EXPECT_EQ(c.unconverged_runs, 6u);
  EXPECT_EQ(c.verdict, Verdict::regressed);
  EXPECT_NEAR(c.change_high, std::expm1(std::log(0.3) + 0.1), 1e-3);
  EXPECT_EQ(r.exit_code(), kExitRegressed);
}

TEST(Unconverged, NoChangeNeedsTheOwnSpreadInsideTheThresholdToo) {
  // Identical speedups: between runs "same". With 3% spreads the own band is +-6% (hypot of four),
  // wider than 5%: unconverged, they are noisy; with 1% spreads (+-2%) still the same.
  const auto wide = runs_with_speedups({10.0, 10.05, 9.95}, 0.03);
  EXPECT_EQ(only_speedup(compare_runs(wide, wide)).verdict, Verdict::same);
  EXPECT_EQ(only_speedup(compare_runs(wide, unconverged(wide, 2))).verdict, Verdict::noisy);
  const auto narrow = runs_with_speedups({10.0, 10.05, 9.95}, 0.01);
  EXPECT_EQ(only_speedup(compare_runs(narrow, unconverged(narrow, 3))).verdict, Verdict::same);
}

TEST(Unconverged, OneRunPerSideAlreadyJudgesOnItsOwnSpread) {
  const auto base = gemm_run(1e-4, 0.01), current = gemm_run(1.25e-4, 0.01);
  const auto r = compare_docs(unconverged({base}, 1)[0], current);
  const auto& c = only_speedup(r);
  EXPECT_TRUE(c.short_of_noise_target);
  EXPECT_EQ(c.verdict, Verdict::regressed);
  EXPECT_NEAR(c.change_low, 0.8 * std::exp(-0.02) - 1, 1e-9) << "the interval was that band already";
}

TEST(SeveralRuns, TheMinimumNumberOfRunsIsEnforced) {
  Options options;
  options.min_runs = 3;
  EXPECT_THROW(compare_runs(runs_with_speedups({10, 10, 10}), runs_with_speedups({10}), options), UsageError);
  EXPECT_NO_THROW(compare_runs(runs_with_speedups({10, 10, 10}), runs_with_speedups({10, 10, 10}), options));
}

// ---------------------------------------------------------------- cases and statuses

TEST(CaseStatuses, CaseThatNowFailsIsListedAndExitsOne) {
  auto current = gemm_run(1e-4);
  current.cases[1] = failed_case("square_4096", "bf16", CaseStatus::error, "CUBLAS_STATUS_NOT_SUPPORTED");
  current.compute_speedups("fp32");
  const auto r = compare_docs(gemm_run(1e-4), current);
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_TRUE(r.not_ok[0].newly_failing());
  EXPECT_EQ(r.not_ok[0].message, "CUBLAS_STATUS_NOT_SUPPORTED");
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].key.precision, "fp32");
  EXPECT_EQ(r.exit_code(), kExitRegressed);
}

TEST(CaseStatuses, ARunThatFailedMakesTheSideFail) {
  auto failing = gemm_run(1e-4);
  failing.cases[1] = failed_case("square_4096", "bf16", CaseStatus::error, "out of memory");
  const auto r = compare_runs({gemm_run(1e-4), gemm_run(1e-4)}, {gemm_run(1e-4), failing});
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_EQ(r.not_ok[0].current, CaseStatus::error);
  EXPECT_EQ(r.not_ok[0].message, "out of memory");
}

TEST(CaseStatuses, CaseNowSkippedIsListedButDoesNotFail) {
  auto current = gemm_run(1e-4);
  current.cases[1] = failed_case("square_4096", "bf16", CaseStatus::skipped, "no bf16 on this GPU");
  current.compute_speedups("fp32");
  const auto r = compare_docs(gemm_run(1e-4), current);
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_FALSE(r.not_ok[0].newly_failing());
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
}

TEST(CaseStatuses, CasesSkippedInBothRunsAreCountedNotListed) {
  auto base = gemm_run(1e-4), current = gemm_run(1e-4);
  base.cases.push_back(failed_case("square_4096", "fp8-e4m3", CaseStatus::skipped, "fp8 needs sm_89"));
  current.cases.push_back(failed_case("square_4096", "fp8-e4m3", CaseStatus::skipped, "fp8 needs sm_89"));
  const auto r = compare_docs(base, current);
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_EQ(r.skipped_in_both(), 1u);
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
  const auto text = render_text(r);
  EXPECT_EQ(text.find("fp8-e4m3"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped in both runs: 1 cases"), std::string::npos) << text;
}

TEST(CaseStatuses, NothingComparedIsNotAPass) {
  const auto skipped = document({failed_case("square_4096", "bf16", CaseStatus::skipped, "no bf16 GEMM here"),
                                 failed_case("square_4096", "fp16", CaseStatus::skipped, "no fp16 GEMM here")});
  const auto r = compare_docs(skipped, skipped);
  EXPECT_TRUE(r.nothing_compared());
  EXPECT_EQ(r.exit_code(), kExitNothingCompared);
  EXPECT_EQ(r.why_nothing_compared(), "of the 2 cases in common, 2 skipped in both (what the hardware cannot run)");
  EXPECT_NE(render_text(r).find("result: NOTHING COMPARED"), std::string::npos) << render_text(r);
}

TEST(CaseStatuses, ANewlyFailingCaseOutranksNothingCompared) {
  const auto base = document({timed_case("k", "bf16", samples_around(1e-4, 0.01))});
  const auto current = document({failed_case("k", "bf16", CaseStatus::error, "crashed")});
  EXPECT_EQ(compare_docs(base, current).exit_code(), kExitRegressed);
}

// A full run against one a Ctrl-C cut short: the case the interrupt stopped and those it never
// reached are not compared, the summary says which side was interrupted, and it is no regression;
// an error of the interrupted run that the interrupt did not cause still is one.
TEST(CaseStatuses, AnInterruptedSideIsNotARegression) {
  auto base = gemm_run(1e-4);
  base.cases.push_back(timed_case("square_8192", "fp32", samples_around(8e-3, 0.01)));
  auto current = gemm_run(1e-4);
  current.cases[1] = failed_case("square_4096", "bf16", CaseStatus::error, "interrupted");
  current.run["interrupted"] = true;
  const auto r = compare_docs(base, current);
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_TRUE(r.not_ok[0].cut_short);
  EXPECT_FALSE(r.not_ok[0].newly_failing());
  EXPECT_EQ(r.interrupted_sides, std::vector<std::string>{"new"});
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
  const auto text = render_text(r);
  EXPECT_NE(text.find("interrupted: new (its 1 cut-short and 1 missing cases are not compared)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("not compared"), std::string::npos) << text;
  EXPECT_EQ(text.find("NEWLY FAILING"), std::string::npos) << text;

  current.cases[1].message = "CUBLAS_STATUS_EXECUTION_FAILED";
  EXPECT_EQ(compare_docs(base, current).exit_code(), kExitRegressed);
  current.cases[1].message = "interrupted";
  current.run["interrupted"] = false;  // the message alone is no interrupt
  EXPECT_EQ(compare_docs(base, current).exit_code(), kExitRegressed);
}

TEST(CaseStatuses, AddedAndMissingCasesAreListed) {
  auto current = gemm_run(1e-4);
  current.cases.push_back(timed_case("square_8192", "fp32", samples_around(8e-3, 0.01)));
  auto base = gemm_run(1e-4);
  base.cases.push_back(timed_case("square_1024", "fp32", samples_around(2e-5, 0.01)));
  const auto r = compare_docs(base, current);
  ASSERT_EQ(r.added.size(), 1u);
  EXPECT_EQ(r.added[0].name, "square_8192");
  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0].name, "square_1024");
  EXPECT_EQ(r.exit_code(), kExitNoRegression);
}

TEST(CaseStatuses, ChangedParamsOfACaseAreListedWithItsVerdict) {
  auto base = gemm_run(1e-4), current = gemm_run(0.8e-4);
  base.cases[1].params = {{"attention", "unfused"}, {"batch", 8}, {"tensor_cores", "on"}};
  current.cases[1].params = {{"attention", "fused"}, {"batch", 8}, {"seq_len", 1024}};
  const auto r = compare_docs(base, current, Options{.absolute = true});
  std::size_t with_changes = 0;
  for (const auto& c : r.comparisons) {
    if (c.key.precision != "bf16") {
      EXPECT_TRUE(c.param_changes.empty()) << c.key.label();
      continue;
    }
    ++with_changes;
    EXPECT_EQ(c.param_changes,
              (std::vector<std::string>{"attention: unfused -> fused", "seq_len: - -> 1024", "tensor_cores: on -> -"}));
  }
  EXPECT_EQ(with_changes, 2u) << "the speedup and the time";
  const auto text = render_text(r);
  EXPECT_NE(text.find("params changed"), std::string::npos) << text;
  EXPECT_EQ(text.find("attention: unfused -> fused"), text.rfind("attention: unfused -> fused"))
      << "each case's changes listed once\n" << text;
  EXPECT_NE(render_markdown(r).find("#### Params changed"), std::string::npos);
  std::size_t json_changes = 0;
  const nlohmann::json json = report_json(r);
  for (const auto& c : json.at("comparisons")) json_changes += c.at("param_changes").size();
  EXPECT_EQ(json_changes, 6u);
  // Unchanged params: no block at all.
  EXPECT_EQ(render_text(compare_docs(gemm_run(1e-4), gemm_run(1e-4))).find("params changed"), std::string::npos);
}

TEST(CaseStatuses, RunsWithoutACommonCaseAreRejected) {
  const auto bandwidth = document({timed_case("copy/n=1024", "fp32", samples_around(1e-6, 0.01), "bandwidth")});
  EXPECT_THROW(compare_docs(gemm_run(1e-4), bandwidth), UsageError);
}

TEST(CaseStatuses, SpeedupsAreComputedWhenTheDocumentStoredNone) {
  auto base = gemm_run(1e-4), current = gemm_run(1.25e-4);
  base.speedups.clear();
  current.speedups.clear();
  EXPECT_EQ(only_speedup(compare_docs(base, current)).verdict, Verdict::regressed);
}

TEST(CaseStatuses, VerdictsAreOrderedRegressedImprovedNoisySame) {
  const auto base = document({timed_case("a", "fp32", samples_around(1e-3, 0.01)),
                              timed_case("b", "fp32", samples_around(1e-3, 0.01, 3)),
                              timed_case("c", "fp32", samples_around(1e-3, 0.3, 3)),
                              timed_case("d", "fp32", samples_around(1e-3, 0.01, 3))});
  const auto current = document({timed_case("a", "fp32", samples_around(1e-3, 0.01)),
                                 timed_case("b", "fp32", samples_around(0.7e-3, 0.01, 3)),
                                 timed_case("c", "fp32", samples_around(1e-3, 0.3, 3)),
                                 timed_case("d", "fp32", samples_around(1.5e-3, 0.01, 3))});
  const auto r = compare_docs(base, current);
  std::vector<std::string> order;
  for (const auto& c : r.comparisons) order.push_back(c.key.name + ":" + std::string(verdict_name(c.verdict)));
  EXPECT_EQ(order, (std::vector<std::string>{"d:regressed", "b:improved", "c:noisy", "a:same"}));
}

// Many cases of each verdict, mixed in case order: grouped by verdict, and within each in the
// order of their cases (the in-place counting sort keeps it stable).
TEST(CaseStatuses, VerdictsGroupInCaseOrderWithinEach) {
  std::vector<CaseResult> base_cases, current_cases;
  std::mt19937 rng(std::random_device{}());
  const double factors[] = {1.5, 0.7, 1.0, 1.0};  // regressed, improved, noisy (spread 0.3), same
  std::map<Verdict, std::vector<std::string>> expected;
  for (int i = 0; i < 60; ++i) {
    const auto v = static_cast<Verdict>(rng() % 4);
    const double spread = v == Verdict::noisy ? 0.3 : 0.01;
    const std::string name = fmt::format("case_{:03}", i);
    base_cases.push_back(timed_case(name, "fp32", samples_around(1e-3, spread, 3)));
    current_cases.push_back(timed_case(name, "fp32", samples_around(factors[static_cast<int>(v)] * 1e-3, spread, 3)));
    expected[v].push_back(name);
  }
  const auto r = compare_docs(document(base_cases), document(current_cases));
  std::vector<std::string> order, wanted;
  for (const auto& c : r.comparisons) order.push_back(std::string(verdict_name(c.verdict)) + " " + c.key.name);
  for (const auto& [v, names] : expected)
    for (const auto& name : names) wanted.push_back(std::string(verdict_name(v)) + " " + name);
  EXPECT_EQ(order, wanted);
}

}  // namespace
}  // namespace mpbench::compare
