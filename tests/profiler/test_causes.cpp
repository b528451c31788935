// The root-cause rules of profiler/causes.cpp, each firing on the evidence it reads and staying
// silent without it.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "core/result.hpp"
#include "profiler/causes.hpp"
#include "profiler/explain.hpp"
#include "profiler/rules.hpp"

namespace mpbench::profiler {
namespace {

using nlohmann::json;

json step(const std::string& suite, const std::string& backend, const std::string& precision, double median_s,
          json details = json::object(), json params = json::object(), const std::string& status = "ok") {
  return {{"suite", suite}, {"name", "c"}, {"backend", backend}, {"precision", precision}, {"params", params},
          {"status", status}, {"message", status == "ok" ? "" : "bf16 needs AVX512-BF16 or AMX"},
          {"metrics", {{"seconds", {{"median", median_s}, {"min", median_s}, {"max", median_s}, {"mean", median_s},
                                    {"stddev", 0.0}, {"samples", 1}}}}},
          {"rates", json::object()}, {"details", details}};
}

Explanation explained(json cases, json run, json env = json::object(), const std::string& baseline = "fp32") {
  return explain(ResultDocument::from_json({{"schema", kResultSchema}, {"created", "2026-12-04T00:00:00Z"},
                                            {"env", env}, {"run", run}, {"cases", cases},
                                            {"speedups", json::array()}}),
                 baseline);
}

// The first finding of that rule anywhere in the explanation, or null.
const Finding* fired(const Explanation& e, const std::string& rule) {
  for (const auto* list : {&e.findings, &e.verdict})
    for (const auto& f : *list)
      if (f.rule == rule) return &f;
  for (const auto& c : e.cases)
    for (const auto& f : c.findings)
      if (f.rule == rule) return &f;
  return nullptr;
}

const json kCuda = {{"device", "cuda"}};

json gpu_env(const std::string& name, const std::string& cc, json cuda = json::object()) {
  return {{"device", {{"name", name}, {"compute_capability", cc}}}, {"cuda", cuda}};
}

TEST(Causes, VersionsCompareByTheirNumbers) {
  EXPECT_LT(compare_versions("8.0.5", "8.1"), 0);
  EXPECT_EQ(compare_versions("9.1", "9.1.0"), 0);
  EXPECT_GT(compare_versions("10.2", "9.10"), 0);
}

TEST(Causes, NoTensorCoresBelowComputeCapability7) {
  const json cases = json::array({step("gemm", "cuda", "fp32", 0.010), step("gemm", "cuda", "fp16", 0.012,
                                                                            {{"algorithm", {{"tensor_cores", false}}}})});
  const auto pascal = explained(cases, kCuda, gpu_env("NVIDIA GeForce GTX 1080 Ti", "6.1"));
  const Finding* f = fired(pascal, "no_tensor_cores");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->evidence["compute_capability"], "6.1");
  EXPECT_NE(f->message.find("GTX 1080 Ti is compute capability 6.1"), std::string::npos) << f->message;
  // The GEMM's own record says why too, instead of blaming the heuristic.
  const Finding* gemm = fired(pascal, "gemm_not_on_tensor_cores");
  ASSERT_TRUE(gemm);
  EXPECT_NE(gemm->message.find("no Tensor Cores (compute capability 6.1"), std::string::npos) << gemm->message;
  EXPECT_FALSE(fired(explained(cases, kCuda, gpu_env("Tesla V100", "7.0")), "no_tensor_cores"));
  // Turing's GTX 16 series is compute capability 7.5 without Tensor Cores; its RTX 20 series has them.
  EXPECT_TRUE(fired(explained(cases, kCuda, gpu_env("NVIDIA GeForce GTX 1660 Ti", "7.5")), "no_tensor_cores"));
  // P100 has no Tensor Cores but runs fp16 at twice fp32's rate: context, not a cause.
  const auto p100_doc = explained(cases, kCuda, gpu_env("Tesla P100-PCIE-16GB", "6.0"));
  const Finding* p100 = fired(p100_doc, "no_tensor_cores");
  ASSERT_TRUE(p100);
  EXPECT_EQ(p100->severity, "info");
  EXPECT_NE(p100->message.find("at most 2x and only through hgemm"), std::string::npos) << p100->message;
  EXPECT_FALSE(fired(explained(cases, kCuda, gpu_env("NVIDIA GeForce RTX 2080 Ti", "7.5")), "no_tensor_cores"));
}

TEST(Causes, LibrariesOlderThanTheirFixNameTheVersionThatFixedIt) {
  json conv3d = step("conv3d", "cuda", "amp-fp16", 0.2);
  conv3d["name"] = "unet";
  const json cases = json::array({step("transformer", "cuda", "fp32", 0.2), step("transformer", "cuda", "amp-fp16", 0.2),
                                  conv3d});
  const auto old = explained(cases, kCuda, gpu_env("Tesla V100", "7.0", {{"runtime", "9.0"}, {"cudnn", "8.0.5"}}));
  const Finding* f = fired(old, "library_too_old");
  ASSERT_TRUE(f);
  std::set<std::string> libraries;
  for (const auto& c : old.findings)
    if (c.rule == "library_too_old") libraries.insert(c.evidence["library"].get<std::string>());
  EXPECT_EQ(libraries, (std::set<std::string>{"cudnn", "runtime"}));
  for (const auto& c : old.findings)
    if (c.rule == "library_too_old" && c.evidence["library"] == "cudnn") {
      EXPECT_EQ(c.evidence["upgrade_to"], "8.1");
      EXPECT_NE(c.message.find("pytorch/pytorch#57115"), std::string::npos) << c.message;
    } else if (c.rule == "library_too_old") {
      EXPECT_EQ(c.evidence["upgrade_to"], "9.1") << "CUDA 11.0's fix is for bf16 and TF32, which this run has not";
    }
  EXPECT_FALSE(fired(explained(cases, kCuda, gpu_env("Tesla V100", "7.0", {{"runtime", "12.4"}, {"cudnn", "9.1.0"}})),
                     "library_too_old"));
  // A fix bears on the ops it is about: the old cuDNN says nothing to a run without convolutions.
  const json no_conv = json::array({cases[0], cases[1]});
  const auto transformer_only = explained(no_conv, kCuda, gpu_env("Tesla V100", "7.0", {{"runtime", "12.4"}, {"cudnn", "7.0.4"}}));
  EXPECT_FALSE(fired(transformer_only, "library_too_old"));
}

TEST(Causes, ACpuWithoutBf16InstructionsQuotesItsFlagsIsaAndSkippedReasons) {
  const json env = {{"cpu", {{"model", "AMD EPYC 7B12"}, {"logical_cores", 2},
                              {"flags", {{"avx2", true}, {"avx512_bf16", false}, {"amx_bf16", false}}}}},
                    {"backend", {{"onednn", {{"effective_isa", "avx2"}}}}}};
  const json cases = json::array({step("gemm", "cpu", "fp32", 0.01),
                                  step("gemm", "cpu", "bf16", 0, json::object(), json::object(), "skipped")});
  const auto e = explained(cases, {{"device", "cpu"}}, env);
  const Finding* f = fired(e, "no_bf16_instructions");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->evidence["effective_isa"], "avx2");
  EXPECT_EQ(f->evidence["cpu_flags"], json::array({"avx2"}));
  EXPECT_NE(f->message.find("skipped: gemm/c/cpu/bf16: bf16 needs AVX512-BF16 or AMX"), std::string::npos) << f->message;
  json with = env;
  with["cpu"]["flags"]["avx512_bf16"] = true;
  EXPECT_FALSE(fired(explained(cases, {{"device", "cpu"}}, with), "no_bf16_instructions"));
}

json breakdown(json categories) { return {{"breakdown", {{"categories", categories}}}}; }

TEST(Causes, ASmallBatchWithALargeCastShare) {
  auto pair = [](double batch) {
    return json::array({step("transformer", "cuda", "fp32", 0.1, breakdown({{"gemm_cuda_core", 0.08}, {"other", 0.02}}),
                             {{"batch", batch}}),
                        step("transformer", "cuda", "amp-fp16", 0.1,
                             breakdown({{"gemm_tensor_core", 0.02}, {"cast", 0.03}, {"other", 0.02}}), {{"batch", batch}})});
  };
  const Finding* f = nullptr;
  const auto small = explained(pair(2), kCuda);
  ASSERT_TRUE(f = fired(small, "small_batch_casts"));
  EXPECT_NEAR(f->evidence["cast_share"].get<double>(), 0.03 / 0.07, 1e-12);
  EXPECT_FALSE(fired(explained(pair(64), kCuda), "small_batch_casts"));
}

TEST(Causes, ASmallTensorCoreEligibleShareBoundsTheSpeedup) {
  auto pair = [](double gemm) {
    return json::array({step("transformer", "cuda", "fp32", 0.1, breakdown({{"gemm_cuda_core", gemm}, {"other", 0.1 - gemm}})),
                        step("transformer", "cuda", "amp-fp16", 0.1,
                             breakdown({{"gemm_tensor_core", gemm / 4}, {"other", 0.1 - gemm}}))});
  };
  const auto sparse = explained(pair(0.02), kCuda);  // 20% GEMMs: at most 1 / 0.8 = 1.25x
  const Finding* f = fired(sparse, "tensor_core_share_small");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->evidence["bound"].get<double>(), 1.25, 1e-12);
  EXPECT_EQ(f->evidence["largest_other"], "other");
  EXPECT_FALSE(fired(explained(pair(0.08), kCuda), "tensor_core_share_small"));
}

TEST(Causes, AnFp32BaselineOnTf32TensorCoresIsNamed) {
  auto pair = [](const std::string& compute_type, bool tensor_cores) {
    return json::array({step("gemm", "cuda", "fp32", 0.010,
                             {{"algorithm", {{"tensor_cores", tensor_cores}, {"compute_type", compute_type}}}}),
                        step("gemm", "cuda", "bf16", 0.009, {{"algorithm", {{"tensor_cores", true}}}})});
  };
  const auto tf32 = explained(pair("CUBLAS_COMPUTE_32F_FAST_TF32", true), kCuda);
  const Finding* f = fired(tf32, "baseline_not_pedantic");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->evidence["math"], "TF32 on Tensor Cores");
  EXPECT_NE(f->message.find("--baseline tf32"), std::string::npos) << f->message;
  EXPECT_FALSE(fired(explained(pair("CUBLAS_COMPUTE_32F_PEDANTIC", false), kCuda), "baseline_not_pedantic"));
}

// explain --baseline tf32: the baseline already runs on Tensor Cores, which, not the mode, keeps
// the gain small; with a pedantic fp32 case in the run, how far ahead of it the baseline is.
TEST(Causes, ATf32BaselineSaysItIsOnTensorCoresAndWhatPedanticFp32Shows) {
  const json tf32_record = {{"algorithm", {{"tensor_cores", true}, {"compute_type", "CUBLAS_COMPUTE_32F_FAST_TF32"}}}};
  const json pedantic_record = {{"algorithm", {{"tensor_cores", false}, {"compute_type", "CUBLAS_COMPUTE_32F_PEDANTIC"}}}};
  const auto run = [&](bool with_fp32) {
    json cases = json::array({step("gemm", "cuda", "tf32", 0.004, tf32_record),
                              step("gemm", "cuda", "bf16", 0.003, {{"algorithm", {{"tensor_cores", true}}}})});
    if (with_fp32) cases.push_back(step("gemm", "cuda", "fp32", 0.020, pedantic_record));
    return cases;
  };
  const auto with_fp32 = explained(run(true), kCuda, json::object(), "tf32");
  const Finding* f = fired(with_fp32, "baseline_not_pedantic");
  ASSERT_TRUE(f);
  EXPECT_NE(f->message.find("the tf32 baseline already runs on Tensor Cores"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("CUBLAS_COMPUTE_32F_FAST_TF32"), std::string::npos) << f->message;
  EXPECT_NEAR(f->evidence["baseline_speedup_over_pedantic_fp32"].get<double>(), 5.0, 1e-9);
  EXPECT_NE(f->message.find("already 5.00x faster than pedantic fp32"), std::string::npos) << f->message;
  const auto without_fp32 = explained(run(false), kCuda, json::object(), "tf32");
  const Finding* alone = fired(without_fp32, "baseline_not_pedantic");
  ASSERT_TRUE(alone);
  EXPECT_NE(alone->message.find("a pedantic fp32 baseline (CUBLAS_COMPUTE_32F_PEDANTIC"), std::string::npos)
      << alone->message;
  EXPECT_FALSE(alone->evidence.contains("pedantic_fp32_case"));
}

TEST(Causes, PseudoFp16SgemmByKernelNameOrAlgorithmRecord) {
  const json top = {{"top_kernels", json::array({{{"name", "maxwell_sgemm_128x64_nn"}, {"total_s", 0.05}}})},
                    {"categories", {{"gemm_cuda_core", 0.05}}}};
  const json base = step("transformer", "cuda", "fp32", 0.1, breakdown({{"gemm_cuda_core", 0.05}}));
  const auto by_name = explained(json::array({base, step("transformer", "cuda", "amp-fp16", 0.1, {{"breakdown", top}})}), kCuda);
  const Finding* f = fired(by_name, "pseudo_fp16_sgemm");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->evidence["sgemm_kernels"], json::array({"maxwell_sgemm_128x64_nn"}));
  const json record = {{"inputs", {"fp16"}}, {"compute_type", "CUBLAS_COMPUTE_32F"}, {"tensor_cores", false}};
  EXPECT_TRUE(fired(explained(json::array({step("gemm", "cuda", "fp32", 0.01), step("gemm", "cuda", "fp16", 0.01,
                                                                                    {{"algorithm", record}})}),
                              kCuda),
                    "pseudo_fp16_sgemm"));
  json hgemm = record;
  hgemm["compute_type"] = "CUBLAS_COMPUTE_16F";
  EXPECT_FALSE(fired(explained(json::array({step("gemm", "cuda", "fp32", 0.01), step("gemm", "cuda", "fp16", 0.01,
                                                                                     {{"algorithm", hgemm}})}),
                               kCuda),
                     "pseudo_fp16_sgemm"));
}

// A data-parallel pair as the data-parallel runs record it; `grad_reduce` and the communication's
// parts each may be absent.
json data_parallel(const std::string& grad_reduce, json communication, double world_size = 4) {
  json params = {{"world_size", world_size}};
  if (!grad_reduce.empty()) params["grad_reduce"] = grad_reduce;
  json details = json::object();
  if (!communication.is_null()) details["communication"] = communication;
  return json::array({step("transformer", "cuda", "fp32", 0.100, details, params),
                      step("transformer", "cuda", "amp-bf16", 0.080, details, params)});
}

TEST(Causes, Fp32GradientsUnderABf16ModeAndTheExposedCommunication) {
  const json comm = {{"library", "NCCL"}, {"dtype", "fp32"}, {"seconds_per_step", 0.030},
                     {"exposed_seconds_per_step", 0.020}};
  const auto e = explained(data_parallel("fp32", comm), kCuda);
  const Finding* f = fired(e, "fp32_gradient_reduce");
  ASSERT_TRUE(f);
  EXPECT_NE(f->message.find("across 4 ranks (NCCL); 30 ms of communication per step, 20 ms exposed (25.0% of the 80 ms step)"),
            std::string::npos)
      << f->message;
  const Finding* exposed = fired(e, "exposed_communication");
  ASSERT_TRUE(exposed);
  EXPECT_NEAR(exposed->evidence["exposed_share"].get<double>(), 0.25, 1e-12);
  // Reduced in bf16, or hidden behind the backward pass: neither fires.
  json hidden = comm;
  hidden["exposed_seconds_per_step"] = 0.001;
  const auto quiet = explained(data_parallel("bf16", hidden), kCuda);
  EXPECT_FALSE(fired(quiet, "fp32_gradient_reduce"));
  EXPECT_FALSE(fired(quiet, "exposed_communication"));
  // One rank reduces nothing; without the fields nothing is read.
  EXPECT_FALSE(fired(explained(data_parallel("fp32", comm, 1), kCuda), "fp32_gradient_reduce"));
  EXPECT_FALSE(fired(explained(data_parallel("", json()), kCuda), "exposed_communication"));
  // grad_reduce missing: the communication's own dtype says it.
  EXPECT_TRUE(fired(explained(data_parallel("", comm), kCuda), "fp32_gradient_reduce"));
}

json host(double wait, double syncs, double kernels, double step_s) {
  return {{"input_wait_s_per_step", wait}, {"data_s_per_step", wait / 2}, {"staging_s_per_step", wait / 2},
          {"host_syncs_per_step", syncs}, {"kernel_s_per_step", kernels}, {"step_s", step_s}};
}

TEST(Causes, InputWaitAndHostSyncsFromTheRecordedHostSide) {
  auto pair = [](json mode_host) {
    return json::array({step("transformer", "cuda", "fp32", 0.1, {{"host", host(0, 1, 0.09, 0.1)}}),
                        step("transformer", "cuda", "amp-fp16", 0.1, {{"host", mode_host}})});
  };
  const auto waiting = explained(pair(host(0.03, 0, 0.06, 0.1)), kCuda);
  const Finding* f = fired(waiting, "input_wait");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->evidence["share"].get<double>(), 0.3, 1e-12);
  EXPECT_FALSE(fired(waiting, "host_syncs"));
  // Three syncs a step with the GPU busy 40% of it: named; with the GPU busy 95%: they cost little.
  const auto syncing = explained(pair(host(0, 3, 0.04, 0.1)), kCuda);
  ASSERT_TRUE(f = fired(syncing, "host_syncs"));
  EXPECT_NEAR(f->evidence["gpu_busy_share"].get<double>(), 0.4, 1e-12);
  EXPECT_FALSE(fired(syncing, "input_wait"));
  EXPECT_FALSE(fired(explained(pair(host(0, 3, 0.095, 0.1)), kCuda), "host_syncs"));
}

// Kernels 3x faster, the step 1.25x: the host holds the step. Kernels and step alike: silent.
TEST(Causes, KernelSpeedupAgainstStepSpeedupPointsAtTheHost) {
  auto pair = [](double mode_kernels, double mode_step) {
    return json::array({step("transformer", "cuda", "fp32", 0.100, breakdown({{"gemm_cuda_core", 0.09}})),
                        step("transformer", "cuda", "amp-fp16", mode_step,
                             breakdown({{"gemm_tensor_core", mode_kernels}}))});
  };
  const auto held = explained(pair(0.03, 0.08), kCuda);
  const Finding* f = fired(held, "host_bound_step");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->evidence["kernel_speedup"].get<double>(), 3.0, 1e-12);
  EXPECT_NEAR(f->evidence["step_speedup"].get<double>(), 1.25, 1e-12);
  EXPECT_FALSE(fired(explained(pair(0.03, 0.035), kCuda), "host_bound_step"));
  EXPECT_FALSE(f->evidence.contains("largest_part")) << "nothing recorded of the host side";
  EXPECT_NE(f->message.find("was not recorded"), std::string::npos) << f->message;
}

// The host-bound step names its largest part, and "launch-bound" only when launches are it: the
// input wait when it is larger than the GPU's other idle time, host syncs where the step makes
// them, else the gaps between kernels.
TEST(Causes, AHostBoundStepNamesItsLargestPart) {
  auto held = [](double wait, double syncs, double gaps) {
    json details = breakdown({{"gemm_tensor_core", 0.03}});
    details["breakdown"]["gaps_s"] = gaps;
    details["breakdown"]["region_s"] = 0.08;
    details["host"] = host(wait, syncs, 0.03, 0.08);
    const json cases = json::array({step("transformer", "cuda", "fp32", 0.100, breakdown({{"gemm_cuda_core", 0.09}})),
                                    step("transformer", "cuda", "amp-fp16", 0.08, details)});
    return explained(cases, kCuda);
  };
  struct Expected {
    double wait, syncs, gaps;
    const char* part;
    double seconds;
  };
  for (const Expected& x : {Expected{0.03, 0, 0.04, "input_wait", 0.03}, Expected{0.005, 3, 0.04, "host_syncs", 0.035},
                            Expected{0.005, 0, 0.04, "launch_gaps", 0.035}}) {
    const auto e = held(x.wait, x.syncs, x.gaps);
    const Finding* f = fired(e, "host_bound_step");
    ASSERT_TRUE(f) << x.part;
    EXPECT_EQ(f->evidence["largest_part"]["part"], x.part);
    EXPECT_NEAR(f->evidence["largest_part"]["seconds"].get<double>(), x.seconds, 1e-12) << x.part;
    EXPECT_EQ(f->message.find("launch-bound") != std::string::npos, std::string(x.part) == "launch_gaps") << f->message;
    const Finding* gaps = fired(e, "launch_gaps");
    ASSERT_TRUE(gaps) << x.part;
    EXPECT_EQ(gaps->message.find("launch-bound;") != std::string::npos, std::string(x.part) == "launch_gaps")
        << gaps->message;
  }
}

// A GPU without Tensor Cores gets no advice to reach them: no_tensor_cores names the cause, and
// a fp16 GEMM off Tensor Cores with an odd dimension is context without "pad" or "--tensor-cores".
TEST(Causes, NoTensorCoreAdviceForAGpuWithoutThem) {
  const json off = {{"algorithm", {{"tensor_cores", false}}}};
  const json params = {{"m", 4096}, {"n", 4096}, {"k", 4099}};
  json fp16 = step("gemm", "cuda", "fp16", 0.012, off, params);
  fp16["details"]["gemm_algorithms"] = json::array({{{"gemm", "g"}, {"tensor_cores", false}}});
  const json cases = json::array({step("gemm", "cuda", "fp32", 0.010, json::object(), params), fp16});
  const auto e = explained(cases, kCuda, gpu_env("NVIDIA GeForce GTX 1080 Ti", "6.1"));
  ASSERT_TRUE(fired(e, "no_tensor_cores"));
  EXPECT_FALSE(fired(e, "gemm_algorithms_off_tensor_cores"));
  EXPECT_FALSE(fired(e, "misaligned_dimension"));
  const std::string text = e.to_text();
  EXPECT_EQ(text.find("--tensor-cores on"), std::string::npos) << text;
  EXPECT_EQ(text.find("pad m, n and k"), std::string::npos) << text;
  // The same GEMM on a GPU with Tensor Cores is told how to reach them.
  const auto t4 = explained(cases, kCuda, gpu_env("Tesla T4", "7.5"));
  EXPECT_NE(t4.to_text().find("pad m, n and k"), std::string::npos) << t4.to_text();
}

// The verdict on top: one sentence per mode, its cause the highest-ranked one and its fix that rule's.
TEST(ModeVerdict, OneSentencePerModeWithItsLimitAndWhatWouldChangeIt) {
  const json cases = json::array({step("gemm", "cuda", "fp32", 0.010), step("gemm", "cuda", "fp16", 0.012,
                                                                            {{"algorithm", {{"tensor_cores", false}}}}),
                                  step("gemm", "cuda", "bf16", 0.004)});
  const auto e = explained(cases, kCuda, gpu_env("NVIDIA GeForce GTX 1080 Ti", "6.1"));
  ASSERT_EQ(e.modes.size(), 2u);
  const Finding& bf16 = e.modes[0];
  const Finding& fp16 = e.modes[1];
  EXPECT_EQ(fp16.evidence["mode"], "fp16");
  EXPECT_EQ(fp16.severity, "warning");
  EXPECT_NEAR(fp16.evidence["median_speedup"].get<double>(), 0.010 / 0.012, 1e-12);
  EXPECT_EQ(fp16.evidence["limit"], "no_tensor_cores") << "the device outranks the GEMM record it explains";
  EXPECT_NE(fp16.message.find("fp16 does not pay here: 0.83x over fp32"), std::string::npos) << fp16.message;
  EXPECT_NE(fp16.message.find(std::string(explain_rule("no_tensor_cores").fix)), std::string::npos) << fp16.message;
  EXPECT_EQ(bf16.evidence["mode"], "bf16");
  EXPECT_NE(bf16.message.find("bf16 pays here: 2.50x over fp32"), std::string::npos) << bf16.message;
  EXPECT_NE(e.to_text().find("per mode:\n    bf16 pays here"), std::string::npos) << e.to_text();
  EXPECT_EQ(e.to_json()["modes"].size(), 2u);
}

// A mode whose every ratio is too noisy gets no cause, only its interval and the advice to rerun.
TEST(ModeVerdict, NoCauseForNoise) {
  auto noisy = [](const std::string& precision, double median) {
    json c = step("gemm", "cuda", precision, median,
                  {{"algorithm", {{"tensor_cores", false}}}, {"measurement", {{"converged", false}}}});
    std::vector<double> values;
    for (int i = 0; i < 10; ++i) values.push_back(median * (i % 2 ? 1.5 : 0.5));
    c["metrics"]["seconds"] = Statistics::of(values).to_json();
    return c;
  };
  const auto e = explained(json::array({noisy("fp32", 0.010), noisy("fp16", 0.0095)}), {{"device", "cuda"}},
                           gpu_env("Tesla T4", "7.5"));
  ASSERT_EQ(e.modes.size(), 1u);
  EXPECT_FALSE(e.modes[0].evidence.contains("limit")) << e.modes[0].message;
  EXPECT_NE(e.modes[0].message.find("too noisy to say whether it pays here"), std::string::npos) << e.modes[0].message;
  EXPECT_NE(e.modes[0].message.find("1.05x, 99% interval 0."), std::string::npos) << e.modes[0].message;
  EXPECT_NE(e.modes[0].message.find("--timeout"), std::string::npos) << e.modes[0].message;
}

// A training step 1.35x faster with ±3% spread over 24 steps is decided: it pays, with its cause;
// one on par is said so, with its cause too; across the band's edge the advice is more --steps.
TEST(ModeVerdict, TrainingStepsAreReadByTheirInterval) {
  auto steps = [](const std::string& precision, double median, double spread) {
    json c = step("transformer", "cpu", precision, median,
                  {{"measurement", {{"converged", false}}},
                   {"breakdown", {{"categories", {{"gemm", 0.6 * median}, {"elementwise", 0.4 * median}}}}}});
    std::vector<double> values;
    for (int i = 0; i < 24; ++i) values.push_back(median * std::exp(i % 2 ? spread : -spread));
    Statistics s = Statistics::of(values);
    s.median = median;
    c["metrics"]["seconds"] = s.to_json();
    return c;
  };
  const json run = {{"device", "cpu"}, {"sampler", {{"max_noise", 0.005}}}};
  const auto pays = explained(json::array({steps("fp32", 0.1167, 0.03), steps("amp-bf16", 0.1167 / 1.35, 0.03)}), run);
  ASSERT_EQ(pays.modes.size(), 1u);
  EXPECT_EQ(pays.modes[0].evidence["reading"], "pays") << pays.modes[0].message;
  EXPECT_NE(pays.modes[0].message.find("amp-bf16 pays here: 1.35x over fp32 (99% interval 1.3"), std::string::npos)
      << pays.modes[0].message;
  EXPECT_NE(pays.modes[0].message.find("; limited by"), std::string::npos) << pays.modes[0].message;
  const auto par = explained(json::array({steps("fp32", 0.1, 0.03), steps("amp-bf16", 0.1 / 1.02, 0.03)}), run);
  EXPECT_NE(par.modes[0].message.find("amp-bf16 is on par here: 1.02x"), std::string::npos) << par.modes[0].message;
  EXPECT_NE(par.modes[0].message.find("; limited by"), std::string::npos) << par.modes[0].message;
  const auto noisy = explained(json::array({steps("fp32", 0.1, 0.05), steps("amp-bf16", 0.1 / 1.06, 0.05)}), run);
  EXPECT_NE(noisy.modes[0].message.find("too noisy"), std::string::npos) << noisy.modes[0].message;
  EXPECT_NE(noisy.modes[0].message.find("more --steps"), std::string::npos) << noisy.modes[0].message;
  EXPECT_EQ(noisy.modes[0].message.find("--timeout"), std::string::npos) << noisy.modes[0].message;
}

}  // namespace
}  // namespace mpbench::profiler
