#include "profiler/noise_gate.hpp"

#include <fmt/format.h>

#include <cmath>

#include "compare/options.hpp"
#include "compare/statistics.hpp"
#include "profiler/evidence.hpp"

namespace mpbench::profiler {

std::string_view reading_name(Reading r) {
  switch (r) {
    case Reading::pays: return "pays";
    case Reading::on_par: return "on par";
    case Reading::does_not_pay: return "does not pay";
    case Reading::too_noisy: return "too noisy";
  }
  return "too noisy";
}

double no_change_threshold() { return compare::Options{}.threshold; }
double interval_confidence() { return 1 - compare::Options{}.alpha; }

std::string RatioInterval::interval_text() const {
  return fmt::format("{:.0f}% interval {:.2f}x-{:.2f}x", 100 * interval_confidence(), low, high);
}

std::string RatioInterval::percent_interval_text() const {
  return fmt::format("{:.0f}% interval {:.1f}%-{:.1f}%", 100 * interval_confidence(), low, high);
}

namespace {

// Where ln(speedup) ± half_width lies against the no-change band, which is of time: the mode's
// time within ±threshold of the baseline's, a speedup within [1/(1+threshold), 1/(1-threshold)].
Reading reading_of(double log_speedup, double half_width) {
  const compare::NoChangeBand time_band = compare::NoChangeBand::of(no_change_threshold());
  const double low = log_speedup - half_width, high = log_speedup + half_width;
  if (low > -time_band.low) return Reading::pays;
  if (high < -time_band.high) return Reading::does_not_pay;
  if (low >= -time_band.high && high <= -time_band.low) return Reading::on_par;
  return Reading::too_noisy;
}

}  // namespace

std::optional<RatioInterval> ratio_interval(const CaseResult& a, const CaseResult& b, double speedup) {
  if (!a.seconds || !b.seconds || !(speedup > 0)) return std::nullopt;
  const auto mine = compare::mean_log_noise(*a.seconds), theirs = compare::mean_log_noise(*b.seconds);
  if (!mine || !theirs) return std::nullopt;
  const compare::MeanLogNoise both = *mine + *theirs;
  const double half_width =
      compare::student_t_quantile(1 - compare::Options{}.alpha / 2, both.degrees_of_freedom) * std::sqrt(both.variance);
  RatioInterval r;
  r.estimate = speedup;
  r.low = speedup * std::exp(-half_width);
  r.high = speedup * std::exp(half_width);
  r.samples_a = a.seconds->samples;
  r.samples_b = b.seconds->samples;
  r.reading = reading_of(std::log(speedup), half_width);
  return r;
}

bool decides_against(const RatioInterval& r, double threshold) { return r.low > threshold || r.high < threshold; }

std::string rerun_advice(const CaseResult& c) {
  if (c.suite == "transformer")
    return "rerun with more --steps (each step is a sample), or run it several times and compare the runs with "
           "mpbench compare";
  return "rerun with a longer --timeout and --min-time (more samples) on a quieter machine, or run it several times "
         "and compare the runs with mpbench compare";
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
