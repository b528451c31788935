#include "compare/figures.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compare/statistics.hpp"

namespace mpbench::compare {

std::string_view metric_name(Metric m) {
  switch (m) {
    case Metric::speedup: return "speedup";
    case Metric::pct_of_copy: return "pct_of_copy";
    case Metric::seconds: return "seconds";
  }
  return "seconds";
}

bool higher_is_better(Metric m) { return m != Metric::seconds; }

CaseIndex::CaseIndex(const ResultDocument& doc) {
  add_ok_cases(doc);
  sort_keeping_the_first();
}

CaseIndex::CaseIndex(const Side& side) {
  for (const auto& run : side.runs) add_ok_cases(run.document);
  sort_keeping_the_first();
}

void CaseIndex::add_ok_cases(const ResultDocument& doc) {
  for (const auto& c : doc.cases)
    if (c.status == CaseStatus::ok) ok_.push_back(&c);
}

void CaseIndex::sort_keeping_the_first() {
  const auto before = [](const CaseResult* a, const CaseResult* b) { return view_of(*a) < view_of(*b); };
  std::stable_sort(ok_.begin(), ok_.end(), before);
  const auto same = [](const CaseResult* a, const CaseResult* b) { return view_of(*a) == view_of(*b); };
  ok_.erase(std::unique(ok_.begin(), ok_.end(), same), ok_.end());
}

const CaseResult* CaseIndex::find_ok(const CaseKeyView& key) const {
  const auto found = std::lower_bound(ok_.begin(), ok_.end(), key,
                                      [](const CaseResult* c, const CaseKeyView& wanted) { return view_of(*c) < wanted; });
  return found != ok_.end() && view_of(**found) == key ? *found : nullptr;
}

std::vector<CaseIndex> indexes_of(const Side& side) {
  std::vector<CaseIndex> indexes;
  indexes.reserve(side.runs.size());
  for (const auto& run : side.runs) indexes.emplace_back(run.document);
  return indexes;
}

std::vector<RunFigure> figures(CaseRuns runs, Metric metric, const std::string& baseline) {
  std::vector<RunFigure> out;
  for (const auto& run : runs) {
    auto f = run_figure(*run.run, *run.result, metric, baseline);
    if (!f) return {};
    out.push_back(std::move(*f));
  }
  return out;
}

const CaseResult& worst(CaseRuns runs) {
  const auto severity = [](CaseStatus s) { return s == CaseStatus::error ? 2 : s == CaseStatus::skipped ? 1 : 0; };
  return *std::max_element(runs.begin(), runs.end(), [&](const CaseInRun& a, const CaseInRun& b) {
            return severity(a.result->status) < severity(b.result->status);
          })->result;
}

namespace {

// The ok case of the same suite and backend as `like` with this name and precision.
const CaseResult* find_ok(const CaseIndex& index, const CaseResult& like, const std::string& name,
                          const std::string& precision) {
  return index.find_ok({like.suite, name, like.backend, precision});
}

double spread_of(const CaseResult* c) { return c && c->seconds ? c->seconds->relative_spread() : 0.0; }

// The case's median time: a ratio of two is the speedup run's table, explain and report.py print,
// so compare tracks the same number.
double median_time(const CaseResult& c) { return c.seconds->median; }

// A run's fastest sample, which a time is tracked by: interference from other processes only ever
// adds time, so on a shared machine it moves far less from run to run than the median.
double fastest(const CaseResult& c) { return c.seconds->min > 0 ? c.seconds->min : c.seconds->median; }

// The noise of the case's mean ln time; none where it has none.
std::optional<MeanLogNoise> noise_of(const CaseResult* c) {
  return c && c->seconds ? mean_log_noise(*c->seconds) : std::nullopt;
}

// Both cases' noise behind a ratio; none where either has none.
std::optional<MeanLogNoise> combined(const std::optional<MeanLogNoise>& a, const std::optional<MeanLogNoise>& b) {
  if (!a || !b) return std::nullopt;
  return *a + *b;
}

bool converged(const CaseResult* c) {
  if (!c) return true;
  const nlohmann::json::json_pointer p("/measurement/converged");
  return !c->details.contains(p) || !c->details.at(p).is_boolean() || c->details.at(p).get<bool>();
}

std::optional<RunFigure> speedup_figure(const CaseIndex& run, const CaseResult& c, const std::string& baseline) {
  if (c.precision == baseline) return std::nullopt;
  const CaseResult* partner = find_ok(run, c, c.name, baseline);
  if (!partner) return std::nullopt;
  if (!partner->seconds || !c.seconds || median_time(c) <= 0 || median_time(*partner) <= 0) return std::nullopt;
  // A ratio of two times: its spread combines both times'.
  return RunFigure{median_time(*partner) / median_time(c), std::hypot(spread_of(&c), spread_of(partner)), {}, baseline,
                   converged(&c) && converged(partner), combined(noise_of(&c), noise_of(partner))};
}

// The copy a case's pct_of_copy is relative to (details.copy_reference); null for documents
// written before mpbench recorded it.
const nlohmann::json& copy_reference(const CaseResult& c) {
  static const nlohmann::json kNone;
  return c.details.contains("copy_reference") && c.details["copy_reference"].is_object() ? c.details["copy_reference"]
                                                                                        : kNone;
}

std::optional<RunFigure> pct_of_copy_figure(const CaseIndex& run, const CaseResult& c) {
  if (!c.rates.contains("pct_of_copy") || !c.rates["pct_of_copy"].is_number()) return std::nullopt;
  const double value = c.rates["pct_of_copy"].get<double>();
  const nlohmann::json& ref = copy_reference(c);
  if (ref.is_null()) {
    // An older document: the copy itself is the case at 100% of it, to the last bits.
    if (std::abs(value - 100) < 1e-9) return std::nullopt;
    return RunFigure{value, spread_of(&c), {}, "the run's copy", converged(&c), std::nullopt};
  }
  const std::string name = ref.value("name", ""), precision = ref.value("precision", "");
  if (name == c.name && precision == c.precision) return std::nullopt;  // the copy itself
  const CaseResult* copy = find_ok(run, c, name, precision);
  if (value <= 0 || !copy || !c.seconds || !copy->seconds) return std::nullopt;
  // The share as the run recorded it (of median rates), the one its table and explain print.
  return RunFigure{value, std::hypot(spread_of(&c), spread_of(copy)), {}, fmt::format("{} {}", name, precision),
                   converged(&c) && converged(copy), combined(noise_of(&c), noise_of(copy))};
}

std::optional<RunFigure> seconds_figure(const CaseResult& c) {
  if (!c.seconds || fastest(c) <= 0) return std::nullopt;
  return RunFigure{fastest(c), c.seconds->relative_spread(), c.seconds->values, "the base runs", converged(&c),
                   noise_of(&c)};
}

}  // namespace

std::optional<RunFigure> run_figure(const CaseIndex& run, const CaseResult& c, Metric metric,
                                    const std::string& baseline) {
  if (c.status != CaseStatus::ok) return std::nullopt;
  switch (metric) {
    case Metric::speedup: return speedup_figure(run, c, baseline);
    case Metric::pct_of_copy: return pct_of_copy_figure(run, c);
    case Metric::seconds: return seconds_figure(c);
  }
  return std::nullopt;
}

}  // namespace mpbench::compare
