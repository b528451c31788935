// The suites' case lists and a real measurement of a few CPU cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <tuple>
#include <set>
#include <stdexcept>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/reference/reference_backend.hpp"
#include "core/error.hpp"
#include "microbench/runner.hpp"
#include "microbench/suite.hpp"
#include "microbench/table.hpp"

namespace mpbench::microbench {
namespace {

std::vector<CaseSpec> cases_of(const std::string& suite, Backend& backend, SuiteOptions options = {}) {
  const Suite* found = find_suite(suite);
  if (!found) throw std::invalid_argument("no microbenchmark suite " + suite);
  return found->cases(backend, options);
}

// The quick gemm cases of one shape in `precisions`, as the tests below measure them for real.
std::vector<CaseSpec> quick_gemm_cases(Backend& backend, std::vector<std::string> precisions, const std::string& name) {
  std::vector<CaseSpec> chosen;
  for (auto& c : cases_of("gemm", backend, {true, std::move(precisions), {}}))
    if (c.name == name) chosen.push_back(c);
  return chosen;
}

// The quick sampler with a one-second timeout, so that a real case costs the tests little.
SamplerConfig short_quick_sampler() {
  SamplerConfig quick = SamplerConfig::quick();
  quick.timeout_s = 1;
  return quick;
}

bool has_case(const std::vector<CaseSpec>& cases, const std::string& name) {
  return std::any_of(cases.begin(), cases.end(), [&](const CaseSpec& c) { return c.name == name; });
}

TEST(Suites, CaseIdsAreUnique) {
  auto cpu = cpu::make_backend();
  for (const auto& suite : suites()) {
    std::set<std::string> ids;
    for (const auto& c : suite.cases(*cpu, {})) {
      EXPECT_TRUE(ids.insert(c.id()).second) << c.id();
    }
    EXPECT_FALSE(ids.empty()) << suite.name;
  }
}

TEST(Suites, FindSuiteFindsEachMicrobenchmarkAndNothingElse) {
  for (const auto& suite : suites()) EXPECT_EQ(find_suite(suite.name), &suite) << suite.name;
  // The Transformer is a suite of the command line (cli/suite_selection.hpp), not a microbenchmark.
  for (const char* name : {"transformer", "all", "gemmm", "GEMM", ""}) EXPECT_EQ(find_suite(name), nullptr) << name;
}

TEST(GemmSuite, HasTheGpt2ShapesAndTheAlignmentSweep) {
  auto cpu = cpu::make_backend();
  const auto cases = cases_of("gemm", *cpu);
  EXPECT_TRUE(has_case(cases, "gpt2-124m/lm_head_50257"));
  EXPECT_TRUE(has_case(cases, "gpt2-124m/lm_head_50304"));
  EXPECT_TRUE(has_case(cases, "gpt2-124m/attn_qk"));
  EXPECT_TRUE(has_case(cases, "align_1023"));
  EXPECT_TRUE(has_case(cases, "square_2048"));
  for (const auto& c : cases)
    if (c.name == "gpt2-124m/qkv") {
      EXPECT_EQ(c.params["n"], 3 * 768);
      EXPECT_EQ(c.params["k"], 768);
    }
}

TEST(GemmSuite, UnsupportedPrecisionsAreSkippedWithTheirReason) {
  auto cpu = cpu::make_backend();
  for (const auto& c : cases_of("gemm", *cpu)) {
    if (c.precision == "tf32") {
      ASSERT_TRUE(c.skip_reason);
      EXPECT_NE(c.skip_reason->find("TF32"), std::string::npos);
    }
    if (c.precision == "fp32") {
      EXPECT_FALSE(c.skip_reason) << c.id();
    }
  }
}

TEST(GemmSuite, EveryCpuRunsFp16Bf16AndFp8NativelyOrConverted) {
  for (auto choice : {cpu::GemmPathChoice::automatic, cpu::GemmPathChoice::converted}) {
    auto cpu = cpu::make_backend({choice});
    for (const auto& c : cases_of("gemm", *cpu)) {
      if (c.precision != "fp16" && c.precision != "bf16" && c.precision != "fp8-e4m3") continue;
      const GemmShape shape{c.params["m"], c.params["n"], c.params["k"], c.params["batch"]};
      EXPECT_EQ(c.skip_reason, gemm_shape_rule(parse_gemm_precision(c.precision), shape)) << c.id();
    }
  }
}

TEST(GemmSuite, Fp8NeedsMultiplesOf16) {
  // The reference backend claims every precision, so only the alignment rule can skip.
  reference::ReferenceBackend r;
  for (const auto& c : cases_of("gemm", r))
    if (c.precision == "fp8-e4m3") {
      const bool aligned = c.params["m"].get<int>() % 16 == 0 && c.params["n"].get<int>() % 16 == 0 &&
                           c.params["k"].get<int>() % 16 == 0;
      EXPECT_EQ(c.skip_reason.has_value(), !aligned) << c.id();
    }
}

TEST(GemmSuite, PrecisionOptionSelects) {
  auto cpu = cpu::make_backend();
  SuiteOptions only_bf16;
  only_bf16.precisions = {"bf16"};
  for (const auto& c : cases_of("gemm", *cpu, only_bf16)) EXPECT_EQ(c.precision, "bf16");
}

TEST(BandwidthSuite, SweepCrossesTheCache) {
  auto cpu = cpu::make_backend();
  const double cache = static_cast<double>(cpu->device().usable_cache_bytes);
  double smallest = 1e30, largest = 0;
  for (const auto& c : cases_of("bandwidth", *cpu))
    if (c.params["kernel"] == "triad" && c.precision == "fp32") {
      smallest = std::min(smallest, c.params["bytes"].get<double>());
      largest = std::max(largest, c.params["bytes"].get<double>());
    }
  EXPECT_LT(smallest, cache);
  EXPECT_GT(largest, 4 * cache);
}

DeviceInfo device_with(std::uint64_t cache_bytes, std::uint64_t memory_bytes, std::string backend = "cuda") {
  DeviceInfo device;
  device.backend = std::move(backend);
  device.l2_bytes = cache_bytes;
  device.usable_cache_bytes = cache_bytes;
  device.memory_bytes = memory_bytes;
  return device;
}

TEST(BandwidthSuite, SweepGoesFromAnEighthToEightTimesTheCache) {
  const auto h200 = device_with(60ull << 20, 141ull << 30);  // 15.7M fp32 elements, rounded to 2^24
  EXPECT_EQ(bandwidth_sweep_elements(h200, true), (std::vector<std::int64_t>{1 << 21, 1 << 24, 1 << 27}));
  EXPECT_EQ(bandwidth_sweep_elements(h200, false),
            (std::vector<std::int64_t>{1 << 21, 1 << 22, 1 << 23, 1 << 24, 1 << 25, 1 << 26, 1 << 27}));
}

TEST(BandwidthSuite, SweepStopsWhereThreeArraysWouldTakeHalfTheMemory) {
  // A 480 MiB last-level cache (2^27 fp32 elements) in 23.4 GiB: the largest case's three fp32
  // arrays may take 11.7 GiB, so 2^29 elements (6 GiB) and not 2^30 (12 GiB).
  const auto vm = device_with(480ull << 20, 23400ull << 20, "cpu");
  // Quick on a CPU: an eighth of the cache and twice it.
  EXPECT_EQ(bandwidth_sweep_elements(vm, true), (std::vector<std::int64_t>{1 << 24, 1 << 28}));
  EXPECT_EQ(bandwidth_sweep_elements(vm, false),
            (std::vector<std::int64_t>{1 << 24, 1 << 25, 1 << 26, 1 << 27, 1 << 28, 1 << 29}));
  const auto small = device_with(480ull << 20, 1ull << 30, "cpu");  // 1 GiB: 2^25 elements at most
  EXPECT_EQ(bandwidth_sweep_elements(small, true), (std::vector<std::int64_t>{1 << 24, 1 << 25}));
}

// What the microbenchmark suites plan, counted (not timed): the cases that will be measured, the
// sampler runs they take (an fp8-e4m3 gemm case three: the GEMM, its casts, both end to end), the
// FLOPs and bytes of one launch of each.
struct PlannedWork {
  int cases = 0, samplings = 0;
  double flops = 0, bytes = 0;
};

PlannedWork planned_work(Backend& backend, bool quick) {
  SuiteOptions options;
  options.quick = quick;
  PlannedWork work;
  for (const auto& suite : suites()) {
    if (!suite.part_of_all) continue;  // what `run --suite all --quick` runs
    for (const auto& c : suite.cases(backend, options)) {
      if (c.skip_reason) continue;
      ++work.cases;
      work.samplings += c.suite == "gemm" && c.precision == "fp8-e4m3" ? 3 : 1;
      work.flops += c.params.value("flops", 0.0);
      work.bytes += c.params.value("bytes", 0.0);
    }
  }
  return work;
}

TEST(QuickPlan, IsSmallOnACpu) {
  auto cpu = cpu::make_backend();
  const PlannedWork quick = planned_work(*cpu, true), standard = planned_work(*cpu, false);
  // The sampler stops a run at its timeout (with 3 samples in): the cases' sampling budget
  // together, of a quick run's 90 s on 2 cores (30 s since the fp8 gemm cases' casts and end-to-end
  // runs, 22 of them on a CPU, were added to the 23 s the other cases take).
  EXPECT_LE(quick.samplings * SamplerConfig::quick().timeout_s, 30.0) << quick.samplings << " sampler runs";
  EXPECT_LE(quick.cases, standard.cases * 3 / 5);
  EXPECT_LE(quick.flops, 1.5e11);  // one launch of every GEMM; a case runs about 7
  EXPECT_LE(quick.flops, standard.flops / 6);
  EXPECT_LE(quick.bytes, standard.bytes / 4);
  // The bandwidth arrays on this project's VM (100 MiB of cache its 2 threads fill, 23.5 GiB): at
  // most 1 GiB for the largest case, 2 GiB filled in all (one set per size and dtype).
  const auto vm = device_with(104955904, 23500ull << 20, "cpu");
  const auto sizes = bandwidth_sweep_elements(vm, true);
  double filled = 0;
  for (const std::int64_t n : sizes) filled += 3.0 * (4 + 2 + 2) * static_cast<double>(n);
  EXPECT_LE(3.0 * 4 * static_cast<double>(sizes.back()), double(1ull << 30));
  EXPECT_LE(filled, double(2ull << 30));
  EXPECT_LT(static_cast<double>(sizes.front()) * 4, 104955904.0 / 4) << "a size inside the cache";
  EXPECT_GT(static_cast<double>(sizes.back()) * 4, 104955904.0) << "a size beyond it";
}

TEST(BandwidthSuite, BytesAreReadPlusWritten) {
  auto cpu = cpu::make_backend();
  for (const auto& c : cases_of("bandwidth", *cpu)) {
    if (c.params["kernel"] == "add" && c.precision == "bf16") {
      EXPECT_DOUBLE_EQ(c.params["bytes"].get<double>(), 3.0 * 2 * c.params["elements"].get<double>());
    }
    if (c.params["kernel"] == "copy" && c.precision == "fp32") {
      EXPECT_DOUBLE_EQ(c.params["bytes"].get<double>(), 2.0 * 4 * c.params["elements"].get<double>());
    }
  }
}

// The reference loops on a device of a 64 KiB cache (the sweep's smallest: 2^16 fp32 elements),
// counting the buffers it hands out and the fills.
class CountingBackend final : public reference::ReferenceBackend {
 public:
  CountingBackend() { info_.usable_cache_bytes = 64 << 10; }
  DeviceBuffer allocate(DType dtype, std::size_t count) override {
    ++live;
    return ReferenceBackend::allocate(dtype, count);
  }
  void release(void* data) noexcept override {
    --live;
    ReferenceBackend::release(data);
  }
  void fill_uniform(DeviceBuffer& buffer, std::uint64_t seed, float lo, float hi) override {
    ++fills;
    ReferenceBackend::fill_uniform(buffer, seed, lo, hi);
  }
  int live = 0, fills = 0;
};

TEST(BandwidthSuite, CasesOfOneSizeAndDtypeShareTheirFilledArrays) {
  CountingBackend backend;
  SuiteOptions quick;
  quick.quick = true;
  SamplerConfig config = SamplerConfig::quick();
  config.timeout_s = 0.01;
  std::set<std::pair<std::int64_t, std::string>> sets;
  int stream_cases = 0;
  for (const auto& c : cases_of("bandwidth", backend, quick)) {
    if (c.params["kernel"] == "h2d_pinned" || c.params["kernel"] == "d2h_pinned") continue;
    const CaseResult r = c.measure(backend, config, nullptr);
    EXPECT_GT(r.rates["gbps"].get<double>(), 0) << c.id();
    sets.insert({c.params["elements"].get<std::int64_t>(), c.precision});
    ++stream_cases;
  }
  const auto sizes = static_cast<int>(bandwidth_sweep_elements(backend.device(), true).size());
  EXPECT_EQ(sets.size(), 3u * sizes);  // three dtypes per size
  EXPECT_EQ(stream_cases, sizes * (1 + 5 * 3));  // memcpy and five kernels in three dtypes per size
  EXPECT_EQ(backend.fills, 2 * static_cast<int>(sets.size()));  // a and b of each set, once
  EXPECT_EQ(backend.live, 0);  // released after each size's last case
}

TEST(BandwidthSuite, AFilteredRunReleasesItsArraysWithTheCases) {
  CountingBackend backend;
  SuiteOptions fp16;
  fp16.quick = true;
  fp16.precisions = {"fp16"};
  SamplerConfig config = SamplerConfig::quick();
  config.timeout_s = 0.01;
  {
    const auto cases = cases_of("bandwidth", backend, fp16);
    ASSERT_FALSE(cases.empty());
    cases.front().measure(backend, config, nullptr);  // not the size's last: its arrays stay for the rest
    EXPECT_GT(backend.live, 0);
  }
  EXPECT_EQ(backend.live, 0);
}

TEST(CastSuite, Fp8CastCountsItsAmaxPass) {
  auto cpu = cpu::make_backend();
  int fp8_casts = 0;
  for (const auto& c : cases_of("cast", *cpu)) {
    // Per element: the input read twice (4 or 2 bytes), one byte written.
    const double per_element = c.params["kernel"] == "f32_to_e4m3_scaled"    ? 9.0
                               : c.params["kernel"] == "bf16_to_e4m3_scaled" ? 5.0
                                                                              : 0.0;
    if (per_element == 0) continue;
    EXPECT_DOUBLE_EQ(c.params["bytes"].get<double>(), per_element * c.params["elements"].get<double>());
    EXPECT_EQ(c.precision, "fp8-e4m3");
    ++fp8_casts;
  }
  EXPECT_EQ(fp8_casts, 2);
}

// Each fp8-e4m3 case also measures the current-scaling casts of bf16 A and B, alone and then with
// the GEMM: the share of the end-to-end time and both rates from the shape's flops and the
// recorded seconds. Other precisions have no such record.
TEST(GemmSuite, Fp8CasesMeasureTheirCastsFromBf16) {
  auto cpu = cpu::make_backend();
  const std::vector<CaseSpec> chosen = quick_gemm_cases(*cpu, {"fp8-e4m3", "bf16"}, "square_256");
  ASSERT_EQ(chosen.size(), 2u);
  const RunOutcome outcome = run_cases(*cpu, chosen, short_quick_sampler(), {}, nullptr);
  ASSERT_EQ(outcome.cases.size(), 2u);
  for (const CaseResult& c : outcome.cases) {
    ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
    if (c.precision != "fp8-e4m3") {
      EXPECT_FALSE(c.details.contains("quantize")) << c.precision;
      EXPECT_FALSE(c.rates.contains("tflops_end_to_end")) << c.precision;
      continue;
    }
    const auto& q = c.details["quantize"];
    const double flops = 2.0 * 256 * 256 * 256, end_to_end = q["end_to_end_seconds"].get<double>();
    EXPECT_GT(q["seconds"].get<double>(), 0);
    EXPECT_EQ(q["gemm_seconds"].get<double>(), c.seconds->median);
    EXPECT_DOUBLE_EQ(q["share"].get<double>(), q["seconds"].get<double>() / end_to_end);
    // Not below 1, nor the end-to-end rate below the GEMM's: medians of separate samplings, which
    // the noise of a shared machine can put either way (a timing, not a property).
    EXPECT_GT(q["share"].get<double>(), 0);
    EXPECT_EQ(q["from"], "bf16");
    EXPECT_EQ(q["recipe"], "current scaling, per tensor");
    EXPECT_DOUBLE_EQ(c.rates["tflops_end_to_end"].get<double>(), flops / end_to_end / 1e12);
    EXPECT_DOUBLE_EQ(c.rates["tflops"].get<double>(), flops / c.seconds->median / 1e12) << "the GEMM alone";
  }
}

// The fused cast-transpose-amax: one case of the suite's element count as rows x 2048, its bytes
// declared once (2 read, 2 written per element) and the rate derived from them; it runs.
TEST(CastSuite, CastTransposeCaseCountsOneReadAndTwoCodeWrites) {
  auto cpu = cpu::make_backend();
  std::vector<CaseSpec> chosen;
  for (auto& c : cases_of("cast", *cpu, {true, {"fp8-e4m3"}, {}}))
    if (c.params["kernel"] == "bf16_to_e4m3_transpose_amax") chosen.push_back(c);
  ASSERT_EQ(chosen.size(), 1u);
  const CaseSpec& spec = chosen[0];
  EXPECT_EQ(spec.precision, "fp8-e4m3");
  const double elements = spec.params["elements"].get<double>();
  EXPECT_EQ(elements, spec.params["rows"].get<double>() * spec.params["cols"].get<double>());
  EXPECT_DOUBLE_EQ(spec.params["bytes"].get<double>(), 4.0 * elements);
  SamplerConfig quick = SamplerConfig::quick();
  quick.timeout_s = 1;
  const RunOutcome outcome = run_cases(*cpu, chosen, quick, {}, nullptr);
  ASSERT_EQ(outcome.cases.size(), 1u);
  const CaseResult& r = outcome.cases[0];
  ASSERT_EQ(r.status, CaseStatus::ok) << r.message;
  EXPECT_DOUBLE_EQ(r.rates["gbps"].get<double>(), 4.0 * elements / r.seconds->median / 1e9);
}

TEST(PercentOfCopy, UsesTheCopyOfTheSameSize) {
  std::vector<CaseResult> cases(4);
  for (auto& c : cases) c.suite = "cast";
  cases[3].suite = "bandwidth";  // another suite's copy of the same size is not this suite's ceiling
  cases[3].params = {{"kernel", "copy"}, {"elements", 100}};
  cases[3].rates = {{"gbps", 25.0}};
  cases[0].params = {{"kernel", "copy"}, {"elements", 100}};
  cases[0].rates = {{"gbps", 50.0}};
  cases[1].params = {{"kernel", "f32_to_bf16"}, {"elements", 100}};
  cases[1].rates = {{"gbps", 40.0}};
  cases[2].params = {{"kernel", "f32_to_bf16"}, {"elements", 200}};  // no copy of that size
  cases[2].rates = {{"gbps", 40.0}};
  add_percent_of_copy(cases, "cast", "copy");
  EXPECT_DOUBLE_EQ(cases[0].rates["pct_of_copy"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(cases[1].rates["pct_of_copy"].get<double>(), 80.0);
  EXPECT_FALSE(cases[2].rates.contains("pct_of_copy"));
  EXPECT_FALSE(cases[3].rates.contains("pct_of_copy"));
}

TEST(PercentOfCopy, NamesTheCopyItIsRelativeTo) {
  std::vector<CaseResult> cases(3);
  for (auto& c : cases) {
    c.suite = "bandwidth";
    c.precision = "fp32";
  }
  cases[0].name = "memcpy/n=100";
  cases[0].params = {{"kernel", "memcpy"}, {"elements", 100}};
  cases[0].rates = {{"gbps", 50.0}};
  cases[1].name = "memcpy/n=100";  // a slower repetition: the fastest copy is the ceiling
  cases[1].precision = "fp16";
  cases[1].params = {{"kernel", "memcpy"}, {"elements", 100}};
  cases[1].rates = {{"gbps", 20.0}};
  cases[2].name = "triad/n=100";
  cases[2].params = {{"kernel", "triad"}, {"elements", 100}};
  cases[2].rates = {{"gbps", 30.0}};
  add_percent_of_copy(cases, "bandwidth", "memcpy");
  const nlohmann::json fastest = {{"name", "memcpy/n=100"}, {"precision", "fp32"}};
  EXPECT_EQ(cases[2].details["copy_reference"], fastest);
  EXPECT_DOUBLE_EQ(cases[2].rates["pct_of_copy"].get<double>(), 60.0);
  EXPECT_EQ(cases[0].details["copy_reference"], fastest) << "the copy names itself";
  EXPECT_DOUBLE_EQ(cases[1].rates["pct_of_copy"].get<double>(), 40.0);
}

TEST(RunTable, MarksCasesThatStoppedBeforeTheirNoiseTarget) {
  ResultDocument d;
  for (const bool converged : {true, false}) {
    CaseResult c;
    c.suite = "gemm";
    c.name = converged ? "square_256" : "square_512";
    c.backend = "cpu";
    c.precision = "fp32";
    c.seconds = Statistics::of({1e-3, 1.1e-3, 0.9e-3});
    c.details["measurement"] = {{"converged", converged}, {"stop_reason", converged ? "noise" : "timeout"}};
    d.cases.push_back(c);
  }
  const std::string table = format_summary(d);
  const auto row = [&](const std::string& name) {
    const auto at = table.find(name);
    return table.substr(at, table.find('\n', at) - at);
  };
  EXPECT_EQ(row("square_256").find("%*"), std::string::npos) << table;
  EXPECT_NE(row("square_512").find("%*"), std::string::npos) << table;
  EXPECT_NE(table.find("* 1 of 2 cases stopped before their noise target"), std::string::npos) << table;
}

TEST(Runner, MeasuresRealCpuCasesThroughGoogleBenchmark) {
  auto cpu = cpu::make_backend();
  const std::vector<CaseSpec> chosen = quick_gemm_cases(*cpu, {"fp32", "bf16", "tf32"}, "square_512");
  ASSERT_EQ(chosen.size(), 3u);
  std::size_t progress_calls = 0;
  const RunOutcome outcome = run_cases(*cpu, chosen, short_quick_sampler(), {}, [&](std::size_t, std::size_t, const CaseResult&) { ++progress_calls; });
  ASSERT_EQ(outcome.cases.size(), 3u);
  EXPECT_EQ(progress_calls, 2u);  // tf32 is skipped, not measured
  for (const auto& c : outcome.cases) {
    if (c.precision == "tf32") {
      EXPECT_EQ(c.status, CaseStatus::skipped);
      continue;
    }
    ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
    EXPECT_GE(c.seconds->values.size(), 3u);
    const double expected_tflops = 2.0 * 512 * 512 * 512 / c.seconds->median / 1e12;
    EXPECT_DOUBLE_EQ(c.rates["tflops"].get<double>(), expected_tflops);
    EXPECT_FALSE(c.details["algorithm"]["implementation"].get<std::string>().empty());
    EXPECT_EQ(c.details["gemm_path"]["path"],
              gemm_path_name(cpu->capabilities().path(parse_gemm_precision(c.precision))));
  }
  ResultDocument d;
  d.cases = outcome.cases;
  d.compute_speedups();
  ASSERT_EQ(d.speedups.size(), 1u);
  EXPECT_NE(format_summary(d).find("square_512"), std::string::npos);
}

TEST(Runner, ProgressCountsTheMeasurementsThatRun) {
  auto cpu = cpu::make_backend();
  std::vector<CaseSpec> chosen;
  for (auto& c : cases_of("gemm", *cpu, {true, {"fp32", "bf16", "tf32"}, {}}))
    if (c.name == "square_512") chosen.push_back(c);
  ASSERT_EQ(chosen.size(), 3u);  // tf32 among them, skipped on a CPU
  EXPECT_EQ(measurements_to_run(chosen, {}), 2u);
  EXPECT_EQ(measurements_to_run(chosen, {"--benchmark_filter=fp32"}), 1u);
  EXPECT_EQ(measurements_to_run(chosen, {"--benchmark_filter=-fp32"}), 1u);
  EXPECT_EQ(measurements_to_run(chosen, {"--benchmark_filter=bf16|fp32", "--benchmark_repetitions=3"}), 6u);
  SamplerConfig quick = SamplerConfig::quick();
  quick.timeout_s = 0.2;
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  run_cases(*cpu, chosen, quick, {"--benchmark_repetitions=2"},
            [&](std::size_t done, std::size_t total, const CaseResult&) { calls.emplace_back(done, total); });
  EXPECT_EQ(calls, (std::vector<std::pair<std::size_t, std::size_t>>{{1, 4}, {2, 4}, {3, 4}, {4, 4}}));
}

TEST(Runner, AConvertedCaseRecordsItsPathAndItsSteps) {
  auto cpu = cpu::make_backend({cpu::GemmPathChoice::converted});
  const std::vector<CaseSpec> chosen = quick_gemm_cases(*cpu, {"bf16"}, "square_512");
  ASSERT_EQ(chosen.size(), 1u);
  const RunOutcome outcome = run_cases(*cpu, chosen, short_quick_sampler(), {}, nullptr);
  ASSERT_EQ(outcome.cases.size(), 1u);
  const CaseResult& c = outcome.cases.front();
  ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
  EXPECT_EQ(c.details["gemm_path"]["path"], "converted");
  EXPECT_NE(c.details["gemm_path"]["reason"].get<std::string>().find("--cpu-gemm converted"), std::string::npos);
  const std::string steps = c.details["algorithm"]["steps"].dump();
  EXPECT_NE(steps.find("bf16 -> fp32"), std::string::npos) << steps;
  EXPECT_NE(steps.find("fp32 -> bf16"), std::string::npos) << steps;
  ResultDocument d;
  d.cases = outcome.cases;
  const std::string table = format_summary(d);
  EXPECT_NE(table.find("converted: " + c.details["algorithm"]["implementation"].get<std::string>()), std::string::npos)
      << table;
}

TEST(Runner, UnknownGoogleBenchmarkOptionIsAUsageError) {
  auto cpu = cpu::make_backend();
  EXPECT_THROW(run_cases(*cpu, {}, SamplerConfig::quick(), {"--benchmark_no_such_flag=1"}, nullptr), UsageError);
}

// Google Benchmark does not check its writes: a --benchmark_out file that is missing, empty or
// (json) cut short is named after the run; a whole one is not.
TEST(Runner, AnIncompleteBenchmarkOutIsNamed) {
  const auto dir = std::filesystem::temp_directory_path() / ("mpbench-gb-out-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto out = dir / "gb.json";
  const auto problem_with = [&](const std::string* text, const std::string& format) {
    std::filesystem::remove(out);
    if (text) std::ofstream(out, std::ios::binary) << *text;
    return benchmark_out_problem({"--benchmark_out=" + out.string(), "--benchmark_out_format=" + format});
  };
  const std::string whole = R"({"context": {}, "benchmarks": [{"name": "a"}]})";
  EXPECT_EQ(problem_with(&whole, "json"), std::nullopt);
  const std::string csv = "name,iterations\na,1\n";
  EXPECT_EQ(problem_with(&csv, "csv"), std::nullopt);
  const std::string empty, cut = whole.substr(0, whole.size() / 2 + std::random_device{}() % (whole.size() / 2));
  for (const auto& [text, format, says] : {std::tuple{&empty, "json", "is empty"}, std::tuple{&empty, "csv", "is empty"},
                                           std::tuple{&cut, "json", "not valid JSON"},
                                           std::tuple{static_cast<const std::string*>(nullptr), "json", "is missing"}}) {
    const auto problem = problem_with(text, format);
    ASSERT_TRUE(problem.has_value()) << format << " " << (text ? *text : "no file");
    EXPECT_NE(problem->find(says), std::string::npos) << *problem;
    EXPECT_NE(problem->find(out.string()), std::string::npos) << *problem;
  }
  EXPECT_EQ(benchmark_out_problem({"--benchmark_format=json"}), std::nullopt);  // no --benchmark_out
  std::filesystem::remove_all(dir);
}

// --benchmark_filter as Google Benchmark reads it (a leading '-' negates): refused when it is no
// regular expression or matches none of the cases that would run, before anything runs.
TEST(Runner, BenchmarkFilterIsCheckedBeforeTheRun) {
  auto cpu = cpu::make_backend();
  std::vector<CaseSpec> specs;
  for (auto& c : cases_of("cast", *cpu, {true, {}, {}})) specs.push_back(c);
  ASSERT_FALSE(specs.empty());
  const std::string id = specs.front().id();
  for (const std::string& ok : std::vector<std::string>{"--benchmark_filter=" + id, "--benchmark_filter=all",
                                                         "--benchmark_filter=", "--benchmark_filter=-no_such_case",
                                                         "--benchmark_filter=manual_time"})
    EXPECT_NO_THROW(check_benchmark_filter(specs, {ok})) << ok;
  for (const std::string bad : {"--benchmark_filter=no_such_case", "--benchmark_filter=-.", "--benchmark_filter=-cast"}) {
    try {
      check_benchmark_filter(specs, {bad});
      ADD_FAILURE() << bad << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("no case matches " + bad), std::string::npos) << e.what();
    }
  }
  for (const std::string bad : {"--benchmark_filter=(", "--benchmark_filter=-[a", "--benchmark_filter=a{2,1}"})
    EXPECT_THROW(configure_google_benchmark({bad}), UsageError) << bad;
  for (const std::string bad : {"--benchmark_format=xml", "--benchmark_out_format=JSON", "--benchmark_format="})
    EXPECT_THROW(configure_google_benchmark({bad}), UsageError) << bad;
}

// A communicator of one rank on the CPU, where each collective is a copy: what MPI does at world
// size 1. `corrupt` changes element 3 of every all-reduce result by 1%, which the check must catch.
class CopyCommunicator final : public Communicator {
 public:
  explicit CopyCommunicator(bool corrupt) : corrupt_(corrupt) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string library() const override { return "copy"; }
  std::optional<std::string> unsupported(Collective, DType dtype) const override {
    if (dtype == DType::f32 || dtype == DType::bf16) return std::nullopt;
    return "not in this test";
  }
  std::string reduction(DType) const override { return "none"; }
  void all_reduce_sum(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    std::memcpy(receive.data(), send.data(), count * dtype_size(send.dtype()));
    if (corrupt_ && send.dtype() == DType::f32) static_cast<float*>(receive.data())[3] *= 1.01f;
  }
  void reduce_scatter_sum(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    std::memcpy(receive.data(), send.data(), count * dtype_size(send.dtype()));
  }
  void all_gather(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    std::memcpy(receive.data(), send.data(), count * dtype_size(send.dtype()));
  }
  void broadcast(DeviceBuffer&, std::size_t, int) override {}
  void synchronize() override {}

 private:
  bool corrupt_;
};

std::vector<CaseResult> run_collectives(bool corrupt) {
  auto cpu = cpu::make_backend();
  CopyCommunicator comm(corrupt);
  auto group = single_process_group();
  SuiteOptions options;
  options.quick = true;
  options.communicator = &comm;
  options.group = group.get();
  std::vector<CaseResult> results;
  for (const CaseSpec& spec : cases_of("collective", *cpu, options))
    results.push_back(spec.skip_reason ? spec.skipped("cpu") : spec.measure(*cpu, SamplerConfig::quick(), nullptr));
  return results;
}

TEST(CollectiveSuite, EveryCollectiveAndDtypeIsACaseWithItsBandwidths) {
  std::set<std::tuple<std::string, std::string>> seen;
  for (const CaseResult& r : run_collectives(false)) {
    seen.insert({r.params["collective"].get<std::string>(), r.precision});
    EXPECT_EQ(r.params["world_size"], 1);
    if (r.precision != "fp32" && r.precision != "bf16") {
      EXPECT_EQ(r.status, CaseStatus::skipped) << r.name;
      EXPECT_EQ(r.message, "not in this test");
      continue;
    }
    ASSERT_EQ(r.status, CaseStatus::ok) << r.name << " " << r.precision << ": " << r.message;
    // nccl-tests: algbw = bytes / time; busbw = algbw * 2(n-1)/n for all-reduce, 0 for one rank.
    EXPECT_NEAR(r.rates["algbw_gbps"].get<double>(), r.params["bytes"].get<double>() / r.seconds->median / 1e9, 1e-9);
    if (r.params["collective"] != "broadcast") {
      EXPECT_EQ(r.rates["busbw_gbps"].get<double>(), 0.0) << r.name;
    }
    EXPECT_EQ(r.details["communication"]["library"], "copy");
  }
  EXPECT_EQ(seen.size(), 4u * 5u) << "four collectives in five dtypes";
}

TEST(CollectiveSuite, AResultOffTheSerialReferenceFailsItsCase) {
  for (const CaseResult& r : run_collectives(true)) {
    const bool corrupted = r.params["collective"] == "all_reduce" && r.precision == "fp32";
    if (r.status == CaseStatus::skipped) continue;
    EXPECT_EQ(r.status, corrupted ? CaseStatus::error : CaseStatus::ok) << r.name << " " << r.precision;
    if (corrupted) {
      EXPECT_NE(r.message.find("rank 0: element 3"), std::string::npos) << r.message;
    }
  }
}

}  // namespace
}  // namespace mpbench::microbench
