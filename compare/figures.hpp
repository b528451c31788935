#pragma once
// The figure each case is tracked by, read from one run. Every suite has one by default:
//   speedup:     the case's speedup over the baseline precision (fp32) measured in the same run,
//                where the run measured that precision on the same case;
//   pct_of_copy: its rate as a share of the copy measured in the same run (rates.pct_of_copy;
//                the cast suite's conversions and the bandwidth suite's fp32 kernels);
//   seconds:     its time, for the rest (fp32 GEMMs, the copies themselves), judged against the
//                base runs of the same case.
// A ratio is the number the run itself recorded and printed (the ratio of the medians,
// rates.pct_of_copy as written), which explain and scripts/report.py print too: one number, one
// answer. Measured within one run, it cancels most of the drift between runs. A time does not: it
// is taken from the run's fastest sample (metrics.seconds.min), since on a shared machine other
// processes only ever add time and the fastest sample moves far less between runs than the median
// (the minimum as the robust estimator, as Conbench's best-of-repetitions); repeated runs are what
// make it trustworthy.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "compare/sides.hpp"
#include "compare/statistics.hpp"
#include "core/result.hpp"

namespace mpbench::compare {

enum class Metric { speedup, pct_of_copy, seconds };
std::string_view metric_name(Metric m);  // "speedup", "pct_of_copy", "seconds"
bool higher_is_better(Metric m);

// A case's figure in one run.
struct RunFigure {
  double value = 0;
  double spread = 0;           // relative spread (stddev / mean) of the samples behind it
  std::vector<double> samples;  // seconds: the run's samples, for the rank test
  std::string reference;       // what the figure is relative to, e.g. "fp32", "memcpy/n=1048576 fp32"
  bool converged = true;       // every measurement behind it reached the run's noise target
  // The noise of its mean ln time, of every case behind it; none where one has fewer than two samples.
  std::optional<MeanLogNoise> noise;
};

// The ok cases of one run (or of every run of a side) by identity, built once per document: a
// case's baseline precision and its copy are then looked up, not searched for among every case
// (which made compare quadratic in the cases: 145 s for 100,000). A sorted array of pointers:
// eight bytes a case.
class CaseIndex {
 public:
  explicit CaseIndex(const ResultDocument& doc);
  // The first ok case of each identity over the side's runs, in run order.
  explicit CaseIndex(const Side& side);
  // The first ok case of that identity, or null.
  const CaseResult* find_ok(const CaseKeyView& key) const;
  // Every case indexed, in key order.
  const std::vector<const CaseResult*>& ok() const { return ok_; }

 private:
  void add_ok_cases(const ResultDocument& doc);
  void sort_keeping_the_first();
  std::vector<const CaseResult*> ok_;
};

// Each run's index, built once per side: every figure looks its partners up in it.
std::vector<CaseIndex> indexes_of(const Side& side);

// One case in one run.
struct CaseInRun {
  const CaseIndex* run;
  const CaseResult* result;
  std::string_view params;  // the case's params as JSON text (Run::params)
};
using CaseRuns = std::span<const CaseInRun>;

// Each case's runs on the side (`indexes` from indexes_of), grouped by `key_of(case)` (a key of
// views into the cases, such as view_of), in key order and within a key in run order; a run
// holding a case twice counts once. Flat arrays, 32 bytes a case: a map of owned keys to vectors
// took 250 bytes a case, a quarter of a GB for a million.
template <typename KeyOf>
class RunsByKey {
 public:
  using Key = std::invoke_result_t<KeyOf, const CaseResult&>;

  RunsByKey(const Side& side, const std::vector<CaseIndex>& indexes, KeyOf key_of) : key_of_(key_of) {
    std::size_t count = 0;
    for (const auto& run : side.runs) count += run.document.cases.size();
    cases_.reserve(count);
    for (std::size_t i = 0; i < side.runs.size(); ++i) {
      const Run& run = side.runs[i];
      for (std::size_t j = 0; j < run.document.cases.size(); ++j)
        cases_.push_back({&indexes[i], &run.document.cases[j], run.params.at(j)});
    }
    const auto before = [this](const CaseInRun& a, const CaseInRun& b) { return case_key(a) < case_key(b); };
    std::stable_sort(cases_.begin(), cases_.end(), before);
    const auto repeated = [this](const CaseInRun& a, const CaseInRun& b) {
      return a.run == b.run && case_key(a) == case_key(b);
    };
    cases_.erase(std::unique(cases_.begin(), cases_.end(), repeated), cases_.end());
    for (std::size_t begin = 0, end = 0; begin < cases_.size(); begin = end) {
      while (end < cases_.size() && case_key(cases_[end]) == case_key(cases_[begin])) ++end;
      groups_.push_back(CaseRuns(cases_).subspan(begin, end - begin));
    }
  }
  RunsByKey(const RunsByKey&) = delete;  // groups_ views cases_
  RunsByKey& operator=(const RunsByKey&) = delete;

  // Each key's runs, in key order.
  const std::vector<CaseRuns>& groups() const { return groups_; }
  Key key(CaseRuns group) const { return case_key(group.front()); }
  // The runs of `k`, empty where the side has none.
  CaseRuns find(const Key& k) const {
    const auto found = std::lower_bound(groups_.begin(), groups_.end(), k,
                                        [this](CaseRuns group, const Key& wanted) { return key(group) < wanted; });
    return found != groups_.end() && key(*found) == k ? *found : CaseRuns();
  }

 private:
  Key case_key(const CaseInRun& c) const { return key_of_(*c.result); }
  KeyOf key_of_;
  std::vector<CaseInRun> cases_;
  std::vector<CaseRuns> groups_;
};

// The run of the worst status (error, then skipped, then ok), with its message.
const CaseResult& worst(CaseRuns runs);

// The case's figure `metric` in every run, or empty when a run lacks it.
std::vector<RunFigure> figures(CaseRuns runs, Metric metric, const std::string& baseline);

// The figure `metric` of the ok case `c` of the run `index` was built from; empty where the run
// has none (no case of the baseline precision, no copy to be a share of, the case is that copy
// itself, no median).
std::optional<RunFigure> run_figure(const CaseIndex& index, const CaseResult& c, Metric metric,
                                    const std::string& baseline);

}  // namespace mpbench::compare
