#include "profiler/noise_gate.hpp"

#include <fmt/format.h>

#include <cmath>

#include "profiler/evidence.hpp"

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

CopyIndex::CopyIndex(const ResultDocument& doc) {
  for (const auto& c : doc.cases) {
    if (c.status != CaseStatus::ok) continue;
    by_name_.try_emplace({c.suite, c.backend, c.name, c.precision}, &c);
    if (string_or(c.params, "kernel", "") == "copy")
      if (const auto elements = number_at(c.params, {"elements"}))
        copy_by_size_.try_emplace({c.suite, c.backend, *elements}, &c);
  }
}

const CaseResult* CopyIndex::copy_of(const CaseResult& c) const {
  const nlohmann::json& ref = member_or_null(c.details, "copy_reference");
  if (ref.is_object()) {
    const auto found = by_name_.find({c.suite, c.backend, string_or(ref, "name", ""), string_or(ref, "precision", "")});
    return found == by_name_.end() ? nullptr : found->second;
  }
  const auto elements = number_at(c.params, {"elements"});
  if (!elements) return nullptr;
  const auto found = copy_by_size_.find({c.suite, c.backend, *elements});
  return found == copy_by_size_.end() ? nullptr : found->second;
}

}  // namespace mpbench::profiler
