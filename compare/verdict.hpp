#pragma once
// One case's verdict from its figures in the runs of both sides, with --threshold T:
//   regressed / improved: the whole interval of the change lies beyond T, worse or better: the
//                         change is larger than T with (1 - alpha) confidence;
//   same:                 the whole interval lies within +-T;
//   noisy:                the interval reaches across +-T (the runs disagree, or one run's own
//                         spread is too wide, or most runs of a side did not converge and their
//                         own spread leaves the verdict open): it never fails CI, and
//                         `runs_to_settle` says how many runs would decide it.
// A change smaller than T is no regression, so what is tested is "beyond T", not "not zero": a
// real 2% drift between runs then raises no more alarms than no drift at all.
// With several runs on a side the interval comes from the spread between runs (Student's t on
// the log of each run's figure); with one run per side only that run's samples can speak:
// Student's t on the samples' mean ln times (the statistics explain uses), where every case behind
// the figures kept its samples, else the band of both runs' spreads; for times also a
// Mann-Whitney U test when it can reach --alpha. One run per side cannot see drift between runs:
// CI that gates on times should keep two or more runs a side.
// Where most runs of either side stopped before their noise target, their samples come
// from measurements that did not settle, and runs that happen to agree do not show it: the
// interval then also covers the band of the runs' own spreads (as with one run per side), so a
// verdict needs both the runs' agreement and their own spread on its side.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare/figures.hpp"
#include "compare/options.hpp"
#include "compare/sides.hpp"

namespace mpbench::compare {

enum class Verdict { regressed, improved, noisy, same };
std::string_view verdict_name(Verdict v);

enum class NoiseTest { spread, rank, between_runs, samples };
std::string_view noise_test_name(NoiseTest t);  // "spread", "mann-whitney-u", "between-runs", "t-on-samples"

inline constexpr int kMostRunsToSuggest = 30;

struct Comparison {
  CaseKey key;
  Metric metric = Metric::speedup;
  std::string reference;         // what the figure is relative to (RunFigure::reference)
  double base = 0, current = 0;  // geometric means over the runs
  double change = 0;             // current / base - 1
  double change_low = 0, change_high = 0;  // its (1 - alpha) interval
  NoiseTest test = NoiseTest::spread;
  double noise = 0;  // relative spread: between runs, or both runs' spreads combined (one run per side)
  std::optional<double> p_value;  // rank test
  std::size_t base_runs = 1, current_runs = 1;
  std::size_t unconverged_runs = 0;  // runs, both sides, that stopped before their noise target
  bool short_of_noise_target = false;  // most runs of a side unconverged: the interval covers their own spread
  bool needs_longer_runs = false;      // noisy because of that own spread: more runs of the same length would not settle it
  Verdict verdict = Verdict::same;
  std::optional<int> runs_to_settle;  // noisy: runs per side that would decide, up to kMostRunsToSuggest
  // The case's params that differ between the sides, e.g. `attention: unfused -> fused`: what
  // changed besides the code and the environment (a default that moved, a counterfactual).
  std::vector<std::string> param_changes;
};

// Fills everything but key, metric, reference and param_changes from the figures (at least one
// per side).
Comparison judge(Comparison c, const std::vector<RunFigure>& base, const std::vector<RunFigure>& current,
                 const Options& options);

}  // namespace mpbench::compare
