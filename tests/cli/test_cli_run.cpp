// mpbench as a user runs it on a machine without a GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/result.hpp"
#include "run_mpbench.hpp"
#include "tests/cpu_expectations.hpp"
#include "tests/profiler/trace_event_format.hpp"

namespace mpbench::testing {
namespace {

class CliRun : public ::testing::Test {
 protected:
  void SetUp() override {
    // A parameterized test's name holds a '/' ("KeepTheFinishedCases/SIGINT"): one folder, not two.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');
    folder_ = std::filesystem::temp_directory_path() / ("mpbench-run-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  std::filesystem::path folder_;
};

TEST_F(CliRun, EnvJsonDescribesTheHostAndSaysWhetherThereIsAGpu) {
  const Invocation r = run_mpbench({"env", "--json"}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto env = nlohmann::json::parse(r.out);
  EXPECT_FALSE(env["cpu"]["model"].get<std::string>().empty());
  EXPECT_TRUE(env["cpu"]["flags"].contains("avx512_bf16"));
  EXPECT_FALSE(env["onednn"]["version"].get<std::string>().empty());
  EXPECT_FALSE(env["mpbench"]["git_revision"].get<std::string>().empty());
  if (env["gpus"].empty()) {
    EXPECT_FALSE(env["gpu_status"].get<std::string>().empty());
  }
}

TEST_F(CliRun, AutoFallsBackToTheCpuAndSaysSo) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "cast", "--quick", "--filter", "copy|f32_to_bf16/", "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultDocument d = load_result(out);
  if (d.run["device"] == "cpu") {
    EXPECT_NE(r.err.find("falls back to the CPU"), std::string::npos) << r.err;
  }
  ASSERT_EQ(d.cases.size(), 2u);
  for (const auto& c : d.cases) {
    EXPECT_EQ(c.status, CaseStatus::ok) << c.message;
    EXPECT_GT(c.rates["gbps"].get<double>(), 0);
    EXPECT_TRUE(c.rates.contains("pct_of_copy"));
  }
  EXPECT_NE(r.out.find("f32_to_bf16"), std::string::npos);
}

TEST_F(CliRun, GemmRunPrintsSpeedupsOverFp32AndRecordsTheIsa) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "gemm", "--device", "cpu", "--quick", "--precision", "fp32,bf16",
                                    "--filter", "square_512/", "--cpu-isa", "avx512_core", "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultDocument d = load_result(out);
  ASSERT_EQ(d.cases.size(), 2u);
  ASSERT_EQ(d.speedups.size(), 1u);
  EXPECT_EQ(d.speedups[0].precision, "bf16");
  EXPECT_EQ(d.run["cpu_isa"], "avx512_core");
  // A cap, not a promise: a CPU without AVX-512 (AMD Zen 3) stays on its AVX2 kernels.
  const CpuDescription cpu = describe_cpu();
  const bool avx512_core = cpu.has("avx512f") && cpu.has("avx512bw") && cpu.has("avx512dq") && cpu.has("avx512vl");
  const std::string effective = d.env["backend"]["onednn"]["effective_isa"];
  if (avx512_core) EXPECT_EQ(effective, "avx512_core");
  else EXPECT_TRUE(effective == "avx2" || effective == "avx2_vnni") << effective;
  EXPECT_NE(r.out.find("vs fp32"), std::string::npos);
}

// The line of `out` that starts, after its indent, with `id` followed by a space or its end.
std::string listed_line(const std::string& out, const std::string& id) {
  std::size_t start = 0;
  while (start < out.size()) {
    const std::size_t end = std::min(out.find('\n', start), out.size());
    const std::string line = out.substr(start, end - start);
    const std::size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, id.size(), id) == 0 &&
        (line.size() == first + id.size() || line[first + id.size()] == ' '))
      return line;
    start = end + 1;
  }
  return {};
}

TEST_F(CliRun, ListShowsEverySuite) {
  const Invocation r = run_mpbench({"list", "--device", "cpu"}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"gemm/square_256/fp32", "bandwidth/triad/", "cast/f32_to_e4m3_scaled/", "(skipped: ",
                        "transformer/small_b4_t256/fp8-delayed ", "capabilities of "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  EXPECT_EQ(r.out, run_mpbench({"list", "--device", "cpu", "--suite", "all"}, folder_).out) << "all is the default";
  // amp-fp16's GEMMs run converted on every CPU: this oneDNN has no CPU fp16 matmul.
  EXPECT_NE(listed_line(r.out, "transformer/small_b4_t256/amp-fp16").find("fp16 GEMMs converted"), std::string::npos)
      << r.out;
}

// Each of the transformer's modes with its GEMMs' path on this CPU, the ones a default run leaves
// out (the fp8 modes) after the others with how their GEMMs run, in the order of a suite list as
// `run` takes it.
TEST_F(CliRun, ListShowsTheTransformersModesWithTheirGemmPath) {
  const Invocation r = run_mpbench({"list", "--device", "cpu", "--quick", "--suite", "gemm,transformer"}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  // --quick on a CPU without --config: the default model at a quarter of its tokens, 6 steps.
  EXPECT_NE(r.out.find("case small_b2_t128 (6 steps)"), std::string::npos) << r.out;
  ASSERT_NE(r.out.find("gemm/"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("gemm/"), r.out.find("transformer/"));
  EXPECT_EQ(r.out.find("bandwidth/"), std::string::npos) << r.out;
  const std::string bf16_path = cpu_runs_bf16_natively() ? "native" : "converted";
  const std::map<std::string, std::string> expected = {
      {"fp32", "fp32 GEMMs native"},
      {"tf32", "tf32 GEMMs unsupported, skipped: TF32"},
      {"amp-fp16", "fp16 GEMMs converted"},
      {"amp-bf16", "bf16 GEMMs " + bf16_path},
      {"bf16", "bf16 GEMMs " + bf16_path},
      {"fp8-delayed", "fp8-e4m3 GEMMs converted"},
      {"fp8-current", "fp8-e4m3 GEMMs converted"},
      {"mxfp8", "fp8-e4m3 GEMMs converted"}};
  for (const auto& [mode, note] : expected)
    EXPECT_NE(listed_line(r.out, "transformer/small_b2_t128/" + mode).find(note), std::string::npos) << mode << "\n" << r.out;
  const auto others = r.out.find("in a run only when --precision names them (fp8-delayed,fp8-current,mxfp8):");
  ASSERT_NE(others, std::string::npos) << r.out;
  EXPECT_LT(r.out.find("transformer/small_b2_t128/bf16 "), others);
  EXPECT_GT(r.out.find("transformer/small_b2_t128/fp8-delayed "), others);
  EXPECT_GT(r.out.find("transformer/small_b2_t128/fp8-current "), others);
  EXPECT_GT(r.out.find("transformer/small_b2_t128/mxfp8 "), others);
}

TEST_F(CliRun, ListTakesTheSuiteListsRunTakesAndShowsTheCapabilityTableFirst) {
  const Invocation r =
      run_mpbench({"list", "--device", "cpu", "--quick", "--suite", "cast,transformer", "--cpu-gemm", "converted"}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("gemm/"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("bandwidth/"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cast/f32_to_bf16/"), std::string::npos) << r.out;
  const auto table = r.out.find("capabilities of ");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_LT(table, r.out.find("transformer/"));
  for (const char* line : {"bf16        converted    --cpu-gemm converted", "tf32        unsupported", "fp32        native"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  EXPECT_NE(listed_line(r.out, "transformer/small_b2_t128/bf16").find("bf16 GEMMs converted"), std::string::npos) << r.out;
  EXPECT_NE(listed_line(r.out, "transformer/small_b2_t128/fp32").find("fp32 GEMMs native"), std::string::npos) << r.out;
}

// --precision's help names each suite's precisions, the transformer's fp8 mode among them.
TEST_F(CliRun, RunHelpNamesEveryPrecisionOfEverySuite) {
  const Invocation r = run_mpbench({"run", "--help"}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"gemm: fp32, tf32, fp16, fp16-acc16, bf16, fp8-e4m3", "cast: fp32, fp16, bf16, fp8-e4m3",
                        "transformer (modes): fp32, tf32, amp-fp16, amp-bf16, bf16, fp8-delayed, fp8-current, mxfp8"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST_F(CliRun, EnvShowsTheCapabilityTables) {
  const Invocation text = run_mpbench({"env"}, folder_);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("cpu gemms (--cpu-gemm auto)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tf32        unsupported"), std::string::npos) << text.out;
  const Invocation json = run_mpbench({"env", "--json"}, folder_);
  ASSERT_EQ(json.status, 0) << json.err;
  const auto env = nlohmann::json::parse(json.out);
  for (const char* precision : {"fp32", "tf32", "fp16", "fp16-acc16", "bf16", "fp8-e4m3"})
    EXPECT_TRUE(env["cpu"]["capabilities"]["gemm"].contains(precision)) << precision;
}

TEST_F(CliRun, NativeGemmsAskedOfASuiteWithoutGemmsStopNothing) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "cast/copy/",
                                    "--cpu-isa", "avx2", "--cpu-gemm", "native", "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(load_result(out).run["cpu_gemm"], "native");
}

// What a CPU without bf16 instructions shows, imitated with --cpu-isa avx2 on any CPU: every mode
// trains, converted, with numbers, and ends near fp32's loss.
TEST_F(CliRun, WithoutBf16InstructionsEveryModeTrainsConverted) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--cpu-isa", "avx2", "--config",
                                    "tiny", "--steps", "20", "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultDocument d = load_result(out);
  ASSERT_EQ(d.cases.size(), 5u);
  std::map<std::string, const CaseResult*> by_mode;
  for (const CaseResult& c : d.cases) by_mode[c.precision] = &c;
  EXPECT_EQ(by_mode.at("tf32")->status, CaseStatus::skipped);
  const double fp32_loss = by_mode.at("fp32")->details["final_loss"];
  for (const char* mode : {"amp-fp16", "amp-bf16", "bf16"}) {
    const CaseResult& c = *by_mode.at(mode);
    ASSERT_EQ(c.status, CaseStatus::ok) << mode << ": " << c.message;
    EXPECT_EQ(c.details["gemm_path"]["path"], "converted") << mode;
    EXPECT_GT(c.rates["tokens_per_s"].get<double>(), 0) << mode;
    EXPECT_LT(std::abs(c.details["final_loss"].get<double>() - fp32_loss), 0.05 * fp32_loss) << mode;
  }
  EXPECT_EQ(d.env["cpu"]["capabilities"]["gemm"]["bf16"]["path"], "converted");
}

// The fp8 modes under --cpu-isa avx2 (issue 31: every ISA cap): 30 tiny steps at the learning
// rate of test_cpu_ops' CpuFp8Training, each loss falling and the mean of the last 10 within 3% of
// amp-bf16's on the same data and weights.
TEST_F(CliRun, Fp8ModesTrainUnderTheAvx2Cap) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--cpu-isa", "avx2", "--config",
                                    "tiny", "--steps", "30", "--lr", "5e-3", "--precision",
                                    "amp-bf16,fp8-delayed,fp8-current,mxfp8", "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultDocument d = load_result(out);
  ASSERT_EQ(d.cases.size(), 4u);
  EXPECT_EQ(d.run["cpu_isa"], "avx2");
  const auto last_ten = [](const CaseResult& c) {
    const auto& loss = c.details["loss"];
    double sum = 0;
    for (std::size_t i = loss.size() - 10; i < loss.size(); ++i) sum += loss[i].get<double>() / 10;
    return sum;
  };
  ASSERT_EQ(d.cases[0].status, CaseStatus::ok) << d.cases[0].message;
  const double bf16 = last_ten(d.cases[0]);
  for (std::size_t i = 1; i < 4; ++i) {
    const CaseResult& c = d.cases[i];
    ASSERT_EQ(c.status, CaseStatus::ok) << c.precision << ": " << c.message;
    ASSERT_EQ(c.details["loss"].size(), 30u) << c.precision;
    EXPECT_EQ(c.details["fp8"]["gemm_path"], "converted") << c.precision;
    EXPECT_LT(last_ten(c), c.details["loss"][0].get<double>() - 0.5) << c.precision << ": the loss falls";
    EXPECT_LT(std::abs(last_ten(c) - bf16), 0.03 * bf16) << c.precision << " " << last_ten(c) << " amp-bf16 " << bf16;
  }
}

// The transformer table's rows put their attention kernels under the header's "attention", for
// every mode name (the fp8 ones are the longest): the number of rows that do.
std::size_t rows_aligned_under_attention(const std::string& out) {
  std::istringstream lines(out);
  std::string line;
  std::size_t column = std::string::npos, aligned = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("case ", 0) == 0) column = line.find("attention");
    else if (column != std::string::npos && line.rfind("tiny_", 0) == 0 && line.compare(column, 8, "unfused ") == 0)
      ++aligned;
  }
  return aligned;
}

TEST_F(CliRun, TransformerTrainsEachModeSideBySide) {
  const auto out = folder_ / "r.json";
  const auto checkpoints = folder_ / "ckpt";
  const Invocation r = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps", "5",
                                    "--precision", "fp32,amp-bf16,amp-fp16", "--checkpoint-out", checkpoints.string(),
                                    "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("transformer tiny_b4_t16 amp-bf16: step 5/5 loss"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attention"), std::string::npos) << r.out;
  EXPECT_EQ(rows_aligned_under_attention(r.out), 3u) << "the CPU has no fused attention\n" << r.out;
  const ResultDocument d = load_result(out);
  ASSERT_EQ(d.cases.size(), 3u);
  // Every CPU trains every mode: natively or converted, as each case records.
  for (const CaseResult& c : d.cases) {
    EXPECT_EQ(c.status, CaseStatus::ok) << c.precision << ": " << c.message;
    EXPECT_TRUE(c.details["gemm_path"]["path"] == "native" || c.details["gemm_path"]["path"] == "converted")
        << c.details["gemm_path"];
  }
  EXPECT_EQ(d.cases[2].details["gemm_path"]["path"], "converted") << "oneDNN 2.x has no fp16 matmul on CPUs";
  EXPECT_NE(r.err.find("fp16 GEMMs run converted"), std::string::npos) << "said before the first step\n" << r.err;
  EXPECT_LT(r.err.find("fp16 GEMMs run converted"), r.err.find("step 1/5")) << r.err;
  ASSERT_EQ(d.speedups.size(), 2u);
  EXPECT_EQ(d.speedups[0].suite, "transformer");
  EXPECT_EQ(d.speedups[0].precision, "amp-bf16");
  EXPECT_TRUE(d.cases[1].details.contains("final_loss_vs_fp32"));
  EXPECT_TRUE(std::filesystem::exists(checkpoints / "fp32" / "model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(checkpoints / "amp-bf16" / "config.json"));
}

// The fp8 modes on a CPU: converted GEMMs, per-step quantization counts; "fp8" is fp8-delayed;
// --fp8-history and --fp8-margin reach the scalers, and bad values are usage errors.
TEST_F(CliRun, TransformerTrainsTheFp8ModesConvertedWithTheirCounts) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps", "4",
                                    "--precision", "amp-bf16,fp8,fp8-current,mxfp8", "--fp8-history", "4",
                                    "--fp8-margin", "1", "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultDocument d = load_result(out);
  ASSERT_EQ(d.cases.size(), 4u);
  EXPECT_EQ(d.cases[3].precision, "mxfp8");
  EXPECT_EQ(d.cases[1].details["fp8"]["history_length"], 4) << "--fp8-history";
  EXPECT_EQ(d.cases[1].details["fp8"]["margin"], 1) << "--fp8-margin";
  EXPECT_EQ(d.cases[2].details["fp8"]["margin"], 1);
  EXPECT_EQ(d.cases[1].details["fp8"]["per_step"][0]["history_length"], 4);
  EXPECT_EQ(d.cases[3].details["fp8"]["per_step"][0]["block_size"], 32) << d.cases[3].details["fp8"].dump();
  EXPECT_EQ(d.cases[1].precision, "fp8-delayed") << "fp8 is the old name of fp8-delayed";
  EXPECT_EQ(d.cases[2].precision, "fp8-current");
  EXPECT_EQ(rows_aligned_under_attention(r.out), 4u) << r.out;
  EXPECT_FALSE(d.cases[0].details.contains("fp8"));
  for (std::size_t i : {1u, 2u, 3u}) {
    const CaseResult& c = d.cases[i];
    ASSERT_EQ(c.status, CaseStatus::ok) << c.precision << ": " << c.message;
    EXPECT_EQ(c.details["gemm_path"]["path"], "converted") << c.details["gemm_path"];
    EXPECT_EQ(c.details["gemm_path"]["precision"], "fp8-e4m3");
    ASSERT_EQ(c.details["fp8"]["per_step"].size(), 4u) << c.details["fp8"].dump();
    EXPECT_TRUE(c.details["fp8"]["per_step"][0]["by_operand"].contains("grad"));
    EXPECT_EQ(c.details["fp8"].contains("scale_changes_total"), i == 1) << c.details["fp8"].dump();
    EXPECT_TRUE(std::isfinite(c.details["final_loss"].get<double>()));
  }
  for (const char* bad : {"--fp8-margin=31", "--fp8-history=0"}) {
    const Invocation e = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps",
                                      "1", "--precision", "fp8", bad, "--out", out.string()}, folder_);
    EXPECT_NE(e.status, 0) << bad;
  }
}

// --fp8-requantize-backward: the backward quantizes its inputs and weights again instead of reusing
// the forward's fp8 copies; the same losses and gradient norms, step by step, and the same counts.
TEST_F(CliRun, Fp8RequantizeBackwardChangesNoNumber) {
  std::map<bool, CaseResult> by_kept;
  for (bool kept : {true, false}) {
    const auto out = folder_ / (kept ? "kept.json" : "requantized.json");
    std::vector<std::string> args = {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps",
                                     "3", "--precision", "fp8-current", "--out", out.string()};
    if (!kept) args.push_back("--fp8-requantize-backward");
    const Invocation r = run_mpbench(args, folder_);
    ASSERT_EQ(r.status, 0) << r.err;
    const ResultDocument d = load_result(out);
    ASSERT_EQ(d.cases.size(), 1u);
    ASSERT_EQ(d.cases[0].status, CaseStatus::ok) << d.cases[0].message;
    by_kept[kept] = d.cases[0];
  }
  const nlohmann::json &kept = by_kept[true].details, &requantized = by_kept[false].details;
  EXPECT_EQ(kept["fp8"]["forward_copies"]["kept"], true);
  EXPECT_EQ(requantized["fp8"]["forward_copies"]["kept"], false);
  EXPECT_GT(kept["fp8"]["forward_copies"]["reused_total"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(requantized["fp8"]["forward_copies"]["reused_total"], 0);
  EXPECT_EQ(kept["loss"], requantized["loss"]);
  EXPECT_EQ(kept["grad_norm"], requantized["grad_norm"]);
  EXPECT_EQ(kept["fp8"]["saturated_total"], requantized["fp8"]["saturated_total"]);
  EXPECT_EQ(kept["fp8"]["underflowed_total"], requantized["fp8"]["underflowed_total"]);
  EXPECT_NE(requantized["implementation"].get<std::string>().find("quantizes again"), std::string::npos)
      << requantized["implementation"];
}

// --mx-scale-rounding: mxfp8's block scales rounded down (the OCP rule, the default: the top of a
// block may saturate) or up (Transformer Engine's: nothing saturates), recorded in the case.
TEST_F(CliRun, MxScaleRoundingUpSaturatesNothing) {
  auto saturated = [](const CaseResult& c) {
    std::uint64_t total = 0;
    for (const auto& step : c.details["fp8"]["per_step"]) total += step["total"]["saturated"].get<std::uint64_t>();
    return total;
  };
  std::map<std::string, std::uint64_t> by_rounding;
  for (const char* rounding : {"down", "up"}) {
    const auto out = folder_ / (std::string(rounding) + ".json");
    const Invocation r = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps",
                                      "4", "--precision", "mxfp8", "--mx-scale-rounding", rounding, "--out", out.string()},
                                     folder_);
    ASSERT_EQ(r.status, 0) << r.err;
    const ResultDocument d = load_result(out);
    ASSERT_EQ(d.cases.size(), 1u);
    ASSERT_EQ(d.cases[0].status, CaseStatus::ok) << d.cases[0].message;
    EXPECT_EQ(d.cases[0].details["fp8"]["scale_rounding"], rounding);
    EXPECT_EQ(d.cases[0].details["fp8"]["per_step"][0]["scale_rounding"], rounding);
    EXPECT_TRUE(std::isfinite(d.cases[0].details["final_loss"].get<double>()));
    by_rounding[rounding] = saturated(d.cases[0]);
  }
  EXPECT_GT(by_rounding["down"], 0u) << "tiny's blocks reach the top of their binade";
  EXPECT_EQ(by_rounding["up"], 0u);
  const Invocation bad = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps",
                                      "1", "--precision", "mxfp8", "--mx-scale-rounding", "nearest", "--out",
                                      (folder_ / "bad.json").string()}, folder_);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--mx-scale-rounding"), std::string::npos) << bad.err;
}

TEST_F(CliRun, ProfileWritesATracePerModeAndMeasuresTheOverhead) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps", "4",
                                    "--precision", "fp32,amp-bf16", "--profile", "--trace",
                                    (folder_ / "trace.json").string(), "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultDocument d = load_result(out);
  ASSERT_EQ(d.cases.size(), 2u);
  EXPECT_EQ(d.run["profile"]["steps_per_mode"], 3);
  for (const auto& c : d.cases) {
    ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
    const auto& profile = c.details["profile"];
    EXPECT_EQ(profile["status"], "profiled") << profile;
    EXPECT_TRUE(profile["overhead"].is_number()) << profile;
    EXPECT_EQ(c.seconds->values.size(), 3u) << "the profiled steps stay out of the step-time statistics";
    const auto trace_path = folder_ / ("trace." + c.precision + ".json");
    EXPECT_EQ(profile["trace"], trace_path.string());
    const auto trace = nlohmann::json::parse(read_all(trace_path));
    expect_trace_event_format(trace);
    // The host op ranges of the 3 profiled steps, on their own track: every op of a step, 3 times.
    std::map<std::string, int> ranges;
    std::set<std::int64_t> tracks;
    for (const auto& e : trace["traceEvents"])
      if (e["ph"] == "X" && e["cat"] == "user_annotation") {
        ++ranges[e["name"].get<std::string>()];
        tracks.insert(e["tid"].get<std::int64_t>());
      }
    EXPECT_EQ(tracks.size(), 1u);
    int total = 0;
    for (const auto& [name, count] : ranges) total += count;
    EXPECT_EQ(total, 3 * profile["ranges_per_step"].get<int>());
    for (const char* op : {"inputs forward", "embedding forward", "c_fc L0 forward", "c_fc L1 forward", "lm_head forward",
                           "cross_entropy backward", "c_attn L0 backward", "attention L1 backward", "global_norm optimizer",
                           "adamw optimizer", "zero_grad optimizer"})
      EXPECT_EQ(ranges[op], 3) << op;
  }
}

TEST_F(CliRun, ProfileLeavesCpuMicrobenchmarkCasesUnprofiledWithTheReason) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "cast,bandwidth", "--device", "cpu", "--quick", "--profile",
                                    "--filter", "cast/copy/|cast/f32_to_bf16/|h2d_pinned", "--out", out.string()},
                                   folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultDocument d = load_result(out);
  ASSERT_EQ(d.cases.size(), 3u);
  for (const auto& c : d.cases) {
    if (c.status == CaseStatus::skipped) {  // h2d_pinned: no host transfers on the CPU, nothing measured
      EXPECT_FALSE(c.details.contains("profile")) << c.id();
      continue;
    }
    ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
    EXPECT_EQ(c.details["profile"]["status"], "unprofiled") << c.id();
    EXPECT_NE(c.details["profile"]["reason"].get<std::string>().find("CUPTI on CUDA GPUs only"), std::string::npos)
        << c.details["profile"];
  }
  // One note for the run, not one per case.
  const auto note = r.err.find("mpbench: note: --profile:");
  ASSERT_NE(note, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("mpbench: note: --profile:", note + 1), std::string::npos) << r.err;
}

TEST_F(CliRun, TraceIntoAMissingFolderFailsBeforeAnyWork) {
  const auto out = folder_ / "r.json";
  const Invocation r = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps", "4",
                                    "--trace", (folder_ / "nowhere" / "trace.json").string(), "--out", out.string()},
                                   folder_);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("step 1/"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// mpbench run in a child process, stdout and stderr into files of the test's folder.
pid_t start_mpbench(const std::vector<std::string>& args, const std::filesystem::path& err,
                    const std::filesystem::path& out = "/dev/null") {
  const pid_t child = fork();
  if (child != 0) return child;
  freopen(err.c_str(), "w", stderr);
  freopen(out.c_str(), "w", stdout);
  const std::string binary = mpbench_binary();
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(binary.c_str(), argv.data());
  _exit(127);
}

void wait_for(const std::filesystem::path& err, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (read_all(err).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the run never printed '" << text << "':\n" << read_all(err);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int exit_status_of(pid_t child) {
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// Ctrl-C, a second Ctrl-C, SIGTERM and SIGHUP all stop the run after the current sample, and the
// finished cases are kept; the first signal is acknowledged at once and the exit status names it.
class CliSignals : public CliRun, public ::testing::WithParamInterface<std::vector<int>> {};

TEST_P(CliSignals, KeepTheFinishedCases) {
  const auto out = folder_ / "r.json", err = folder_ / "err.txt";
  const pid_t child = start_mpbench(
      {"run", "--suite", "bandwidth", "--device", "cpu", "--precision", "fp32", "--out", out.string()}, err);
  ASSERT_GT(child, 0);
  wait_for(err, "[2/");  // two cases finished
  // The second signal only after the first was heard: two pending at once arrive lowest number first.
  for (int signal : GetParam()) {
    kill(child, signal);
    wait_for(err, "stopping after the current");
  }
  EXPECT_EQ(exit_status_of(child), 128 + GetParam().front()) << read_all(err);
  const std::string said = read_all(err);
  const std::string heard = fmt::format("mpbench: SIG{}: stopping", sigabbrev_np(GetParam().front()));
  EXPECT_NE(said.find(heard), std::string::npos) << said;
  EXPECT_EQ(said.find("stopping after"), said.rfind("stopping after")) << "said more than once: " << said;
  const ResultDocument d = load_result(out);
  EXPECT_TRUE(d.run["interrupted"].get<bool>());
  int ok = 0;
  for (const auto& c : d.cases) ok += c.status == CaseStatus::ok;
  EXPECT_GE(ok, 2);
  EXPECT_LT(d.cases.size(), 20u);  // the full sweep has far more
}

INSTANTIATE_TEST_SUITE_P(Cli, CliSignals,
                         ::testing::Values(std::vector<int>{SIGINT}, std::vector<int>{SIGINT, SIGINT},
                                           std::vector<int>{SIGTERM}, std::vector<int>{SIGHUP},
                                           std::vector<int>{SIGTERM, SIGINT}),
                         [](const auto& info) {
                           std::string name;
                           for (int signal : info.param) name += (name.empty() ? "" : "_then_") + std::string(sigabbrev_np(signal));
                           return name;
                         });

TEST_F(CliRun, ARunInterruptedBeforeAnyCaseFinishedLeavesThePreviousDocument) {
  const auto out = folder_ / "r.json", err = folder_ / "err.txt";
  const std::string previous = "{\"previous\": true}\n";
  std::ofstream(out) << previous;
  const pid_t child = start_mpbench({"run", "--suite", "gemm", "--device", "cpu", "--precision", "fp32", "--filter",
                                     "square_512/", "--min-time", "60", "--timeout", "120", "--out", out.string()},
                                    err);
  wait_for(err, "mpbench: 1 measurement on");
  kill(child, SIGINT);
  EXPECT_EQ(exit_status_of(child), 130) << read_all(err);
  EXPECT_EQ(read_all(out), previous);
  EXPECT_NE(read_all(err).find("interrupted before any case finished: left"), std::string::npos) << read_all(err);
}

// Ctrl-C during the first training mode: nothing was measured, so a good earlier --out stays as
// it was, and the steps the cut-short mode finished are kept in a file of their own, said on stderr.
TEST_F(CliRun, AnInterruptedFirstTrainingModeLeavesThePreviousDocument) {
  const auto out = folder_ / "r.json", err = folder_ / "err.txt";
  const Invocation first = run_mpbench({"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "cast/copy/",
                                        "--out", out.string()},
                                       folder_);
  ASSERT_EQ(first.status, 0) << first.err;
  const std::string previous = read_all(out);
  const pid_t child = start_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps",
                                     "100000", "--precision", "fp32,bf16", "--out", out.string()},
                                    err);
  wait_for(err, "fp32: step 1/100000");  // the first step's line; the next comes 5,000 steps later
  kill(child, SIGINT);
  EXPECT_EQ(exit_status_of(child), 130) << read_all(err);
  EXPECT_EQ(read_all(out), previous);
  const std::string said = read_all(err);
  EXPECT_NE(said.find("interrupted before any case finished: left " + out.string() + " as it was"), std::string::npos)
      << said;
  const auto at = said.find("are in ");
  ASSERT_NE(at, std::string::npos) << said;
  const std::string kept = said.substr(at + 7, said.find('\n', at) - at - 7);
  const ResultDocument d = load_result(kept);
  std::filesystem::remove(kept);
  ASSERT_EQ(d.cases.size(), 1u);  // the second mode never started
  EXPECT_EQ(d.cases[0].status, CaseStatus::error);
  EXPECT_GE(d.cases[0].details["interrupted_after_steps"].get<int>(), 1);
}

// A trace and a checkpoint that cannot be written mid-run (a folder where the trace goes, a file
// where the checkpoint's folder goes): each said on stderr, the document written, exit 1.
TEST_F(CliRun, SideOutputsThatCannotBeWrittenAreSaidAndFailTheRun) {
  const auto out = folder_ / "r.json";
  std::filesystem::create_directories(folder_ / "t.fp32.json");
  std::filesystem::create_directories(folder_ / "ckpt");
  std::ofstream(folder_ / "ckpt" / "fp32") << "not a folder";
  const Invocation r = run_mpbench({"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps", "3",
                                    "--precision", "fp32", "--trace", (folder_ / "t.json").string(), "--checkpoint-out",
                                    (folder_ / "ckpt").string(), "--out", out.string()},
                                   folder_);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("fp32: error: the trace was not written"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fp32: error: the checkpoint was not written"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 side outputs not written (a trace, checkpoint or --benchmark_out)"), std::string::npos) << r.err;
  const ResultDocument d = load_result(out);
  ASSERT_EQ(d.cases.size(), 1u);
  EXPECT_EQ(d.cases[0].status, CaseStatus::ok);
  EXPECT_TRUE(d.cases[0].details["profile"].contains("trace_error"));
  EXPECT_TRUE(d.cases[0].details["checkpoint"].contains("error"));
}

TEST_F(CliRun, AClosedStderrCostsThePrintingNotTheResult) {
  const auto out = folder_ / "r.json";
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dup2(pipe_ends[1], STDERR_FILENO);
    close(pipe_ends[0]);
    freopen("/dev/null", "w", stdout);
    const std::string binary = mpbench_binary();
    execl(binary.c_str(), binary.c_str(), "run", "--suite", "cast", "--device", "cpu", "--quick", "--filter",
          "cast/(copy|f32_to_bf16)/", "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_ends[1]);
  char first[64];
  ASSERT_GT(read(pipe_ends[0], first, sizeof first), 0);  // it has started writing to stderr
  close(pipe_ends[0]);  // every later line meets a closed pipe: SIGPIPE, or EPIPE when ignored
  EXPECT_EQ(exit_status_of(child), 0);
  EXPECT_EQ(load_result(out).cases.size(), 2u);
}

TEST_F(CliRun, AResultThatCannotBeWrittenIsKeptElsewhereAndSaidSo) {
  const auto gone = folder_ / "gone", out = gone / "r.json", err = folder_ / "err.txt";
  std::filesystem::create_directories(gone);
  const pid_t child = start_mpbench({"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter",
                                     "cast/(copy|f32_to_bf16)/", "--out", out.string()},
                                    err, folder_ / "table.txt");
  wait_for(err, "mpbench: 2 measurements on");
  std::filesystem::remove_all(gone);  // after the checks, before the write
  EXPECT_EQ(exit_status_of(child), 1) << read_all(err);
  EXPECT_NE(read_all(folder_ / "table.txt").find("f32_to_bf16"), std::string::npos) << "the table is printed first";
  const std::string message = read_all(err);
  const auto kept_at = message.find("cases are kept in ");
  ASSERT_NE(kept_at, std::string::npos) << message;
  const std::string kept = message.substr(kept_at + 18, message.find('\n', kept_at) - kept_at - 18);
  EXPECT_EQ(load_result(kept).cases.size(), 2u);
  std::filesystem::remove(kept);
}

TEST_F(CliRun, TemporaryFilesOfKilledRunsAreRemoved) {
  const auto out = folder_ / "r.json";
  // A pid that is not running: the largest pid_max allows is 2^22; this one is beyond it.
  std::ofstream(folder_ / "r.json.tmp99999999") << "{";
  std::ofstream(folder_ / "r.json.tmp1") << "{";  // pid 1 runs: not a leftover of a killed run
  const Invocation r = run_mpbench(
      {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "cast/copy/", "--out", out.string()}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(folder_ / "r.json.tmp99999999"));
  EXPECT_TRUE(std::filesystem::exists(folder_ / "r.json.tmp1"));
}

}  // namespace
}  // namespace mpbench::testing
