// explain's fp8 rules (profiler/fp8_rules.cpp): the quantization share of the timed steps and the
// values clamped per operand kind, each at its table threshold, silent without details.fp8.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/result.hpp"
#include "profiler/explain.hpp"
#include "profiler/rules.hpp"

namespace mpbench::profiler {
namespace {

using nlohmann::json;

// A transformer case of `steps` steps, the last `timed` of them timed at `step_s` each.
json training_case(const std::string& precision, double step_s, int timed, json details) {
  json values = json::array();
  for (int i = 0; i < timed; ++i) values.push_back(step_s);
  return {{"suite", "transformer"}, {"name", "small"}, {"backend", "cpu"}, {"precision", precision},
          {"params", json::object()}, {"status", "ok"}, {"message", ""},
          {"metrics", {{"seconds", {{"median", step_s}, {"min", step_s}, {"max", step_s}, {"mean", step_s},
                                    {"stddev", 0.0}, {"samples", timed}, {"values", values}}}}},
          {"rates", json::object()}, {"details", details}};
}

// details.fp8 as the transformer suite records it: per step its quantization seconds and, per
// operand kind, the elements and how many were clamped.
json fp8_details(const std::vector<double>& quantize_seconds, double weight_saturated, double elements) {
  json steps = json::array();
  for (double q : quantize_seconds)
    steps.push_back({{"quantize_seconds", q},
                     {"formats", {{"input", "fp8-e4m3"}, {"weight", "fp8-e4m3"}, {"grad", "fp8-e5m2"}}},
                     {"by_operand", {{"input", {{"elements", elements}, {"saturated", 0}}},
                                     {"weight", {{"elements", elements}, {"saturated", weight_saturated}}},
                                     {"grad", {{"elements", elements}, {"saturated", 0}}}}}});
  return {{"fp8", {{"recipe", "delayed"}, {"gemm_path", "converted"}, {"per_step", steps}}}};
}

const Finding* fired(const Explanation& e, const std::string& rule) {
  for (const auto& c : e.cases)
    for (const auto& f : c.findings)
      if (f.rule == rule) return &f;
  return nullptr;
}

Explanation explained(json fp8_case) {
  return explain(ResultDocument::from_json(
      {{"schema", kResultSchema}, {"created", "2026-12-07T00:00:00Z"}, {"env", json::object()},
       {"run", {{"device", "cpu"}}}, {"speedups", json::array()},
       {"cases", json::array({training_case("fp32", 0.2, 4, json::object()), std::move(fp8_case)})}}));
}

TEST(Fp8Rules, QuantizationShareIsTheTimedStepsMedianOverTheStep) {
  std::mt19937_64 random(std::random_device{}());
  const double step_s = std::uniform_real_distribution<double>(0.05, 0.5)(random);
  const double share = std::uniform_real_distribution<double>(0.15, 0.6)(random);
  // Two warm-up steps whose quantization is far slower (first-touch allocations) are not timed:
  // the median of the four timed ones is `share` of the step.
  const std::vector<double> q = {9 * step_s, 9 * step_s, share * step_s * 0.9, share * step_s, share * step_s,
                                 share * step_s * 1.2};
  const auto e = explained(training_case("fp8-delayed", step_s, 4, fp8_details(q, 0, 1000)));
  const Finding* f = fired(e, "fp8_quantization_share");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NEAR(f->evidence["share"].get<double>(), share, 1e-12 * share);
  EXPECT_EQ(f->evidence["timed_steps"], 4);
  EXPECT_NE(f->message.find("converted path"), std::string::npos) << f->message;
  // Below the table's threshold it stays as context.
  const double below = explain_rule("fp8_quantization_share").threshold * 0.9;
  const std::vector<double> small(6, below * step_s);
  const auto quiet_e = explained(training_case("fp8-delayed", step_s, 4, fp8_details(small, 0, 1000)));
  const Finding* quiet = fired(quiet_e, "fp8_quantization_share");
  ASSERT_TRUE(quiet);
  EXPECT_EQ(quiet->severity, "info");
}

TEST(Fp8Rules, SaturationFiresPerOperandKindAtTheTablesThreshold) {
  const double t = explain_rule("fp8_saturation").threshold;
  const double elements = 1e6;  // per step and operand kind; three steps
  const std::vector<double> q(3, 0.001);
  const auto saturated_per_step = [&](double share) { return share * elements; };
  const auto e = explained(training_case("fp8-delayed", 0.1, 3, fp8_details(q, saturated_per_step(t * 1.5), elements)));
  const Finding* f = fired(e, "fp8_saturation");
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->evidence.contains("weight"));
  EXPECT_FALSE(f->evidence.contains("input")) << "no input value was clamped";
  EXPECT_NEAR(f->evidence["weight"]["share"].get<double>(), t * 1.5, 1e-12);
  EXPECT_EQ(f->evidence["weight"]["format"], "fp8-e4m3");
  EXPECT_EQ(f->evidence["weight"]["elements"].get<double>(), 3 * elements);
  EXPECT_FALSE(fired(explained(training_case("fp8-delayed", 0.1, 3,
                                             fp8_details(q, saturated_per_step(t * 0.5), elements))),
                     "fp8_saturation"));
}

TEST(Fp8Rules, SilentWithoutDetailsFp8) {
  const auto e = explained(training_case("amp-bf16", 0.1, 3, json::object()));
  EXPECT_FALSE(fired(e, "fp8_quantization_share"));
  EXPECT_FALSE(fired(e, "fp8_saturation"));
  // A document of the fp8 modes from before quantize_seconds was recorded: no share, counts still read.
  json older = fp8_details({0.001, 0.001}, 500, 1000);
  for (auto& s : older["fp8"]["per_step"]) s.erase("quantize_seconds");
  const auto o = explained(training_case("fp8-delayed", 0.1, 2, older));
  EXPECT_FALSE(fired(o, "fp8_quantization_share"));
  EXPECT_TRUE(fired(o, "fp8_saturation"));
}

}  // namespace
}  // namespace mpbench::profiler
