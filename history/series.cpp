#include "history/series.hpp"

#include <map>

#include "compare/sides.hpp"

namespace mpbench::history {

std::string Series::label() const { return key.label(); }

std::vector<Series> series_of(const std::vector<StoredCase>& cases, const std::string& machine,
                              const std::optional<std::regex>& filter) {
  std::map<std::pair<std::string, compare::CaseKey>, Series> grouped;
  for (const StoredCase& c : cases) {
    if (c.machine.find(machine) == std::string::npos) continue;
    const compare::CaseKey key{c.suite, c.name, c.backend, c.precision};
    if (filter && !std::regex_search(key.label(), *filter)) continue;
    Series& s = grouped[{c.machine, key}];
    s.machine = c.machine;
    s.key = key;
    s.runs.push_back(c);
  }
  std::vector<Series> out;
  for (auto& [id, s] : grouped) out.push_back(std::move(s));
  return out;
}

const std::optional<compare::RunFigure>& figure_of(const StoredCase& c, compare::Metric metric) {
  switch (metric) {
    case compare::Metric::speedup: return c.speedup;
    case compare::Metric::pct_of_copy: return c.pct_of_copy;
    case compare::Metric::seconds: return c.seconds;
  }
  return c.seconds;
}

std::optional<compare::Metric> tracked_metric(const Series& s) {
  for (compare::Metric m : {compare::Metric::speedup, compare::Metric::pct_of_copy, compare::Metric::seconds})
    for (const StoredCase& c : s.runs)
      if (c.status == "ok" && figure_of(c, m)) return m;
  return std::nullopt;
}

std::vector<SeriesChange> changes_of(const Series& s, compare::Metric metric, std::optional<double> then) {
  std::vector<const StoredCase*> runs;
  std::vector<double> values;
  for (const StoredCase& c : s.runs)
    if (const auto& f = figure_of(c, metric); f && c.status == "ok" && f->value > 0) {
      runs.push_back(&c);
      values.push_back(f->value);
    }
  if (then) values.push_back(*then);
  const std::uint64_t seed = stable_hash(s.machine + "|" + s.label());
  std::vector<SeriesChange> out;
  for (const ChangePoint& p : find_change_points(values, seed)) {
    const auto at = [&](std::size_t i) { return i < runs.size() ? runs[i] : nullptr; };
    out.push_back({p, at(p.index - 1), at(p.index)});
  }
  return out;
}

namespace {

// The figures of the last `window` ok runs of the series with the metric, `stored_as` left out.
std::vector<compare::RunFigure> window_of(const Series& s, compare::Metric metric, std::optional<std::int64_t> stored_as,
                                          std::size_t window) {
  std::vector<compare::RunFigure> figures;
  for (auto it = s.runs.rbegin(); it != s.runs.rend() && figures.size() < window; ++it)
    if (it->status == "ok" && it->run != stored_as && figure_of(*it, metric)) figures.push_back(*figure_of(*it, metric));
  return {figures.rbegin(), figures.rend()};
}

}  // namespace

std::vector<compare::Comparison> check_run(const std::vector<Series>& history, const ResultDocument& run,
                                           std::optional<std::int64_t> stored_as, std::size_t window,
                                           const compare::Options& options) {
  std::map<std::pair<std::string, compare::CaseKey>, const Series*> by_id;
  for (const Series& s : history) by_id[{s.machine, s.key}] = &s;
  const std::string machine = compare::machine_of(run);
  const compare::CaseIndex index(run);
  std::vector<compare::Comparison> out;
  for (const CaseResult& c : run.cases) {
    if (c.status != CaseStatus::ok) continue;
    const auto found = by_id.find({machine, compare::key_of(c)});
    if (found == by_id.end()) continue;
    const StoredCase now = figures_of(index, c);
    for (compare::Metric metric : {compare::Metric::speedup, compare::Metric::pct_of_copy, compare::Metric::seconds}) {
      const auto& figure = figure_of(now, metric);
      if (!figure) continue;
      const auto base = window_of(*found->second, metric, stored_as, window);
      if (base.empty()) continue;
      compare::Comparison comparison;
      comparison.key = compare::key_of(c);
      comparison.metric = metric;
      comparison.reference = figure->reference;
      out.push_back(compare::judge(std::move(comparison), base, {*figure}, options));
      break;
    }
  }
  return out;
}

}  // namespace mpbench::history
