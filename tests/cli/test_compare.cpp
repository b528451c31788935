#include "cli/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>

#include <unistd.h>

#include <cstdlib>

#include "cli/commands.hpp"
#include "core/error.hpp"

#ifndef MPBENCH_COMPARE_FIXTURES
#define MPBENCH_COMPARE_FIXTURES "tests/cli/fixtures"
#endif

namespace mpbench::compare {
namespace {

// $MPBENCH_COMPARE_FIXTURES where the tests run away from their build (the device script).
const std::filesystem::path kFixtures = std::getenv("MPBENCH_COMPARE_FIXTURES") ? std::getenv("MPBENCH_COMPARE_FIXTURES")
                                                                                : MPBENCH_COMPARE_FIXTURES;

// Unique per process, so parallel test runs do not share files.
std::filesystem::path scratch_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("mpbench_compare_" + std::to_string(::getpid()) + "_" + name);
}

// n samples symmetric around `median` whose sample standard deviation is `relative_spread * median`.
std::vector<double> samples_around(double median, double relative_spread, int n = 9) {
  std::vector<double> offsets;
  for (int i = 0; i < n; ++i) offsets.push_back(-1.0 + 2.0 * i / (n - 1));
  double squares = 0;
  for (double o : offsets) squares += o * o;
  const double scale = relative_spread * median / std::sqrt(squares / (n - 1));
  std::vector<double> values;
  for (double o : offsets) values.push_back(median + o * scale);
  return values;
}

CaseResult timed_case(const std::string& name, const std::string& precision, std::vector<double> seconds,
                      const std::string& suite = "gemm") {
  CaseResult c;
  c.suite = suite;
  c.name = name;
  c.backend = "cuda";
  c.precision = precision;
  c.seconds = Statistics::of(std::move(seconds));
  return c;
}

// Only the summary, as a document written without the raw samples would carry.
CaseResult without_samples(CaseResult c) {
  c.seconds->values.clear();
  return c;
}

CaseResult failed_case(const std::string& name, const std::string& precision, CaseStatus status,
                       const std::string& message) {
  CaseResult c;
  c.suite = "gemm";
  c.name = name;
  c.backend = "cuda";
  c.precision = precision;
  c.status = status;
  c.message = message;
  return c;
}

ResultDocument document(std::vector<CaseResult> cases, const std::string& cublas = "12.4.5") {
  ResultDocument d;
  d.created = "2026-12-02T10:00:00Z";
  d.env = {{"gpus", {{{"name", "NVIDIA H100 80GB HBM3"}, {"driver_version", "550.54.15"}}}},
           {"cuda", {{"runtime", "12.4"}, {"cublas", cublas}, {"cublaslt", cublas}}},
           {"cpu", {{"model", "AMD EPYC 9454"}}},
           {"mpbench", {{"version", "0.1.0"}, {"git_revision", "abc"}}}};
  d.cases = std::move(cases);
  d.compute_speedups("fp32");
  return d;
}

// fp32 at 1 ms, bf16 at `bf16_seconds`: the bf16 speedup over fp32 is 1e-3 / bf16_seconds.
ResultDocument gemm_run(double bf16_seconds, double relative_spread = 0.01) {
  return document({timed_case("square_4096", "fp32", samples_around(1e-3, relative_spread)),
                   timed_case("square_4096", "bf16", samples_around(bf16_seconds, relative_spread))});
}

Report compare_docs(const ResultDocument& base, const ResultDocument& current, Options options = {}) {
  return compare(make_result_set({{"base.json", base}}), make_result_set({{"new.json", current}}), options);
}

const Comparison& only_speedup(const Report& r) {
  for (const auto& c : r.comparisons)
    if (c.metric == Metric::speedup) return c;
  throw std::logic_error("no speedup comparison in the report");
}

// ---------------------------------------------------------------- options

TEST(CompareOptions, ThresholdAcceptsPercentOrFraction) {
  EXPECT_DOUBLE_EQ(parse_threshold("5%"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold("0.05"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold("12.5%"), 0.125);
  EXPECT_DOUBLE_EQ(parse_threshold("0"), 0.0);
}

TEST(CompareOptions, ThresholdRejectsAmbiguousOrBrokenValues) {
  for (const char* bad : {"5", "abc", "-1%", "", "%", "5%%", "0.05x"})
    EXPECT_THROW(parse_threshold(bad), UsageError) << bad;
}

TEST(CompareOptions, FormatNames) {
  EXPECT_EQ(parse_format("text"), Format::text);
  EXPECT_EQ(parse_format("markdown"), Format::markdown);
  EXPECT_EQ(parse_format("json"), Format::json);
  EXPECT_THROW(parse_format("html"), UsageError);
}

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

// ---------------------------------------------------------------- verdicts on crafted pairs

TEST(CompareVerdicts, EqualRunsAreTheSameAndExitZero) {
  const auto r = compare_docs(gemm_run(1e-4), gemm_run(1e-4));
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(only_speedup(r).verdict, Verdict::same);
  EXPECT_NEAR(only_speedup(r).base, 10.0, 1e-9);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(CompareVerdicts, SpeedupTwentyPercentLowerRegressesAndExitsOne) {
  const auto r = compare_docs(gemm_run(1e-4), gemm_run(1.25e-4));  // speedup 10x -> 8x
  const auto& c = only_speedup(r);
  EXPECT_EQ(c.verdict, Verdict::regressed);
  EXPECT_NEAR(c.change, -0.2, 1e-9);
  EXPECT_EQ(c.test, NoiseTest::spread);
  EXPECT_NEAR(c.noise, 0.02, 1e-9);  // four times of 1% spread each
  EXPECT_EQ(r.exit_code(), 1);
}

TEST(CompareVerdicts, FasterRunImprovesAndExitsZero) {
  const auto r = compare_docs(gemm_run(1e-4), gemm_run(0.8e-4));
  EXPECT_EQ(only_speedup(r).verdict, Verdict::improved);
  EXPECT_EQ(r.count(Verdict::improved), 1u);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(CompareVerdicts, ChangeWithinTheMeasuredSpreadIsTheSame) {
  // 10% lower speedup, but each time has a 15% spread: the noise band is 30%.
  const auto r = compare_docs(gemm_run(1e-4, 0.15), gemm_run(1.11e-4, 0.15));
  const auto& c = only_speedup(r);
  EXPECT_LT(c.change, -0.09);
  EXPECT_GT(c.noise, std::abs(std::log1p(c.change)));
  EXPECT_EQ(c.verdict, Verdict::same);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(CompareVerdicts, ChangeBelowTheThresholdIsTheSameUnlessTheThresholdIsLowered) {
  const auto base = gemm_run(1e-4, 0.001), current = gemm_run(1.04e-4, 0.001);  // 3.8% lower
  EXPECT_EQ(only_speedup(compare_docs(base, current)).verdict, Verdict::same);
  Options strict;
  strict.threshold = 0.02;
  EXPECT_EQ(only_speedup(compare_docs(base, current, strict)).verdict, Verdict::regressed);
}

TEST(CompareVerdicts, AbsoluteTimesUseTheRankTestWhenBothRunsHaveSamples) {
  Options options;
  options.absolute = true;
  const auto r = compare_docs(gemm_run(1e-4), gemm_run(1.25e-4), options);
  const auto it = std::find_if(r.comparisons.begin(), r.comparisons.end(), [](const Comparison& c) {
    return c.metric == Metric::seconds && c.key.precision == "bf16";
  });
  ASSERT_NE(it, r.comparisons.end());
  EXPECT_EQ(it->test, NoiseTest::rank);
  ASSERT_TRUE(it->p_value.has_value());
  EXPECT_NEAR(*it->p_value, 2.0 / 48620, 1e-12);  // 9 vs 9, completely separated
  EXPECT_EQ(it->verdict, Verdict::regressed);
  EXPECT_EQ(r.count(Verdict::regressed), 2u);  // the speedup and the bf16 time
}

TEST(CompareVerdicts, OverlappingSamplesAreTheSameUnderTheRankTest) {
  Options options;
  options.absolute = true;
  // 8% slower median, samples spread by 20%: the rank test cannot tell the runs apart.
  const auto r = compare_docs(gemm_run(1e-4, 0.2), gemm_run(1.08e-4, 0.2), options);
  for (const auto& c : r.comparisons) {
    if (c.metric != Metric::seconds) continue;
    EXPECT_EQ(c.test, NoiseTest::rank);
    EXPECT_GE(*c.p_value, options.alpha);
    EXPECT_EQ(c.verdict, Verdict::same);
  }
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(CompareVerdicts, SpreadTestIsSymmetricInLogSpace) {
  // Spreads of 50% per run: a halving of the time (+100% speedup) and a doubling (-50% speedup)
  // are ln 2 = 0.69 away, beyond a noise band of 0.5 * sqrt(2) = 0.71 neither, and both are the same.
  Options options;
  options.absolute = true;
  Comparison slower;
  slower.metric = Metric::seconds;
  slower.base = 1.0;
  slower.current = 2.0;
  EXPECT_EQ(judge(slower, 0.5, 0.5, {}, {}, options).verdict, Verdict::same);
  Comparison faster = slower;
  faster.current = 0.5;
  EXPECT_EQ(judge(faster, 0.5, 0.5, {}, {}, options).verdict, Verdict::same);
  // With 40% spreads (band 0.57) both leave the noise, in opposite directions.
  EXPECT_EQ(judge(slower, 0.4, 0.4, {}, {}, options).verdict, Verdict::regressed);
  EXPECT_EQ(judge(faster, 0.4, 0.4, {}, {}, options).verdict, Verdict::improved);
}

TEST(CompareVerdicts, TooFewSamplesFallBackToTheSpreads) {
  Options options;
  options.absolute = true;
  const auto base = document({timed_case("k", "fp32", samples_around(1e-3, 0.01, 3))});
  const auto current = document({timed_case("k", "fp32", samples_around(1.2e-3, 0.01, 3))});
  const auto r = compare_docs(base, current, options);
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].test, NoiseTest::spread);
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::regressed);
}

TEST(CompareVerdicts, SummariesWithoutSamplesUseTheSpreads) {
  Options options;
  options.absolute = true;
  const auto base = document({without_samples(timed_case("k", "fp32", samples_around(1e-3, 0.1)))});
  const auto current = document({without_samples(timed_case("k", "fp32", samples_around(1.12e-3, 0.1)))});
  const auto r = compare_docs(base, current, options);
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].test, NoiseTest::spread);
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::same);  // 12% slower inside a 14% noise band
}

TEST(CompareVerdicts, CaseThatNowFailsIsListedAndExitsOne) {
  auto current = gemm_run(1e-4);
  current.cases[1] = failed_case("square_4096", "bf16", CaseStatus::error, "CUBLAS_STATUS_NOT_SUPPORTED");
  current.compute_speedups("fp32");
  const auto r = compare_docs(gemm_run(1e-4), current);
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_TRUE(r.not_ok[0].newly_failing());
  EXPECT_EQ(r.not_ok[0].message, "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_TRUE(r.comparisons.empty());
  EXPECT_EQ(r.exit_code(), 1);
}

TEST(CompareVerdicts, CaseNowSkippedIsListedButDoesNotFail) {
  auto current = gemm_run(1e-4);
  current.cases[1] = failed_case("square_4096", "bf16", CaseStatus::skipped, "no bf16 on this GPU");
  current.compute_speedups("fp32");
  const auto r = compare_docs(gemm_run(1e-4), current);
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_FALSE(r.not_ok[0].newly_failing());
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(CompareVerdicts, CasesSkippedInBothRunsAreCountedNotListed) {
  auto base = gemm_run(1e-4), current = gemm_run(1e-4);
  base.cases.push_back(failed_case("square_4096", "fp8-e4m3", CaseStatus::skipped, "fp8 needs sm_89"));
  current.cases.push_back(failed_case("square_4096", "fp8-e4m3", CaseStatus::skipped, "fp8 needs sm_89"));
  const auto r = compare_docs(base, current);
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_EQ(r.skipped_in_both(), 1u);
  EXPECT_EQ(r.exit_code(), 0);
  const auto text = render_text(r);
  EXPECT_EQ(text.find("fp8-e4m3"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped in both runs: 1 cases"), std::string::npos) << text;
}

TEST(CompareVerdicts, AddedAndMissingCasesAreListed) {
  auto current = gemm_run(1e-4);
  current.cases.push_back(timed_case("square_8192", "fp32", samples_around(8e-3, 0.01)));
  auto base = gemm_run(1e-4);
  base.cases.push_back(timed_case("square_1024", "fp32", samples_around(2e-5, 0.01)));
  const auto r = compare_docs(base, current);
  ASSERT_EQ(r.added.size(), 1u);
  EXPECT_EQ(r.added[0].name, "square_8192");
  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0].name, "square_1024");
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(CompareVerdicts, ChangedParamsOfACaseAreListedWithItsVerdict) {
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
  EXPECT_EQ(with_changes, 2u) << "the speedup and the median time";
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

TEST(CompareVerdicts, EnvironmentChangesAreReported) {
  const auto r = compare(make_result_set({{"base.json", document({}, "12.4.5")}, {"b2.json", gemm_run(1e-4)}}),
                         make_result_set({{"new.json", gemm_run(1e-4)}, {"n2.json", document({}, "12.5.2")}}), {});
  const auto cublas = std::find_if(r.environment.begin(), r.environment.end(),
                                   [](const EnvironmentField& f) { return f.field == "cuBLAS"; });
  ASSERT_NE(cublas, r.environment.end());
  EXPECT_TRUE(cublas->changed());
  EXPECT_EQ(cublas->base, "12.4.5");
  EXPECT_EQ(cublas->current, "12.4.5, 12.5.2");
  const auto gpu = std::find_if(r.environment.begin(), r.environment.end(),
                                [](const EnvironmentField& f) { return f.field == "GPU"; });
  ASSERT_NE(gpu, r.environment.end());
  EXPECT_FALSE(gpu->changed());
}

TEST(CompareVerdicts, AnotherOneDnnInstructionSetIsAnEnvironmentChange) {
  auto base = gemm_run(1e-4), current = gemm_run(1e-4);
  base.env["backend"]["onednn"]["effective_isa"] = "avx512_core_bf16";
  current.env["backend"]["onednn"]["effective_isa"] = "avx512_core_amx";
  const auto r = compare_docs(base, current);
  const auto isa = std::find_if(r.environment.begin(), r.environment.end(),
                                [](const EnvironmentField& f) { return f.field == "oneDNN ISA"; });
  ASSERT_NE(isa, r.environment.end());
  EXPECT_TRUE(isa->changed());
  EXPECT_EQ(isa->current, "avx512_core_amx");
}

TEST(CompareVerdicts, RunsWithoutACommonCaseAreRejected) {
  const auto bandwidth = document({timed_case("copy/n=1024", "fp32", samples_around(1e-6, 0.01), "bandwidth")});
  EXPECT_THROW(compare_docs(gemm_run(1e-4), bandwidth), UsageError);
}

TEST(CompareVerdicts, SameCaseInTwoDocumentsOfOneSideIsRejected) {
  EXPECT_THROW(make_result_set({{"a.json", gemm_run(1e-4)}, {"b.json", gemm_run(1e-4)}}), UsageError);
}

TEST(CompareVerdicts, SpeedupsAreComputedWhenTheDocumentStoredNone) {
  auto base = gemm_run(1e-4), current = gemm_run(1.25e-4);
  base.speedups.clear();
  current.speedups.clear();
  EXPECT_EQ(only_speedup(compare_docs(base, current)).verdict, Verdict::regressed);
}

TEST(CompareVerdicts, MarkdownEscapesPipesInCaseNames) {
  const auto run = document({timed_case("a|b", "fp32", samples_around(1e-3, 0.01)),
                             timed_case("a|b", "bf16", samples_around(1e-4, 0.01))});
  const auto markdown = render_markdown(compare_docs(run, run));
  EXPECT_NE(markdown.find("| gemm/a\\|b/cuda/bf16 |"), std::string::npos) << markdown;
}

// ---------------------------------------------------------------- documents on disk

TEST(CompareFiles, FixturePairRegressesWithTheLibraryUpgradeListed) {
  const auto r = compare(load_result_set(kFixtures / "gemm_base.json"),
                         load_result_set(kFixtures / "gemm_regressed.json"), {});
  ASSERT_EQ(r.count(Verdict::regressed), 1u);
  EXPECT_EQ(r.comparisons[0].key.label(), "gemm/square_2048/cuda/bf16");
  EXPECT_NEAR(r.comparisons[0].change, -0.2, 1e-9);
  bool cublas_changed = false;
  for (const auto& f : r.environment) cublas_changed |= f.field == "cuBLAS" && f.changed();
  EXPECT_TRUE(cublas_changed);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST(CompareFiles, FixtureWithChangedCasesListsThemAndPasses) {
  const auto r = compare(load_result_set(kFixtures / "gemm_base.json"),
                         load_result_set(kFixtures / "gemm_changed_cases.json"), {});
  ASSERT_EQ(r.added.size(), 1u);
  EXPECT_EQ(r.added[0].precision, "fp8-e4m3");
  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0].precision, "tf32");
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(CompareFiles, FoldersMatchCasesAcrossDocumentsAndIgnoreOtherJson) {
  const auto base = load_result_set(kFixtures / "folder_base");
  EXPECT_EQ(base.sources.size(), 2u);
  ASSERT_EQ(base.ignored_files.size(), 1u);
  EXPECT_NE(base.ignored_files[0].find("gbench_gemm.json"), std::string::npos);
  const auto r = compare(base, load_result_set(kFixtures / "folder_new"), {});
  EXPECT_EQ(r.count(Verdict::regressed), 1u);
  EXPECT_TRUE(r.missing.empty());
}

TEST(CompareFiles, UnusableInputIsAUsageError) {
  EXPECT_THROW(load_result_set(kFixtures / "malformed.json"), UsageError);
  EXPECT_THROW(load_result_set(kFixtures / "does_not_exist.json"), UsageError);
  try {
    load_result_set(kFixtures / "other_schema.json");
    FAIL() << "another schema version was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("mpbench.result/2"), std::string::npos) << e.what();
  }
}

TEST(CompareFiles, FolderWithoutResultsIsAUsageError) {
  const auto empty = scratch_path("empty_folder");
  std::filesystem::create_directories(empty);
  EXPECT_THROW(load_result_set(empty), UsageError);
  std::filesystem::remove_all(empty);
}

// ---------------------------------------------------------------- the command

// Runs `mpbench compare ARGS...` as main() does: UsageError becomes exit status 2.
int run_cli(std::vector<std::string> args, std::string* output = nullptr) {
  CLI::App app{"mpbench"};
  int exit_code = -1;
  cli::add_compare_command(app, exit_code);
  args.insert(args.begin(), {"mpbench", "compare"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const UsageError&) {
    exit_code = 2;
  }
  const std::string captured = testing::internal::GetCapturedStdout();
  if (output) *output = captured;
  return exit_code;
}

std::string fixture(const char* name) { return (kFixtures / name).string(); }

TEST(CompareCommand, ExitCodesForEveryOutcome) {
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json")}), 0);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json")}), 1);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("malformed.json")}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("other_schema.json")}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("bandwidth_base.json")}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("missing.json")}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json"), "--threshold", "5"}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json"), "--format", "html"}), 2);
}

TEST(CompareCommand, ThresholdAboveTheChangeLetsItPass) {
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json"), "--threshold", "25%"}), 0);
}

TEST(CompareCommand, JsonOutputParsesAndCarriesTheVerdicts) {
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json"), "--format", "json"}, &out), 1);
  const auto j = nlohmann::json::parse(out);
  EXPECT_TRUE(j.at("regressed").get<bool>());
  EXPECT_EQ(j.at("summary").at("regressed").get<int>(), 1);
  EXPECT_EQ(j.at("comparisons").at(0).at("verdict"), "regressed");
  EXPECT_EQ(j.at("comparisons").at(0).at("name"), "square_2048");
}

TEST(CompareCommand, MarkdownHasATableAndTheEnvironment) {
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json"), "--format", "markdown"}, &out), 1);
  EXPECT_NE(out.find("| verdict | case | metric | base | new | change | noise |"), std::string::npos) << out;
  EXPECT_NE(out.find("|---|"), std::string::npos);
  EXPECT_NE(out.find("| **regressed** | gemm/square_2048/cuda/bf16 |"), std::string::npos) << out;
  EXPECT_NE(out.find("**cuBLAS** (changed) | 12.4.5 | 12.5.2 |"), std::string::npos) << out;
}

TEST(CompareCommand, TextNamesTheRegressionAndTheEnvironmentChange) {
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json")}, &out), 1);
  EXPECT_NE(out.find("regressed  gemm/square_2048/cuda/bf16"), std::string::npos) << out;
  EXPECT_NE(out.find("cuBLAS"), std::string::npos) << out;
  EXPECT_NE(out.find("result: REGRESSED"), std::string::npos) << out;
}

TEST(CompareCommand, OutWritesTheRequestedFormatToAFile) {
  const auto path = scratch_path("out.md");
  std::filesystem::remove(path);
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json"), "--format", "markdown", "--out",
                     path.string()},
                    &out),
            0);
  std::ifstream in(path);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(written.find("### mpbench compare: no regression"), std::string::npos) << written;
  EXPECT_NE(out.find("result: no regression"), std::string::npos) << out;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mpbench::compare
