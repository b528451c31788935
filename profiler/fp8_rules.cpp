#include "profiler/fp8_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <string>

#include "core/stats.hpp"
#include "profiler/causes.hpp"
#include "profiler/evidence.hpp"
#include "profiler/rules.hpp"

namespace mpbench::profiler {

namespace {

using nlohmann::json;

double threshold(std::string_view rule) { return explain_rule(rule).threshold; }
std::string pct(double fraction) { return fmt::format("{:.2g}%", fraction * 100); }

const json& fp8_of(const CaseResult& c) { return member_or_null(c.details, "fp8"); }

// The quantization seconds of the timed steps: the last entries of per_step, as many as the
// case's step times summarise (the warm-up steps come first and are not timed).
std::vector<double> timed_quantize_seconds(const CaseResult& c) {
  const json& steps = member_or_null(fp8_of(c), "per_step");
  std::vector<double> seconds;
  if (!steps.is_array() || !c.seconds) return seconds;
  const std::size_t timed = std::min<std::size_t>(c.seconds->samples, steps.size());
  for (std::size_t i = steps.size() - timed; i < steps.size(); ++i)
    if (const auto s = number_at(steps[i], {"quantize_seconds"})) seconds.push_back(*s);
  return seconds;
}

void quantization_share_rule(const CaseResult& c, std::vector<Finding>& out) {
  const std::vector<double> quantize = timed_quantize_seconds(c);
  if (quantize.empty() || c.seconds->median <= 0) return;
  const double per_step = median_of(quantize), share = per_step / c.seconds->median;
  const std::string path = string_or(fp8_of(c), "gemm_path", "");
  const bool converted = path == "converted";
  out.push_back(finding(
      "fp8_quantization_share", share >= threshold("fp8_quantization_share") ? "warning" : "info",
      fmt::format("{} spends {} of its step quantizing ({:.3g} ms per step: amax, scales, the casts to fp8 and "
                  "back){}",
                  c.precision, pct(share), per_step * 1e3,
                  converted ? "; on this converted path the GEMMs stay fp32 matmuls, so no fp8 GEMM pays it back"
                            : ""),
      {{"quantize_s_per_step", per_step}, {"step_s", c.seconds->median}, {"share", share},
       {"timed_steps", quantize.size()}, {"gemm_path", path}}));
}

struct OperandSaturation {
  double saturated = 0, elements = 0;
};

void saturation_rule(const CaseResult& c, std::vector<Finding>& out) {
  const json& fp8 = fp8_of(c);
  const json& steps = member_or_null(fp8, "per_step");
  if (!steps.is_array()) return;
  std::map<std::string, OperandSaturation> by_operand;
  std::map<std::string, std::string> formats;
  for (const json& step : steps) {
    const json& operands = member_or_null(step, "by_operand");
    if (!operands.is_object()) continue;
    for (const auto& [operand, counts] : operands.items()) {
      by_operand[operand].saturated += number_at(counts, {"saturated"}).value_or(0);
      by_operand[operand].elements += number_at(counts, {"elements"}).value_or(0);
      formats[operand] = string_or(member_or_null(step, "formats"), operand.c_str(), "");
    }
  }
  json evidence = json::object();
  std::vector<std::string> parts;
  for (const auto& [operand, s] : by_operand) {
    if (s.elements <= 0 || s.saturated / s.elements < threshold("fp8_saturation")) continue;
    evidence[operand] = {{"saturated", s.saturated}, {"elements", s.elements}, {"share", s.saturated / s.elements},
                         {"format", formats[operand]}};
    parts.push_back(fmt::format("{} of {} {} values ({}, {})", s.saturated, s.elements, operand,
                                pct(s.saturated / s.elements), formats[operand]));
  }
  if (parts.empty()) return;
  evidence["recipe"] = string_or(fp8, "recipe", "");
  out.push_back(finding("fp8_saturation", "warning",
                        fmt::format("{} clamped {} to the format's largest finite value over its {} steps: values "
                                    "beyond what the {} scales covered",
                                    c.precision, fmt::join(parts, ", "), steps.size(), string_or(fp8, "recipe", "")),
                        std::move(evidence)));
}

}  // namespace

void fp8_rules(const CaseResult& c, std::vector<Finding>& out) {
  if (!fp8_of(c).is_object()) return;
  quantization_share_rule(c, out);
  saturation_rule(c, out);
}

}  // namespace mpbench::profiler
