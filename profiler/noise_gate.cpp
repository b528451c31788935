#include "profiler/noise_gate.hpp"

#include <fmt/format.h>

#include <cmath>

namespace mpbench::profiler {

std::string NoiseGate::message() const {
  return fmt::format("its two times spread ±{:.1f}% and ±{:.1f}%, beyond the run's noise target of {:.1f}%: too "
                     "noisy to name a cause; rerun on a quieter machine or with a longer --timeout, and compare "
                     "several runs with mpbench compare",
                     100 * spread_a, 100 * spread_b, 100 * limit / std::sqrt(2.0));
}

namespace {

bool sampled(const CaseResult& c) { return c.seconds && c.details.contains("measurement"); }

}  // namespace

std::optional<NoiseGate> noise_gate(const ResultDocument& doc, const CaseResult& a, const CaseResult& b) {
  const nlohmann::json::json_pointer target("/sampler/max_noise");
  if (!doc.run.contains(target) || !doc.run.at(target).is_number() || !sampled(a) || !sampled(b)) return std::nullopt;
  NoiseGate gate;
  gate.spread_a = a.seconds->relative_spread();
  gate.spread_b = b.seconds->relative_spread();
  gate.noise = std::hypot(gate.spread_a, gate.spread_b);
  gate.limit = doc.run.at(target).get<double>() * std::sqrt(2.0);
  return gate;
}

const CaseResult* copy_of(const ResultDocument& doc, const CaseResult& c) {
  const nlohmann::json& ref = c.details.contains("copy_reference") ? c.details["copy_reference"] : nlohmann::json();
  for (const auto& other : doc.cases) {
    if (other.suite != c.suite || other.backend != c.backend || other.status != CaseStatus::ok) continue;
    const bool named = ref.is_object() && other.name == ref.value("name", "") && other.precision == ref.value("precision", "");
    const bool same_size_copy = !ref.is_object() && other.params.value("kernel", "") == "copy" &&
                                other.params.value("elements", -1) == c.params.value("elements", -2);
    if (named || same_size_copy) return &other;
  }
  return nullptr;
}

}  // namespace mpbench::profiler
