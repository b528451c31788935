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
#include <map>
#include <utility>
#include <optional>
#include <string>
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

// The ok cases of one run by identity, built once per document: a case's baseline precision and
// its copy are then looked up, not searched for among every case (which made compare quadratic
// in the cases: 145 s for 100,000).
class CaseIndex {
 public:
  explicit CaseIndex(const ResultDocument& doc);
  // The first ok case of that identity, or null.
  const CaseResult* find_ok(const CaseKey& key) const;

 private:
  std::map<CaseKey, const CaseResult*> ok_;
};

// Each run's index, built once per side: every figure looks its partners up in it.
std::vector<CaseIndex> indexes_of(const Side& side);

// One case in one run.
struct CaseInRun {
  const CaseIndex* run;
  const CaseResult* result;
};

// Each case's runs on the side (`indexes` from indexes_of), grouped by `key_of(case)`, in run order;
// a run holding a case twice counts once.
template <typename KeyOf>
auto runs_by(const Side& side, const std::vector<CaseIndex>& indexes, KeyOf key_of) {
  std::map<decltype(key_of(std::declval<const CaseResult&>())), std::vector<CaseInRun>> out;
  for (std::size_t i = 0; i < side.runs.size(); ++i)
    for (const auto& c : side.runs[i].document.cases) {
      auto& runs = out[key_of(c)];
      if (runs.empty() || runs.back().run != &indexes[i]) runs.push_back({&indexes[i], &c});
    }
  return out;
}

// The run of the worst status (error, then skipped, then ok), with its message.
const CaseResult& worst(const std::vector<CaseInRun>& runs);

// The case's figure `metric` in every run, or empty when a run lacks it.
std::vector<RunFigure> figures(const std::vector<CaseInRun>& runs, Metric metric, const std::string& baseline);

// The figure `metric` of the ok case `c` of the run `index` was built from; empty where the run
// has none (no case of the baseline precision, no copy to be a share of, the case is that copy
// itself, no median).
std::optional<RunFigure> run_figure(const CaseIndex& index, const CaseResult& c, Metric metric,
                                    const std::string& baseline);

}  // namespace mpbench::compare
