#include "profiler/fp8_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <string_view>

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

// The end-to-end seconds of an ok fp8-e4m3 gemm case (details.quantize), else nothing.
std::optional<double> end_to_end_seconds(const CaseResult& c) {
  if (c.suite != "gemm" || c.precision != "fp8-e4m3" || c.status != CaseStatus::ok) return std::nullopt;
  return number_at(c.details, {"quantize", "end_to_end_seconds"});
}

// The ok case of `doc` with c's suite, name and backend in `precision` that `usable` accepts.
template <typename Usable>
const CaseResult* twin_in(const ResultDocument& doc, const CaseResult& c, std::string_view precision, Usable usable) {
  for (const auto& other : doc.cases)
    if (other.suite == c.suite && other.name == c.name && other.backend == c.backend && other.precision == precision &&
        other.status == CaseStatus::ok && usable(other))
      return &other;
  return nullptr;
}

// The ok bf16 case of the same shape and backend in the document.
const CaseResult* bf16_twin(const ResultDocument& doc, const CaseResult& c) {
  return twin_in(doc, c, "bf16", [](const CaseResult& other) { return other.seconds.has_value(); });
}

// Per square size N of the document (params.group "square", backend `backend`): whether fp8-e4m3
// end to end beat bf16, where both were measured.
std::map<double, bool> square_outcomes(const ResultDocument& doc, const std::string& backend) {
  std::map<double, bool> fp8_wins;
  for (const auto& c : doc.cases) {
    const auto fp8_s = end_to_end_seconds(c);
    const auto n = number_at(c.params, {"m"});
    const CaseResult* bf16 = fp8_s ? bf16_twin(doc, c) : nullptr;
    if (!bf16 || !n || c.backend != backend || string_or(c.params, "group", "") != "square") continue;
    fp8_wins[*n] = *fp8_s < bf16->seconds->median;
  }
  return fp8_wins;
}

// The smallest square size from which on every larger one measured fp8 wins, or nothing.
std::optional<double> crossover(const std::map<double, bool>& fp8_wins) {
  std::optional<double> from;
  for (auto it = fp8_wins.rbegin(); it != fp8_wins.rend() && it->second; ++it) from = it->first;
  return from;
}

bool has_final_loss(const CaseResult& c) { return number_at(c.details, {"final_loss"}).has_value(); }

// The ok training case of `doc` with c's name and backend in amp-bf16, else in bf16, with a final loss.
const CaseResult* bf16_training_twin(const ResultDocument& doc, const CaseResult& c) {
  const CaseResult* amp = twin_in(doc, c, "amp-bf16", has_final_loss);
  return amp ? amp : twin_in(doc, c, "bf16", has_final_loss);
}

// How far two bf16 runs' final losses lie apart, and where that figure came from.
struct LossNoise {
  double value;
  json source;
};

LossNoise loss_noise(const CaseResult& bf16, const ResultDocument* bf16_noise) {
  const double loss = *number_at(bf16.details, {"final_loss"});
  const double floor = threshold("fp8_loss_drift") * std::abs(loss);
  const auto rule_floor = [&](std::string why) {
    return LossNoise{floor, {{"kind", "threshold"}, {"relative", threshold("fp8_loss_drift")}, {"why", std::move(why)}}};
  };
  if (!bf16_noise) return rule_floor("no second bf16 run given (explain --noise)");
  const CaseResult* other = twin_in(*bf16_noise, bf16, bf16.precision, has_final_loss);
  if (!other)
    return rule_floor(fmt::format("the --noise document has no ok {} case {}", bf16.precision, bf16.name));
  const double other_loss = *number_at(other->details, {"final_loss"});
  if (other_loss == loss) return rule_floor("the two bf16 runs gave the same final loss: run the second with another --seed");
  return {std::abs(other_loss - loss),
          {{"kind", "two bf16 runs"}, {"precision", bf16.precision}, {"final_losses", {loss, other_loss}}}};
}

}  // namespace

void fp8_loss_drift_rule(const ResultDocument& doc, const CaseResult& c, const ResultDocument* bf16_noise,
                         std::vector<Finding>& out) {
  const auto loss = number_at(c.details, {"final_loss"});
  const CaseResult* bf16 = fp8_of(c).is_object() && loss ? bf16_training_twin(doc, c) : nullptr;
  if (!bf16 || !std::isfinite(*loss)) return;
  const double bf16_loss = *number_at(bf16->details, {"final_loss"});
  const double drift = *loss - bf16_loss;
  const LossNoise noise = loss_noise(*bf16, bf16_noise);
  const bool beyond = std::abs(drift) > noise.value;
  out.push_back(finding(
      "fp8_loss_drift", beyond ? "warning" : "info",
      fmt::format("{}'s final loss {:.5g} is {:+.3g} ({}) from {}'s {:.5g}: {} the noise of two bf16 runs ({:.3g}, {})",
                  c.precision, *loss, drift, pct(drift / bf16_loss), bf16->precision, bf16_loss,
                  beyond ? "beyond" : "within", noise.value,
                  noise.source["kind"] == "threshold" ? fmt::format("taken as {} of the loss: {}",
                                                                    pct(threshold("fp8_loss_drift")),
                                                                    noise.source["why"].get<std::string>())
                                                      : std::string("measured")),
      {{"final_loss", *loss}, {"bf16_final_loss", bf16_loss}, {"bf16_precision", bf16->precision},
       {"drift", drift}, {"relative_drift", drift / bf16_loss}, {"noise", noise.value}, {"noise_source", noise.source},
       {"recipe", string_or(fp8_of(c), "recipe", "")}}));
}

void fp8_gemm_rules(const ResultDocument& doc, const CaseResult& c, std::vector<Finding>& out) {
  const auto fp8_s = end_to_end_seconds(c);
  const CaseResult* bf16 = fp8_s ? bf16_twin(doc, c) : nullptr;
  if (!bf16 || *fp8_s <= bf16->seconds->median) return;
  const json& quantize = member_or_null(c.details, "quantize");
  const std::map<double, bool> outcomes = square_outcomes(doc, c.backend);
  const auto from = crossover(outcomes);
  json sizes = json::array();
  for (const auto& [n, wins] : outcomes) sizes.push_back({{"n", n}, {"fp8_end_to_end_faster", wins}});
  const std::string where = from ? fmt::format("square_{:.0f}", *from) : std::string("none measured");
  out.push_back(finding(
      "fp8_gemm_below_crossover", "warning",
      fmt::format("{}: fp8-e4m3 end to end (the casts from bf16, then the GEMM) takes {:.3g} ms against bf16's "
                  "{:.3g} ms; the casts are {} of it. Crossover (the smallest square size from which on fp8 end to "
                  "end beats bf16 in this document): {}",
                  c.name, *fp8_s * 1e3, bf16->seconds->median * 1e3,
                  pct(number_at(quantize, {"share"}).value_or(0)), where),
      {{"end_to_end_s", *fp8_s}, {"bf16_s", bf16->seconds->median},
       {"gemm_s", number_at(quantize, {"gemm_seconds"}).value_or(0)},
       {"quantize_s", number_at(quantize, {"seconds"}).value_or(0)},
       {"crossover_square_n", from ? json(*from) : json("none measured")}, {"square_sizes", std::move(sizes)}}));
}

void fp8_rules(const CaseResult& c, std::vector<Finding>& out) {
  if (!fp8_of(c).is_object()) return;
  quantization_share_rule(c, out);
  saturation_rule(c, out);
}

}  // namespace mpbench::profiler
