#include "compare/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/error.hpp"

namespace mpbench::compare {

namespace {

Comparison compare_figure(const CaseKey& key, Metric metric, const std::vector<RunFigure>& b,
                          const std::vector<RunFigure>& n, CaseRuns base, CaseRuns current, const Options& options) {
  Comparison c;
  c.key = key;
  c.metric = metric;
  c.reference = b.front().reference;
  c.param_changes = param_changes(base.front().params, current.front().params);
  return judge(std::move(c), b, n, options);
}

// The case judged on the first figure, in the order of compare/figures.hpp, that every run of both
// sides has (each side's figures found once), and with --absolute on its time as well.
void compare_case(Report& report, const CaseKey& key, CaseRuns base, CaseRuns current, const Options& options) {
  for (Metric metric : {Metric::speedup, Metric::pct_of_copy, Metric::seconds}) {
    const auto b = figures(base, metric, options.baseline);
    if (b.empty()) continue;
    const auto n = figures(current, metric, options.baseline);
    if (n.empty()) continue;
    report.comparisons.push_back(compare_figure(key, metric, b, n, base, current, options));
    if (!options.absolute || metric == Metric::seconds) return;
    const auto base_times = figures(base, Metric::seconds, ""), current_times = figures(current, Metric::seconds, "");
    if (!base_times.empty() && !current_times.empty())
      report.comparisons.push_back(compare_figure(key, Metric::seconds, base_times, current_times, base, current, options));
    return;
  }
}

std::string suites_text(const Side& side) {
  std::set<std::string> suites;
  for (const auto& run : side.runs) {
    const auto s = suites_of(run.document);
    suites.insert(s.begin(), s.end());
  }
  return suites.empty() ? "no cases" : fmt::format("suites {}", fmt::join(suites, ", "));
}

// The comparisons by verdict (regressed, improved, noisy, same), in case order within each: a
// stable counting sort moved into place cycle by cycle, where std::stable_sort's buffer of the
// whole vector was a third of a GB more for a million comparisons.
void in_verdict_order(std::vector<Comparison>& comparisons) {
  constexpr std::size_t kVerdicts = 4;
  std::array<std::size_t, kVerdicts> next{};
  for (const Comparison& c : comparisons)
    for (std::size_t v = static_cast<std::size_t>(c.verdict) + 1; v < kVerdicts; ++v) ++next[v];
  std::vector<std::size_t> destination(comparisons.size());
  for (std::size_t i = 0; i < comparisons.size(); ++i)
    destination[i] = next[static_cast<std::size_t>(comparisons[i].verdict)]++;
  for (std::size_t i = 0; i < comparisons.size(); ++i)
    while (destination[i] != i) {
      std::swap(comparisons[i], comparisons[destination[i]]);
      std::swap(destination[i], destination[destination[i]]);
    }
}

}  // namespace

std::size_t Report::count(Verdict v) const {
  return std::count_if(comparisons.begin(), comparisons.end(), [v](const Comparison& c) { return c.verdict == v; });
}

std::size_t Report::newly_failing() const {
  return std::count_if(not_ok.begin(), not_ok.end(), [](const StatusChange& s) { return s.newly_failing(); });
}

std::size_t Report::skipped_in_both() const {
  return std::count_if(not_ok.begin(), not_ok.end(), [](const StatusChange& s) { return s.skipped_in_both(); });
}

std::size_t Report::cut_short() const {
  return std::count_if(not_ok.begin(), not_ok.end(), [](const StatusChange& s) { return s.cut_short; });
}

std::string Report::why_nothing_compared() const {
  if (!nothing_compared()) return "";
  const std::size_t other_not_ok = not_ok.size() - skipped_in_both() - cut_short();
  const std::size_t without_figure = common_cases - not_ok.size();
  std::vector<std::string> parts;
  if (skipped_in_both() > 0) parts.push_back(fmt::format("{} skipped in both (what the hardware cannot run)", skipped_in_both()));
  if (cut_short() > 0) parts.push_back(fmt::format("{} cut short by an interrupt", cut_short()));
  if (other_not_ok > 0) parts.push_back(fmt::format("{} not ok on one side", other_not_ok));
  if (without_figure > 0) parts.push_back(fmt::format("{} without a figure both sides measured", without_figure));
  return fmt::format("of the {} cases in common, {}", common_cases, fmt::join(parts, ", "));
}

std::size_t Report::algorithms_changed() const {
  return std::count_if(algorithms.begin(), algorithms.end(), [](const CaseAlgorithms& a) { return a.changed(); });
}

int Report::exit_code() const {
  if (regressed()) return kExitRegressed;
  return nothing_compared() ? kExitNothingCompared : kExitNoRegression;
}

std::vector<std::string> param_changes(std::string_view base_text, std::string_view current_text) {
  if (base_text == current_text) return {};  // as nearly always: no key to list
  const auto base = nlohmann::json::parse(base_text), current = nlohmann::json::parse(current_text);
  if (base == current) return {};  // the same numbers written otherwise (1 and 1.0)
  const auto text = [](const nlohmann::json& params, const std::string& key) -> std::string {
    if (!params.is_object() || !params.contains(key)) return "-";
    const auto& v = params[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  std::set<std::string> keys;
  for (const nlohmann::json* params : {&base, &current})
    if (params->is_object())
      for (const auto& [key, value] : params->items()) keys.insert(key);
  std::vector<std::string> changes;
  for (const auto& key : keys) {
    const std::string was = text(base, key), now = text(current, key);
    if (was != now) changes.push_back(fmt::format("{}: {} -> {}", key, was, now));
  }
  return changes;
}

namespace {

bool interrupted(const Side& side) {
  return std::any_of(side.runs.begin(), side.runs.end(), [](const Run& run) {
    const nlohmann::json& params = run.document.run;
    return params.is_object() && params.value("interrupted", false) == true;
  });
}

// An error case of an interrupted side whose message says the interrupt stopped it.
bool cut_short_on(bool side_interrupted, const CaseResult& c) {
  return side_interrupted && c.status == CaseStatus::error && c.message.rfind("interrupted", 0) == 0;
}

}  // namespace

Report compare(const Side& base, const Side& current, const Options& options) {
  require_runs(base, options.min_runs);
  require_runs(current, options.min_runs);
  Report report;
  report.options = options;
  report.base_sources = base.sources();
  report.current_sources = current.sources();
  report.base_machine = base.machine();
  report.current_machine = current.machine();
  report.ignored_files = base.ignored_files;
  report.ignored_files.insert(report.ignored_files.end(), current.ignored_files.begin(), current.ignored_files.end());
  const bool base_interrupted = interrupted(base), current_interrupted = interrupted(current);
  if (base_interrupted) report.interrupted_sides.push_back(base.name);
  if (current_interrupted) report.interrupted_sides.push_back(current.name);

  const auto base_indexes = indexes_of(base), current_indexes = indexes_of(current);
  const RunsByKey base_runs(base, base_indexes, view_of), current_runs(current, current_indexes, view_of);
  report.comparisons.reserve(base_runs.groups().size() * (options.absolute ? 2 : 1));
  for (const CaseRuns b : base_runs.groups()) {
    const CaseKeyView key = base_runs.key(b);
    const CaseRuns n = current_runs.find(key);
    if (n.empty()) {
      report.missing.push_back(to_key(key));
      continue;
    }
    ++report.common_cases;
    const CaseResult &worst_base = worst(b), &worst_current = worst(n);
    if (worst_base.status != CaseStatus::ok || worst_current.status != CaseStatus::ok) {
      report.not_ok.push_back({to_key(key), worst_base.status, worst_current.status,
                               worst_current.message.empty() ? worst_base.message : worst_current.message,
                               cut_short_on(base_interrupted, worst_base) ||
                                   cut_short_on(current_interrupted, worst_current)});
      continue;
    }
    compare_case(report, to_key(key), b, n, options);
  }
  for (const CaseRuns n : current_runs.groups())
    if (base_runs.find(current_runs.key(n)).empty()) report.added.push_back(to_key(current_runs.key(n)));

  if (report.common_cases == 0)
    throw UsageError(fmt::format("no case in common: base ({}) has {}, new ({}) has {}; compare runs of the same "
                                 "suites and backend",
                                 fmt::join(report.base_sources, ", "), suites_text(base),
                                 fmt::join(report.current_sources, ", "), suites_text(current)));

  in_verdict_order(report.comparisons);
  report.environment = environment_fields(base, current);
  report.library_changes = library_changes(report.environment);
  report.algorithms = compare_algorithms(base, current);
  return report;
}

}  // namespace mpbench::compare
