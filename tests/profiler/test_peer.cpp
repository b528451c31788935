// explain --peer on hand-built mpbench and PyTorch documents: the ratios per suite and precision,
// and the slow-path rule firing only where the CPU's flags and the measured speedups say so.
#include "profiler/peer.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "compare/sides.hpp"
#include "core/result.hpp"

namespace mpbench::profiler {
namespace {

using nlohmann::json;

json timed(const std::string& name, const std::string& backend, const std::string& precision, double s,
           const std::string& suite = "gemm") {
  return {{"suite", suite},     {"name", name},   {"backend", backend}, {"precision", precision},
          {"params", json::object()}, {"status", "ok"}, {"message", ""},
          {"metrics", {{"seconds", {{"median", s}, {"min", s}, {"max", s}, {"mean", s}, {"stddev", 0.0}, {"samples", 3}}}}},
          {"rates", json::object()}, {"details", json::object()}};
}

json cpu_env(bool bf16_instructions) {
  return {{"cpu",
           {{"model", "AMD EPYC 7B13"},
            {"flags", {{"avx2", true}, {"avx512_bf16", bf16_instructions}, {"amx_bf16", false}}}}},
          {"torch", {{"version", "2.5.1"}}}};
}

ResultDocument doc(json cases, bool bf16_instructions) {
  return ResultDocument::from_json({{"schema", kResultSchema}, {"created", "2026-12-02T00:00:00Z"},
                                    {"env", cpu_env(bf16_instructions)}, {"run", {{"device", "cpu"}}},
                                    {"cases", cases}, {"speedups", json::array()}});
}

// Two GEMM shapes: fp32 at t, bf16 at t / mpbench_speedup on mpbench's side and t / torch_speedup
// on PyTorch's; PyTorch's fp32 as mpbench's.
struct Pair {
  ResultDocument mpbench, torch;
};

Pair gemm_pair(double t, double mpbench_speedup, double torch_speedup, bool bf16_instructions) {
  json mine = json::array(), theirs = json::array();
  for (const char* shape : {"square_512", "square_1024"}) {
    mine.push_back(timed(shape, "cpu", "fp32", t));
    mine.push_back(timed(shape, "cpu", "bf16", t / mpbench_speedup));
    theirs.push_back(timed(shape, "torch", "fp32", t));
    theirs.push_back(timed(shape, "torch", "bf16", t / torch_speedup));
  }
  return {doc(mine, bf16_instructions), doc(theirs, bf16_instructions)};
}

const Finding* rule(const std::vector<Finding>& findings, const std::string& name, const std::string& precision = "") {
  for (const auto& f : findings)
    if (f.rule == name && (precision.empty() || f.evidence.value("precision", "") == precision)) return &f;
  return nullptr;
}

double random_seconds() {
  static std::mt19937 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(1e-4, 1e-2)(rng);
}

TEST(ExplainPeer, Avx2OnlyCpuNamesPyTorchsBf16FallbackWithTheRatios) {
  const auto [mpbench, torch] = gemm_pair(random_seconds(), 0.9, 0.08, false);
  const auto findings = peer_findings(mpbench, torch, "fp32");
  const Finding* f = rule(findings, "peer_bf16_fallback");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NE(f->message.find("PyTorch falls back to a slow path for bf16 on CPUs without bf16 instructions"),
            std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("0.08x its own fp32"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("ran at 0.90x"), std::string::npos) << f->message;
  EXPECT_NEAR(f->evidence["slower_than_allowed"].get<double>(), 0.9 / 0.08, 1e-9);
  EXPECT_NEAR(f->evidence["median_ratio"].get<double>(), 0.9 / 0.08, 1e-9);  // PyTorch's bf16 time over mpbench's
  EXPECT_EQ(rule(findings, "peer_slow_low_precision"), nullptr);
  const Finding* bf16 = rule(findings, "peer_comparison", "bf16");
  ASSERT_NE(bf16, nullptr);
  EXPECT_NE(bf16->message.find("over fp32: mpbench bf16 0.90x, PyTorch bf16 0.08x"), std::string::npos) << bf16->message;
  const Finding* fp32 = rule(findings, "peer_comparison", "fp32");
  ASSERT_NE(fp32, nullptr);
  EXPECT_NEAR(fp32->evidence["median_ratio"].get<double>(), 1.0, 1e-12);
}

TEST(ExplainPeer, ACpuWithBf16InstructionsGetsNoFallbackButTheSlowPathWithoutACause) {
  const auto [mpbench, torch] = gemm_pair(random_seconds(), 1.8, 0.3, true);
  const auto findings = peer_findings(mpbench, torch, "fp32");
  EXPECT_EQ(rule(findings, "peer_bf16_fallback"), nullptr);
  const Finding* f = rule(findings, "peer_slow_low_precision");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("the cause is not their absence"), std::string::npos) << f->message;
  EXPECT_NEAR(f->evidence["slower_than_allowed"].get<double>(), 1.8 / 0.3, 1e-9);
}

TEST(ExplainPeer, NoSlowPathRuleWherePyTorchsSpeedupIsNearMpbenchs) {
  for (bool instructions : {false, true}) {
    const auto [mpbench, torch] = gemm_pair(random_seconds(), 1.5, 1.2, instructions);
    const auto findings = peer_findings(mpbench, torch, "fp32");
    EXPECT_EQ(rule(findings, "peer_bf16_fallback"), nullptr);
    EXPECT_EQ(rule(findings, "peer_slow_low_precision"), nullptr);
    ASSERT_NE(rule(findings, "peer_comparison", "bf16"), nullptr);
  }
}

TEST(ExplainPeer, TheTrainingModesArePairedAndTheAutocastStepNamed) {
  const double t = random_seconds();
  const auto mpbench = doc(json::array({timed("small", "cpu", "fp32", t, "transformer"),
                                        timed("small", "cpu", "amp-bf16", t / 0.95, "transformer")}),
                           false);
  const auto torch = doc(json::array({timed("small", "torch", "fp32", t * 1.1, "transformer"),
                                      timed("small", "torch", "amp-bf16", t * 1.1 * 12.7, "transformer")}),
                         false);
  const auto findings = peer_findings(mpbench, torch, "fp32");
  const Finding* f = rule(findings, "peer_bf16_fallback", "amp-bf16");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("amp-bf16 training step"), std::string::npos) << f->message;
  const Finding* fp32 = rule(findings, "peer_comparison", "fp32");
  ASSERT_NE(fp32, nullptr);
  EXPECT_NEAR(fp32->evidence["median_ratio"].get<double>(), 1.1, 1e-9);
}

TEST(ExplainPeer, NothingPairsGivesNoFindingAndAnotherCpuIsWarnedOf) {
  const double t = random_seconds();
  const auto mpbench = doc(json::array({timed("square_512", "cpu", "fp32", t)}), false);
  auto other = doc(json::array({timed("square_2048", "torch", "fp32", t)}), false);
  EXPECT_TRUE(peer_findings(mpbench, other, "fp32").empty());
  other.env["cpu"]["model"] = "Intel Xeon";
  const auto findings = peer_findings(mpbench, other, "fp32");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "peer_other_machine");
}

TEST(ExplainPeer, TorchDocumentsAreRecognisedAndLabelled) {
  const auto [mpbench, torch] = gemm_pair(random_seconds(), 1, 1, false);
  EXPECT_TRUE(compare::is_torch_document(torch));
  EXPECT_FALSE(compare::is_torch_document(mpbench));
  EXPECT_EQ(peer_label(torch), "PyTorch 2.5.1 (cpu)");
}

}  // namespace
}  // namespace mpbench::profiler
