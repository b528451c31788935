// explain --against on recorded pairs that differ only in library versions and the algorithms
// those chose. The first reproduces CUDA 9.0 against 9.2 for BERT: the dense GEMMs on Tensor Cores
// in both, the six batched attention GEMMs off them under cuBLAS 9.0 and on them under 9.2, and the
// amp-fp16 speedup small in the old document and large in the new.
#include "profiler/against.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/result.hpp"

namespace mpbench::profiler {
namespace {

using nlohmann::json;

json timed(const std::string& precision, double s, json details) {
  return {{"suite", "transformer"}, {"name", "bert-base"}, {"backend", "cuda"}, {"precision", precision},
          {"params", json::object()}, {"status", "ok"}, {"message", ""},
          {"metrics", {{"seconds", {{"median", s}, {"min", s}, {"max", s}, {"mean", s}, {"stddev", 0.0}, {"samples", 5}}}}},
          {"rates", json::object()}, {"details", std::move(details)}};
}

json gemm(const std::string& name, const std::string& problem, bool batched, bool tensor_cores,
          const std::string& compute_type) {
  return {{"gemm", name}, {"problem", problem}, {"batched", batched}, {"tensor_cores", tensor_cores},
          {"numerical_impl_flags", tensor_cores ? "0x8002" : "0x1"}, {"compute_type", compute_type}};
}

// BERT's GEMMs per layer in amp-fp16: four dense ones, and attention's q·kᵀ and att·v with their
// four backward products, batched over heads.
json amp_gemms(bool attention_on_tensor_cores) {
  json out = json::array();
  for (const char* dense : {"qkv m=2304 n=4096 k=768", "attention proj m=768 n=4096 k=768",
                            "mlp fc m=3072 n=4096 k=768", "mlp proj m=768 n=4096 k=3072"})
    out.push_back(gemm(std::string("dense ") + dense, std::string("fp16 GEMM ") + dense + " batch=1", false, true,
                       "CUBLAS_COMPUTE_32F"));
  for (const char* product : {"q.k^T m=128 n=128 k=64", "att.v m=64 n=128 k=128", "d(att.v)/d(att) m=128 n=128 k=64",
                              "d(att.v)/dv m=64 n=128 k=128", "d(q.k^T)/dq m=64 n=128 k=128",
                              "d(q.k^T)/dk m=64 n=128 k=128"})
    out.push_back(gemm(std::string("attention ") + product, std::string("fp16 GEMM ") + product + " batch=384", true,
                       attention_on_tensor_cores, "CUBLAS_COMPUTE_32F"));
  return out;
}

json fp32_gemms() {
  return json::array({gemm("dense qkv", "fp32 GEMM m=2304 n=4096 k=768 batch=1", false, false,
                           "CUBLAS_COMPUTE_32F_PEDANTIC")});
}

ResultDocument bert(const std::string& cuda, const std::string& cublas, double fp32_s, double amp_speedup,
                    bool attention_on_tensor_cores) {
  const json env = {{"gpus", json::array({{{"name", "Tesla V100-SXM2-16GB"}, {"driver_version", "396.44"}}})},
                    {"cuda", {{"runtime", cuda}, {"driver", "9.2"}, {"cublas", cublas}, {"cublaslt", cublas}}}};
  const json cases = json::array(
      {timed("fp32", fp32_s, {{"gemm_algorithms", fp32_gemms()}}),
       timed("amp-fp16", fp32_s / amp_speedup, {{"gemm_algorithms", amp_gemms(attention_on_tensor_cores)}})});
  return ResultDocument::from_json({{"schema", kResultSchema}, {"created", "2026-12-02T00:00:00Z"}, {"env", env},
                                    {"run", {{"device", "cuda"}, {"suites", {"transformer"}}}}, {"cases", cases},
                                    {"speedups", json::array()}});
}

// A fresh fp32 step time for each test: the rule reads ratios, whatever the step takes.
double step_seconds() {
  std::mt19937 gen(std::random_device{}());
  return std::uniform_real_distribution<double>(0.05, 0.5)(gen);
}

std::vector<Finding> against(const ResultDocument& current, const ResultDocument& old) {
  return against_findings(current, explain(current), old, "fp32");
}

const Finding* rule(const std::vector<Finding>& findings, const std::string& name) {
  for (const auto& f : findings)
    if (f.rule == name) return &f;
  return nullptr;
}

TEST(ExplainAgainst, Cuda90Against92NamesTheAttentionGemmsMovedOntoTensorCores) {
  const double t = step_seconds();
  const auto old = bert("9.0", "9.0.333", t, 1.15, false);
  const auto current = bert("9.2", "9.2.174", t, 2.6, true);
  const auto findings = against(current, old);

  const Finding* versions = rule(findings, "library_versions");
  ASSERT_NE(versions, nullptr);
  EXPECT_EQ(versions->evidence["cuBLAS"], (json{{"old", "9.0.333"}, {"new", "9.2.174"}}));
  EXPECT_EQ(versions->evidence["CUDA runtime"], (json{{"old", "9.0"}, {"new", "9.2"}}));

  const Finding* changed = rule(findings, "algorithm_changed");
  ASSERT_NE(changed, nullptr);
  EXPECT_EQ(changed->severity, "info") << "the new speedup is the larger";
  EXPECT_NEAR(changed->evidence["speedup"].get<double>(), 2.6, 1e-9);
  EXPECT_NEAR(changed->evidence["speedup_other"].get<double>(), 1.15, 1e-9);
  ASSERT_EQ(changed->evidence["changed_gemms"].size(), 6u) << "the six attention products, not the dense GEMMs";
  for (const auto& g : changed->evidence["changed_gemms"]) {
    EXPECT_TRUE(g["tensor_cores_changed"].get<bool>());
    EXPECT_EQ(g["gemm"].get<std::string>().rfind("attention ", 0), 0u) << g.dump();
    EXPECT_EQ(g["precision"], "amp-fp16");
  }
  EXPECT_NE(changed->message.find("2.60x over fp32 here against 1.15x in the other document (+126%)"),
            std::string::npos)
      << changed->message;
  EXPECT_NE(changed->message.find("6 GEMM algorithms changed with CUDA runtime 9.0 -> 9.2, cuBLAS 9.0.333 -> 9.2.174, cuBLASLt"), std::string::npos)
      << changed->message;
  EXPECT_NE(changed->message.find("(6 moved onto Tensor Cores)"), std::string::npos) << changed->message;
  EXPECT_NE(changed->message.find("amp-fp16 attention q.k^T m=128 n=128 k=64 (fp16 GEMM q.k^T m=128 n=128 k=64 "
                                  "batch=384): CUBLAS_COMPUTE_32F, CUDA cores -> CUBLAS_COMPUTE_32F, Tensor Cores"),
            std::string::npos)
      << changed->message;
  EXPECT_NE(changed->message.find("and 2 more"), std::string::npos) << changed->message;
}

TEST(ExplainAgainst, TheOtherWayRoundIsAWarningOffTensorCores) {
  const double t = step_seconds();
  const auto findings = against(bert("9.0", "9.0.333", t, 1.15, false), bert("9.2", "9.2.174", t, 2.6, true));
  const Finding* changed = rule(findings, "algorithm_changed");
  ASSERT_NE(changed, nullptr);
  EXPECT_EQ(changed->severity, "warning");
  EXPECT_NE(changed->message.find("(6 moved off Tensor Cores)"), std::string::npos) << changed->message;
}

TEST(ExplainAgainst, SameAlgorithmsDoNotFireWhateverTheSpeedups) {
  const double t = step_seconds();
  const auto findings = against(bert("9.2", "9.2.174", t, 2.6, true), bert("9.2", "9.2.148", t, 1.8, true));
  EXPECT_EQ(rule(findings, "algorithm_changed"), nullptr) << "a speedup moved, but on the same algorithms";
  ASSERT_NE(rule(findings, "library_versions"), nullptr);
}

TEST(ExplainAgainst, ChangedAlgorithmsWithoutAChangedSpeedupDoNotFire) {
  const double t = step_seconds();
  const auto findings = against(bert("9.2", "9.2.174", t, 2.6, true), bert("9.0", "9.0.333", t, 2.55, false));
  EXPECT_EQ(rule(findings, "algorithm_changed"), nullptr) << "2.55x -> 2.60x is within 10%";
}

TEST(ExplainAgainst, SameDocumentsSayNothing) {
  const double t = step_seconds();
  const auto doc = bert("9.2", "9.2.174", t, 2.6, true);
  EXPECT_TRUE(against(doc, doc).empty());
}

TEST(ExplainAgainst, TextAndJsonCarryTheSection) {
  const double t = step_seconds();
  const auto current = bert("9.2", "9.2.174", t, 2.6, true);
  Explanation e = explain(current);
  e.against_label = "cuda90.json";
  e.against = against_findings(current, e, bert("9.0", "9.0.333", t, 1.15, false), "fp32");
  const std::string text = e.to_text();
  EXPECT_NE(text.find("against cuda90.json (the same cases under its library versions):"), std::string::npos) << text;
  EXPECT_NE(text.find("[info] algorithm_changed: 2.60x over fp32"), std::string::npos) << text;
  const json j = e.to_json();
  EXPECT_EQ(j["against"]["label"], "cuda90.json");
  ASSERT_EQ(j["against"]["findings"].size(), 2u);
  EXPECT_EQ(j["against"]["findings"][1]["rule"], "algorithm_changed");
}

}  // namespace
}  // namespace mpbench::profiler
