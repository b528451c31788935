#include "compare/figures.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "compare/report.hpp"
#include "documents.hpp"

namespace mpbench::compare {
namespace {

using namespace testing;

// A copy or conversion case at `gbps`, its share of `copy` (a case of the same document) as the
// cast suite records it.
CaseResult rate_case(const std::string& suite, const std::string& name, const std::string& precision, double seconds,
                     double spread, double pct_of_copy, const std::string& copy_name) {
  CaseResult c = timed_case(name, precision, samples_around(seconds, spread), suite);
  c.backend = "cpu";
  c.rates = {{"gbps", 1.0 / seconds}, {"pct_of_copy", pct_of_copy}};
  c.details["copy_reference"] = {{"name", copy_name}, {"precision", "fp32"}};
  return c;
}

ResultDocument cast_run(double cast_pct, double cast_spread = 0.03, double copy_spread = 0.04) {
  auto doc = document({rate_case("cast", "copy/n=16", "fp32", 1e-3, copy_spread, 100.0, "copy/n=16"),
                       rate_case("cast", "f32_to_bf16/n=16", "bf16", 1e-3, cast_spread, cast_pct, "copy/n=16")});
  doc.run["suites"] = {"cast"};
  return doc;
}

TEST(TrackedFigures, ACastIsTrackedByItsShareOfTheCopyOfTheSameRun) {
  const auto doc = cast_run(62.5);
  const auto f = run_figure(CaseIndex(doc), doc.cases[1], Metric::pct_of_copy, "fp32");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->reference, "copy/n=16 fp32");
  EXPECT_NEAR(f->spread, 0.05, 1e-12) << "the cast's 3% and the copy's 4% combined";
  EXPECT_FALSE(run_figure(CaseIndex(doc), doc.cases[1], Metric::speedup, "fp32").has_value()) << "no fp32 f32_to_bf16";
  // Both times spread alike: their fastest samples keep the recorded share.
  const auto alike = cast_run(62.5, 0.03, 0.03);
  EXPECT_NEAR(run_figure(CaseIndex(alike), alike.cases[1], Metric::pct_of_copy, "fp32")->value, 62.5, 1e-9);
}

TEST(TrackedFigures, FiguresAreTheNumbersTheRunRecorded) {
  // Median 1 ms with a fastest sample of 0.6 ms against a 2 ms fp32 case: 2x, the ratio of the
  // medians the run recorded as its speedup, not 3.333x of the fastest samples; its time is the
  // fastest sample.
  auto doc = gemm_run(1e-3, 0.01, 2e-3);
  doc.cases[1].seconds = Statistics::of({0.6e-3, 1e-3, 1e-3, 1e-3, 1.4e-3});
  doc.cases[0].seconds = Statistics::of({2e-3, 2e-3, 2e-3});
  doc.compute_speedups();
  EXPECT_NEAR(run_figure(CaseIndex(doc), doc.cases[1], Metric::speedup, "fp32")->value, doc.speedups.at(0).value, 1e-12);
  EXPECT_NEAR(run_figure(CaseIndex(doc), doc.cases[1], Metric::speedup, "fp32")->value, 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(run_figure(CaseIndex(doc), doc.cases[1], Metric::seconds, "fp32")->value, 0.6e-3) << "a time: its fastest";
  // A share of the copy is rates.pct_of_copy as written, whatever the fastest samples.
  auto casts = cast_run(50.0);
  casts.cases[1].seconds = Statistics::of({0.8e-3, 1e-3, 1.2e-3});
  casts.cases[0].seconds = Statistics::of({0.9e-3, 1e-3, 1.1e-3});
  EXPECT_DOUBLE_EQ(run_figure(CaseIndex(casts), casts.cases[1], Metric::pct_of_copy, "fp32")->value, 50.0);
}

// The noise behind a figure is the variance of its cases' mean ln times, added over the cases.
TEST(TrackedFigures, ARatiosSampleNoiseAddsBothCasesVariancesOfTheMean) {
  auto doc = gemm_run(1e-3, 0.01, 2e-3);
  doc.cases[1].seconds = Statistics::of({0.5e-3, 2e-3});  // ln values ±ln 2 around ln 1 ms
  doc.cases[0].seconds = Statistics::of({1e-3, 4e-3, 1e-3, 4e-3});  // ±ln 2 around ln 2 ms
  const double l2 = std::log(2.0);
  const double one = 2 * l2 * l2 / 1 / 2, other = 4 * l2 * l2 / 3 / 4;  // s^2 / n of each
  const auto f = run_figure(CaseIndex(doc), doc.cases[1], Metric::speedup, "fp32");
  ASSERT_TRUE(f.has_value());
  ASSERT_TRUE(f->noise.has_value());
  EXPECT_NEAR(f->noise->variance, one + other, 1e-12);
  EXPECT_DOUBLE_EQ(f->noise->degrees_of_freedom, 1 + 3);
  // A document that left the samples out: the summary's stddev / mean and sample count stand in.
  doc.cases[0].seconds->values.clear();
  const double spread = doc.cases[0].seconds->relative_spread();
  const auto summarised = run_figure(CaseIndex(doc), doc.cases[1], Metric::speedup, "fp32");
  EXPECT_NEAR(summarised->noise->variance, one + spread * spread / 4, 1e-12);
  doc.cases[0].seconds->samples = 1;
  doc.cases[0].seconds->stddev = 0;
  EXPECT_FALSE(run_figure(CaseIndex(doc), doc.cases[1], Metric::speedup, "fp32")->noise.has_value()) << "one sample";
}

TEST(TrackedFigures, TheCopyItselfIsTrackedByItsTime) {
  const auto doc = cast_run(62.5);
  EXPECT_FALSE(run_figure(CaseIndex(doc), doc.cases[0], Metric::pct_of_copy, "fp32").has_value());
  const auto f = run_figure(CaseIndex(doc), doc.cases[0], Metric::seconds, "fp32");
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->value, doc.cases[0].seconds->min);
  EXPECT_EQ(f->samples.size(), 9u);
}

TEST(TrackedFigures, OlderDocumentsWithoutACopyReferenceTakeTheCaseAt100PercentForTheCopy) {
  auto doc = cast_run(62.5);
  for (auto& c : doc.cases) c.details.erase("copy_reference");
  EXPECT_FALSE(run_figure(CaseIndex(doc), doc.cases[0], Metric::pct_of_copy, "fp32").has_value());
  const auto f = run_figure(CaseIndex(doc), doc.cases[1], Metric::pct_of_copy, "fp32");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->reference, "the run's copy");
}

TEST(TrackedFigures, ASpeedupCombinesBothTimesSpreads) {
  const auto doc = gemm_run(1e-4, 0.03);
  const auto f = run_figure(CaseIndex(doc), doc.cases[1], Metric::speedup, "fp32");
  ASSERT_TRUE(f.has_value());
  EXPECT_NEAR(f->value, 10.0, 1e-9);
  EXPECT_NEAR(f->spread, 0.03 * std::sqrt(2.0), 1e-12);
  EXPECT_EQ(f->reference, "fp32");
  EXPECT_FALSE(run_figure(CaseIndex(doc), doc.cases[0], Metric::speedup, "fp32").has_value()) << "fp32 over itself";
}

TEST(TrackedFigures, EveryCaseOfEverySuiteIsCompared) {
  // The cast suite has no fp32 partner anywhere: by default it used to be invisible.
  const auto r = compare(side_of("base", {cast_run(62.5)}), side_of("new", {cast_run(40.0)}), {});
  ASSERT_EQ(r.comparisons.size(), 2u);
  const auto& cast = r.comparisons[0];
  EXPECT_EQ(cast.key.precision, "bf16");
  EXPECT_EQ(cast.metric, Metric::pct_of_copy);
  EXPECT_EQ(cast.verdict, Verdict::regressed);
  EXPECT_NEAR(cast.change, 40.0 / 62.5 - 1, 1e-12);
  EXPECT_EQ(r.comparisons[1].metric, Metric::seconds);
  EXPECT_EQ(r.comparisons[1].key.name, "copy/n=16");
}

TEST(TrackedFigures, AFigureMissingInOneRunFallsBackToOneEveryRunHas) {
  auto other = gemm_run(1e-4);
  other.cases.erase(other.cases.begin());
  other.compute_speedups("fp32");
  // No fp32 in the new run: bf16 is tracked by its time there and in the base.
  const auto r = compare(side_of("base", {gemm_run(1e-4)}), side_of("new", {other}), {});
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].metric, Metric::seconds);
  EXPECT_EQ(r.comparisons[0].key.precision, "bf16");
}

}  // namespace
}  // namespace mpbench::compare
