// explain's fp8 rules (profiler/fp8_rules.cpp): the quantization share of the timed steps and the
// values clamped per operand kind, each at its table threshold, silent without details.fp8; and
// the gemm suite's fp8-e4m3 cases slower end to end than bf16, with the document's crossover.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

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

// ---- fp8_gemm_below_crossover ---------------------------------------------------------------------

json statistics(double s) {
  return {{"median", s}, {"min", s}, {"max", s}, {"mean", s}, {"stddev", 0.0}, {"samples", 5}};
}

// A gemm case of an n x n x n square (group "square") or of another group.
json gemm_case(const std::string& name, const std::string& group, double n, const std::string& precision, double s,
               json details) {
  const double flops = 2 * n * n * n;
  return {{"suite", "gemm"}, {"name", name}, {"backend", "cpu"}, {"precision", precision},
          {"params", {{"group", group}, {"m", n}, {"n", n}, {"k", n}, {"batch", 1}, {"flops", flops}}},
          {"status", "ok"}, {"message", ""}, {"metrics", {{"seconds", statistics(s)}}},
          {"rates", {{"tflops", flops / s / 1e12}}}, {"details", std::move(details)}};
}

// details.quantize as the gemm suite records it, for a GEMM of gemm_s and casts of quantize_s.
json quantize_details(double gemm_s, double quantize_s) {
  const double end_to_end = gemm_s + quantize_s;
  return {{"quantize", {{"seconds", quantize_s}, {"gemm_seconds", gemm_s}, {"end_to_end_seconds", end_to_end},
                        {"share", quantize_s / end_to_end}, {"from", "bf16"},
                        {"recipe", "current scaling, per tensor"}}}};
}

struct Square {
  double n, bf16_s, fp8_gemm_s, quantize_s;
};

// The bf16 and fp8-e4m3 cases of each square, plus `extra` cases, explained against bf16 (a bf16
// case of its own shape is always there, as explain needs one of the baseline).
Explanation explained_gemms(const std::vector<Square>& squares, json extra = json::array()) {
  json cases = std::move(extra);
  cases.push_back(gemm_case("custom_64x64x64x1", "custom", 64, "bf16", 1e-4, json::object()));
  for (const Square& q : squares) {
    const std::string name = fmt::format("square_{:.0f}", q.n);
    cases.push_back(gemm_case(name, "square", q.n, "bf16", q.bf16_s, json::object()));
    cases.push_back(gemm_case(name, "square", q.n, "fp8-e4m3", q.fp8_gemm_s, quantize_details(q.fp8_gemm_s, q.quantize_s)));
  }
  return explain(ResultDocument::from_json({{"schema", kResultSchema}, {"created", "2026-12-07T00:00:00Z"},
                                            {"env", json::object()}, {"run", {{"device", "cpu"}}},
                                            {"speedups", json::array()}, {"cases", std::move(cases)}}),
                 "bf16");
}

const Finding* fired_on(const Explanation& e, const std::string& id, const std::string& rule) {
  for (const auto& c : e.cases)
    if (c.id == id)
      for (const auto& f : c.findings)
        if (f.rule == rule) return &f;
  return nullptr;
}

const char* kCrossover = "fp8_gemm_below_crossover";

// Random sizes' times: below the crossover fp8's GEMM is faster than bf16's but its casts make it
// slower end to end; from the crossover on it wins end to end. The finding is on the losing sizes
// only, with both times and the crossover.
TEST(Fp8GemmRules, SlowerEndToEndThanBf16NamesBothTimesAndTheCrossover) {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> between(0.1, 0.9);
  std::vector<Square> squares;
  const int crossover_at = std::uniform_int_distribution<int>(1, 3)(random);  // of sizes 0..3
  for (int i = 0; i < 4; ++i) {
    const double bf16_s = 1e-3 * (1 << (3 * i)) * (1 + between(random));
    const double gemm_s = bf16_s * between(random);  // fp8's GEMM alone always wins
    const double slack = bf16_s - gemm_s;
    // Casts of more than the GEMM's gain below the crossover, of less from it on.
    const double quantize_s = i < crossover_at ? slack * (1.1 + between(random)) : slack * between(random);
    squares.push_back({256.0 * (1 << i), bf16_s, gemm_s, quantize_s});
  }
  const Explanation e = explained_gemms(squares);
  const std::string want = fmt::format("square_{:.0f}", squares[crossover_at].n);
  for (int i = 0; i < 4; ++i) {
    const Square& q = squares[i];
    const Finding* f = fired_on(e, fmt::format("gemm/square_{:.0f}/cpu/fp8-e4m3", q.n), kCrossover);
    SCOPED_TRACE(q.n);
    if (i >= crossover_at) {
      EXPECT_FALSE(f) << "fp8 wins end to end here";
      continue;
    }
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, "warning");
    EXPECT_DOUBLE_EQ(f->evidence["end_to_end_s"].get<double>(), q.fp8_gemm_s + q.quantize_s);
    EXPECT_DOUBLE_EQ(f->evidence["bf16_s"].get<double>(), q.bf16_s);
    EXPECT_EQ(f->evidence["crossover_square_n"].get<double>(), squares[crossover_at].n);
    EXPECT_NE(f->message.find(want), std::string::npos) << f->message;
  }
  for (const auto& c : e.cases) {
    if (c.precision != "bf16") continue;
    EXPECT_FALSE(fired_on(e, c.id, kCrossover)) << c.id;
  }
}

// The crossover is where fp8 wins at that size and every larger one: a win below a loss does not
// count, and a loss at the largest size leaves none. A non-square shape gets the finding but no say
// in the crossover.
TEST(Fp8GemmRules, CrossoverNeedsEveryLargerSizeToWin) {
  const Square lose256{256, 1.0, 0.5, 0.6}, win512{512, 1.0, 0.5, 0.1}, lose1024{1024, 1.0, 0.5, 0.7},
      win2048{2048, 1.0, 0.5, 0.2};
  const json gpt2 = json::array({gemm_case("gpt2-124m/fc", "gpt2", 768, "bf16", 1.0, json::object()),
                                 gemm_case("gpt2-124m/fc", "gpt2", 768, "fp8-e4m3", 0.9, quantize_details(0.9, 0.9))});
  const Explanation e = explained_gemms({lose256, win512, lose1024, win2048}, gpt2);
  const Finding* small = fired_on(e, "gemm/square_256/cpu/fp8-e4m3", kCrossover);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->evidence["crossover_square_n"].get<double>(), 2048);
  EXPECT_TRUE(fired_on(e, "gemm/square_1024/cpu/fp8-e4m3", kCrossover));
  const Finding* fc = fired_on(e, "gemm/gpt2-124m/fc/cpu/fp8-e4m3", kCrossover);
  ASSERT_TRUE(fc);
  EXPECT_EQ(fc->evidence["square_sizes"].size(), 4u);
  const Explanation largest_loses = explained_gemms({win512, lose1024});
  const Finding* none = fired_on(largest_loses, "gemm/square_1024/cpu/fp8-e4m3", kCrossover);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->evidence["crossover_square_n"], std::string("none measured"));
  EXPECT_NE(none->message.find("none measured"), std::string::npos) << none->message;
}

// Without the same shape's bf16 case, or without details.quantize (documents from before the
// end-to-end measurement), there is nothing to compare.
TEST(Fp8GemmRules, SilentWithoutABf16TwinOrDetailsQuantize) {
  const json lone = json::array({gemm_case("square_256", "square", 256, "fp8-e4m3", 1.0, quantize_details(1.0, 5.0))});
  const Explanation no_twin = explained_gemms({}, lone);
  ASSERT_TRUE(std::any_of(no_twin.cases.begin(), no_twin.cases.end(),
                          [](const CaseExplanation& c) { return c.id == "gemm/square_256/cpu/fp8-e4m3"; }));
  EXPECT_FALSE(fired_on(no_twin, "gemm/square_256/cpu/fp8-e4m3", kCrossover));
  const json older = json::array({gemm_case("square_256", "square", 256, "bf16", 0.1, json::object()),
                                  gemm_case("square_256", "square", 256, "fp8-e4m3", 1.0, json::object())});
  const Explanation before = explained_gemms({}, older);
  EXPECT_FALSE(fired_on(before, "gemm/square_256/cpu/fp8-e4m3", kCrossover));
}

// ---- fp8_loss_drift ----------------------------------------------------------------------------

json drift_document(const std::vector<std::pair<std::string, double>>& final_losses) {
  json cases = json::array({training_case("fp32", 0.2, 4, {{"final_loss", 9.0}})});
  for (const auto& [precision, loss] : final_losses) {
    json details = {{"final_loss", loss}};
    if (precision.rfind("fp8", 0) == 0 || precision == "mxfp8") details.update(fp8_details({0.001}, 0, 1000));
    cases.push_back(training_case(precision, 0.1, 4, details));
  }
  return {{"schema", kResultSchema}, {"created", "2026-12-07T00:00:00Z"}, {"env", json::object()},
          {"run", {{"device", "cpu"}}}, {"speedups", json::array()}, {"cases", cases}};
}

// The fp8_loss_drift finding of explain(doc, noise), copied out of the explanation; nothing if none.
std::optional<Finding> drift_of(const json& doc, const ResultDocument* noise = nullptr) {
  const Explanation e = explain(ResultDocument::from_json(doc), "fp32", noise);
  const Finding* f = fired(e, "fp8_loss_drift");
  return f ? std::optional<Finding>(*f) : std::nullopt;
}

// Without a second bf16 run the noise is the threshold times bf16's loss; with one, the two bf16
// runs' difference; two equal bf16 losses (the same seed) fall back to the threshold.
TEST(Fp8Rules, LossDriftIsJudgedByTheNoiseOfTwoBf16Runs) {
  std::mt19937_64 random(std::random_device{}());
  const double bf16 = std::uniform_real_distribution<double>(2.0, 8.0)(random);
  const double t = explain_rule("fp8_loss_drift").threshold;
  const auto doc = [&](double fp8_relative) {
    return drift_document({{"amp-bf16", bf16}, {"fp8-delayed", bf16 * (1 + fp8_relative)}});
  };
  const auto far = drift_of(doc(t * 1.5));
  ASSERT_TRUE(far);
  EXPECT_EQ(far->severity, "warning");
  EXPECT_NEAR(far->evidence["noise"].get<double>(), t * bf16, 1e-12);
  EXPECT_EQ(far->evidence["noise_source"]["kind"], "threshold");
  EXPECT_NEAR(far->evidence["relative_drift"].get<double>(), t * 1.5, 1e-12);
  EXPECT_EQ(drift_of(doc(-t * 0.5))->severity, "info");

  const double noise = std::uniform_real_distribution<double>(0.001, 0.01)(random) * bf16;
  const ResultDocument other = ResultDocument::from_json(drift_document({{"amp-bf16", bf16 + noise}}));
  const json beyond = doc(1.5 * noise / bf16), within = doc(-0.5 * noise / bf16);
  const auto measured = drift_of(beyond, &other);
  ASSERT_TRUE(measured);
  EXPECT_EQ(measured->severity, "warning");
  EXPECT_NEAR(measured->evidence["noise"].get<double>(), noise, 1e-9);
  EXPECT_EQ(measured->evidence["noise_source"]["kind"], "two bf16 runs");
  EXPECT_EQ(drift_of(within, &other)->severity, "info");
  // The same drift is within the 3% threshold: only the measured noise calls it a drift.
  EXPECT_EQ(drift_of(beyond)->severity, "info");

  const ResultDocument same_seed = ResultDocument::from_json(drift_document({{"amp-bf16", bf16}}));
  const auto fallback = drift_of(beyond, &same_seed);
  ASSERT_TRUE(fallback);
  EXPECT_EQ(fallback->evidence["noise_source"]["kind"], "threshold");
  EXPECT_NE(fallback->message.find("another --seed"), std::string::npos) << fallback->message;
}

// The twin is amp-bf16, else bf16; without either, or for a mode without details.fp8, no finding.
TEST(Fp8Rules, LossDriftNeedsAnFp8CaseAndABf16Twin) {
  const auto from_bf16 = drift_of(drift_document({{"bf16", 4.0}, {"mxfp8", 4.4}}));
  ASSERT_TRUE(from_bf16);
  EXPECT_EQ(from_bf16->evidence["bf16_precision"], "bf16");
  EXPECT_EQ(from_bf16->severity, "warning");
  EXPECT_FALSE(drift_of(drift_document({{"amp-fp16", 4.0}, {"fp8-current", 4.4}})));
  EXPECT_FALSE(drift_of(drift_document({{"amp-bf16", 4.0}, {"amp-fp16", 4.4}})));
}

}  // namespace
}  // namespace mpbench::profiler
