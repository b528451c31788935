// --profile for the microbenchmark suites: the summary of hand-built activity records, the CPU's
// and an unavailable CUPTI's honest "unprofiled", the runner handing each measured case's op to
// the profiler after its measurement, and on a GPU a real GEMM case profiled with CUPTI.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/registry.hpp"
#include "microbench/case_profile.hpp"
#include "microbench/runner.hpp"
#include "profiler/classify.hpp"
#include "profiler/cupti_collector.hpp"
#include "tests/profiler/records.hpp"

namespace mpbench::microbench {
namespace {

using profiler::testing::kernel;

constexpr const char* kNvjet = "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN";

// `launches` launches of `name`, each `duration_ns` long, back to back from `start`.
void add_launches(profiler::Trace& t, const std::string& name, int launches, std::uint64_t duration_ns,
                  std::uint64_t start = 0) {
  for (int i = 0; i < launches; ++i) {
    const std::uint64_t begin = start + static_cast<std::uint64_t>(i) * 2 * duration_ns;
    t.kernels.push_back(kernel(name, begin, begin + duration_ns, static_cast<std::uint32_t>(t.kernels.size() + 1)));
  }
}

TEST(SummarizeCaseProfile, ListsTheKernelsOfAGemmCaseWithTheirShareOfTheMeasuredTime) {
  profiler::Trace t;
  add_launches(t, kNvjet, 5, 100'000);
  add_launches(t, "reduce_kernel", 5, 10'000, 5'000'000);
  const auto p = summarize_case_profile(t, 5, 125e-6);
  EXPECT_EQ(p["status"], "profiled");
  EXPECT_EQ(p["source"], "cupti");
  EXPECT_EQ(p["iterations"], 5);
  ASSERT_EQ(p["kernels"].size(), 2u) << p;
  const auto& gemm = p["kernels"][0];
  EXPECT_EQ(gemm["name"], kNvjet);
  EXPECT_EQ(gemm["category"], "gemm_tensor_core");
  EXPECT_EQ(gemm["tensor_cores"], "named");
  EXPECT_EQ(gemm["launches"], 5);
  EXPECT_NEAR(gemm["total_s"].get<double>(), 500e-6, 1e-15);
  EXPECT_NEAR(gemm["mean_s"].get<double>(), 100e-6, 1e-15);
  EXPECT_EQ(p["kernels"][1]["name"], "reduce_kernel");
  EXPECT_EQ(p["kernels"][1]["launches"], 5);
  EXPECT_NEAR(p["kernels"][1]["total_s"].get<double>(), 50e-6, 1e-15);
  EXPECT_EQ(p["distinct_kernels"], 2);
  EXPECT_NEAR(p["kernel_s_per_iteration"].get<double>(), 110e-6, 1e-15);
  EXPECT_DOUBLE_EQ(p["measured_s"].get<double>(), 125e-6);
  EXPECT_NEAR(p["kernel_share"].get<double>(), 0.88, 1e-12);
}

TEST(SummarizeCaseProfile, ACudaCoreGemmHasNoTensorCoreEvidence) {
  profiler::Trace t;
  add_launches(t, "ampere_sgemm_128x64_tn", 3, 50'000);
  const auto p = summarize_case_profile(t, 3, 60e-6);
  ASSERT_EQ(p["kernels"].size(), 1u);
  EXPECT_EQ(p["kernels"][0]["category"], "gemm_cuda_core");
  EXPECT_EQ(p["kernels"][0]["tensor_cores"], "no_evidence");
}

TEST(SummarizeCaseProfile, ListsTheFiveLongestButCountsEveryKernel) {
  profiler::Trace t;
  for (int i = 0; i < 7; ++i) add_launches(t, fmt::format("k{}", i), 1, 1000 * (i + 1), 100'000 * i);
  add_launches(t, "b_tie", 1, 7000, 1'000'000);  // as long as k6: equal totals go in name order
  add_launches(t, "a_tie", 1, 7000, 2'000'000);
  const auto p = summarize_case_profile(t, 1, 1e-4);
  std::vector<std::string> names;
  for (const auto& k : p["kernels"]) names.push_back(k["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"a_tie", "b_tie", "k6", "k5", "k4"}));
  EXPECT_EQ(p["distinct_kernels"], 9);
  EXPECT_NEAR(p["kernel_s_per_iteration"].get<double>(), 42e-6, 1e-15);  // 1+...+7 + 7 + 7 us
  EXPECT_NEAR(p["kernel_share"].get<double>(), 0.42, 1e-12);
}

TEST(SummarizeCaseProfile, CopiesAndMemsetsCountAsCopyActivity) {
  profiler::Trace t;
  for (std::uint64_t i = 0; i < 2; ++i)
    t.memcpys.push_back({profiler::CopyKind::device_to_device, 1 << 20, {i * 100, i * 100 + 40}, {}});
  t.memcpys.push_back({profiler::CopyKind::host_to_device, 1 << 20, {1000, 1100}, {}});
  t.memsets.push_back({1 << 10, {2000, 2010}, {}});
  const auto p = summarize_case_profile(t, 2, 100e-9);
  ASSERT_EQ(p["kernels"].size(), 3u) << p;
  EXPECT_EQ(p["kernels"][0]["name"], "[memcpy HtoD]");
  EXPECT_EQ(p["kernels"][1]["name"], "[memcpy DtoD]");
  EXPECT_EQ(p["kernels"][1]["launches"], 2);
  EXPECT_EQ(p["kernels"][2]["name"], "[memset]");
  for (const auto& k : p["kernels"]) {
    EXPECT_EQ(k["category"], "copy");
    EXPECT_EQ(k["tensor_cores"], "no_evidence");
  }
  EXPECT_NEAR(p["kernel_s_per_iteration"].get<double>(), 95e-9, 1e-18);  // (40 + 40 + 100 + 10) ns over 2
}

TEST(SummarizeCaseProfile, NoRecordsIsUnprofiledNotAnEmptyProfile) {
  const auto p = summarize_case_profile(profiler::Trace{}, 5, 1e-3);
  EXPECT_EQ(p["status"], "unprofiled");
  EXPECT_NE(p["reason"].get<std::string>().find("no kernel"), std::string::npos) << p;
  EXPECT_FALSE(p.contains("kernels"));
}

TEST(RebaseCaseProfile, MovesTheShareToAnotherMedianAndLeavesUnprofiledAlone) {
  profiler::Trace t;
  add_launches(t, kNvjet, 2, 50'000);
  auto p = summarize_case_profile(t, 2, 100e-6);
  EXPECT_NEAR(p["kernel_share"].get<double>(), 0.5, 1e-12);
  rebase_case_profile(p, 200e-6);
  EXPECT_DOUBLE_EQ(p["measured_s"].get<double>(), 200e-6);
  EXPECT_NEAR(p["kernel_share"].get<double>(), 0.25, 1e-12);
  nlohmann::json unprofiled = {{"status", "unprofiled"}, {"reason", "why"}};
  const nlohmann::json before = unprofiled;
  rebase_case_profile(unprofiled, 200e-6);
  EXPECT_EQ(unprofiled, before);
}

TEST(CaseProfiler, CpuCasesAreUnprofiledWithTheReasonAndOneNote) {
  auto cpu = cpu::make_backend();
  std::vector<std::string> notes;
  auto profiler = make_case_profiler(cpu->device(), [&](const std::string& n) { notes.push_back(n); });
  int runs = 0;
  for (int i = 0; i < 2; ++i) {
    const auto p = profiler->profile(*cpu, [&] { ++runs; }, 1e-3);
    EXPECT_EQ(p["status"], "unprofiled");
    EXPECT_NE(p["reason"].get<std::string>().find("CUPTI on CUDA GPUs only"), std::string::npos) << p;
  }
  EXPECT_EQ(runs, 0) << "nothing to record on the CPU: the op is left alone";
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("CUPTI on CUDA GPUs only"), std::string::npos) << notes[0];
}

// An op that launches nothing yields no records wherever CUPTI runs, and no CUPTI (this machine)
// a CuptiUnavailable: unprofiled either way, never a made-up profile.
TEST(CaseProfiler, CuptiWithNothingRecordedIsUnprofiledWithOneNote) {
  auto cpu = cpu::make_backend();
  DeviceInfo gpu = cpu->device();
  gpu.backend = "cuda";
  std::vector<std::string> notes;
  auto profiler = make_case_profiler(gpu, [&](const std::string& n) { notes.push_back(n); });
  for (int i = 0; i < 2; ++i) {
    const auto p = profiler->profile(*cpu, [] {}, 1e-3);
    EXPECT_EQ(p["status"], "unprofiled") << p;
    EXPECT_FALSE(p["reason"].get<std::string>().empty());
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("--profile"), std::string::npos) << notes[0];
}

// Runs the case's op once and reports one 1 us kernel per run: what the runner does with it.
class RecordingProfiler final : public CaseProfiler {
 public:
  nlohmann::json profile(Backend&, const std::function<void()>& op, double measured_s) override {
    op();
    measured.push_back(measured_s);
    profiler::Trace t;
    add_launches(t, "ampere_sgemm_128x64_tn", 1, 1000);
    return summarize_case_profile(t, 1, measured_s);
  }
  std::vector<double> measured;
};

std::vector<CaseSpec> cpu_gemm_cases(Backend& cpu, const std::vector<std::string>& precisions) {
  std::vector<CaseSpec> chosen;
  for (auto& c : find_suite("gemm")->cases(cpu, {true, precisions, {}}))
    if (c.name == "square_512") chosen.push_back(c);
  return chosen;
}

SamplerConfig short_sampler() {
  SamplerConfig quick = SamplerConfig::quick();
  quick.timeout_s = 1;
  return quick;
}

TEST(Runner, ProfilesEachMeasuredCaseAfterItsMeasurement) {
  auto cpu = cpu::make_backend();
  const auto chosen = cpu_gemm_cases(*cpu, {"fp32", "bf16", "tf32"});
  ASSERT_EQ(chosen.size(), 3u);
  RecordingProfiler recording;
  const RunOutcome outcome = run_cases(*cpu, chosen, short_sampler(), {}, nullptr, &recording);
  ASSERT_EQ(outcome.cases.size(), 3u);
  EXPECT_EQ(recording.measured.size(), 2u) << "tf32 is skipped, so not profiled";
  for (const auto& c : outcome.cases) {
    if (c.status == CaseStatus::skipped) {
      EXPECT_FALSE(c.details.contains("profile"));
      continue;
    }
    ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
    const auto& p = c.details["profile"];
    ASSERT_EQ(p["status"], "profiled") << p;
    // The profiler got the finished measurement's median: it ran after, not during, the sampling.
    EXPECT_EQ(p["measured_s"].get<double>(), c.seconds->median);
    EXPECT_DOUBLE_EQ(p["kernel_share"].get<double>(), 1e-6 / c.seconds->median);
  }
}

TEST(Runner, RepetitionsProfileACaseOnceAgainstThePooledMedian) {
  auto cpu = cpu::make_backend();
  const auto chosen = cpu_gemm_cases(*cpu, {"fp32"});
  ASSERT_EQ(chosen.size(), 1u);
  RecordingProfiler recording;
  struct ResetRepetitions {  // Google Benchmark's flags outlive this test
    ~ResetRepetitions() { configure_google_benchmark({"--benchmark_repetitions=1"}); }
  } reset;
  const RunOutcome outcome = run_cases(*cpu, chosen, short_sampler(), {"--benchmark_repetitions=2"}, nullptr, &recording);
  ASSERT_EQ(outcome.cases.size(), 1u);
  const CaseResult& c = outcome.cases[0];
  ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
  EXPECT_EQ(c.details["repetitions"], 2);
  EXPECT_EQ(recording.measured.size(), 1u);
  const auto& p = c.details["profile"];
  EXPECT_EQ(p["measured_s"].get<double>(), c.seconds->median);
  EXPECT_DOUBLE_EQ(p["kernel_share"].get<double>(), 1e-6 / c.seconds->median);
}

// On a GPU: a bf16 GEMM case profiled with CUPTI lists its cuBLASLt kernel, and the kernel time
// per run is about the measured median (the GEMM is long enough for launch gaps not to matter).
TEST(CaseProfilerOnGpu, ABf16GemmCaseListsItsCublasLtKernel) {
  if (const auto why = cuda_unavailable_reason()) GTEST_SKIP() << "no usable GPU: " << *why;
  try {
    profiler::CuptiCollector probe;
    probe.stop();
  } catch (const profiler::CuptiUnavailable& e) {
    if (!e.refused_by_the_machine()) FAIL() << e.what();
    GTEST_SKIP() << "CUPTI cannot collect here: " << e.what();
  }
  BackendChoice choice = choose_backend("cuda");
  Backend& gpu = *choice.backend;
  std::vector<CaseSpec> chosen;
  for (auto& c : find_suite("gemm")->cases(gpu, {true, {"bf16"}, {}}))
    if (c.name == "square_4096") chosen.push_back(c);
  ASSERT_EQ(chosen.size(), 1u);
  if (chosen[0].skip_reason) GTEST_SKIP() << *chosen[0].skip_reason;
  std::vector<std::string> notes;
  auto case_profiler = make_case_profiler(gpu.device(), [&](const std::string& n) { notes.push_back(n); });
  const RunOutcome outcome = run_cases(gpu, chosen, SamplerConfig::quick(), {}, nullptr, case_profiler.get());
  ASSERT_EQ(outcome.cases.size(), 1u);
  const CaseResult& c = outcome.cases[0];
  ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
  const auto& p = c.details["profile"];
  ASSERT_EQ(p["status"], "profiled") << p;
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(p["iterations"], kProfiledIterations);
  ASSERT_FALSE(p["kernels"].empty()) << p;
  const auto& top = p["kernels"][0];
  const auto category = profiler::parse_category(top["category"].get<std::string>());
  ASSERT_TRUE(category) << top;
  EXPECT_TRUE(profiler::is_gemm(*category)) << top;
  EXPECT_EQ(top["launches"].get<int>() % kProfiledIterations, 0) << top;
  EXPECT_GT(p["kernel_share"].get<double>(), 0.7) << p;
  EXPECT_LT(p["kernel_share"].get<double>(), 1.3) << p;
  if (c.details["algorithm"].value("tensor_cores", false)) {
    EXPECT_EQ(top["tensor_cores"], "named") << "cuBLASLt chose a Tensor Core algorithm whose kernel name the rules miss: "
                                            << top["name"];
  }
  RecordProperty("kernel", top["name"].get<std::string>());
}

}  // namespace
}  // namespace mpbench::microbench
