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

TEST(TrackedFigures, FiguresComeFromTheFastestSamples) {
  // Same median (1 ms), but this run's fastest sample is 0.6 ms: a 2 ms fp32 case is then 3.333x.
  auto doc = gemm_run(1e-3, 0.01, 2e-3);
  doc.cases[1].seconds = Statistics::of({0.6e-3, 1e-3, 1e-3, 1e-3, 1.4e-3});
  doc.cases[0].seconds = Statistics::of({2e-3, 2e-3, 2e-3});
  EXPECT_NEAR(run_figure(CaseIndex(doc), doc.cases[1], Metric::speedup, "fp32")->value, 2e-3 / 0.6e-3, 1e-12);
  EXPECT_DOUBLE_EQ(run_figure(CaseIndex(doc), doc.cases[1], Metric::seconds, "fp32")->value, 0.6e-3);
  // A share of the copy: the cast's fastest sample is 0.8 of its median, the copy's 0.9 of its
  // own, so the share of the fastest samples is 50% / 0.8 * 0.9 = 56.25%.
  auto casts = cast_run(50.0);
  casts.cases[1].seconds = Statistics::of({0.8e-3, 1e-3, 1.2e-3});
  casts.cases[0].seconds = Statistics::of({0.9e-3, 1e-3, 1.1e-3});
  EXPECT_NEAR(run_figure(CaseIndex(casts), casts.cases[1], Metric::pct_of_copy, "fp32")->value, 56.25, 1e-9);
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
