#pragma once
// `mpbench compare`: every case of both sides matched by its identity (suite, name, backend,
// precision), judged on its tracked figure (compare/figures.hpp) with compare/verdict.hpp, next to
// the cases that are not ok, added or missing, and the environment of both sides.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "compare/algorithms.hpp"
#include "compare/environment.hpp"
#include "compare/options.hpp"
#include "compare/sides.hpp"
#include "compare/verdict.hpp"

namespace mpbench::compare {

// Exit statuses of `mpbench compare` (2, unusable input, is every command's UsageError).
inline constexpr int kExitNoRegression = 0;
inline constexpr int kExitRegressed = 1;
inline constexpr int kExitNothingCompared = 3;

// A case common to both sides whose status is not ok on at least one of them. A side's status is
// its runs' worst: error over skipped over ok.
struct StatusChange {
  CaseKey key;
  CaseStatus base = CaseStatus::ok, current = CaseStatus::ok;
  std::string message;  // the new side's message, else the base's
  // Not ok because an interrupt cut the case short on an interrupted side: not compared, and no
  // failure (a full run against an interrupted one is no regression).
  bool cut_short = false;
  bool newly_failing() const { return base == CaseStatus::ok && current == CaseStatus::error && !cut_short; }
  // What the hardware or library cannot do, unchanged: counted, not listed line by line.
  bool skipped_in_both() const { return base == CaseStatus::skipped && current == CaseStatus::skipped; }
};

struct Report {
  std::vector<std::string> base_sources, current_sources, ignored_files;
  std::string base_machine, current_machine;
  Options options;
  std::vector<Comparison> comparisons;  // regressed, improved, noisy, same; in case order within each
  std::vector<StatusChange> not_ok;
  std::vector<CaseKey> added, missing;
  std::vector<std::string> interrupted_sides;  // "base", "new": a run of that side was interrupted
  std::vector<EnvironmentField> environment;
  std::vector<EnvironmentField> library_changes;  // the environment's changed driver and library versions
  std::vector<CaseAlgorithms> algorithms;          // the GEMM algorithms of the cases in common
  std::size_t common_cases = 0;

  std::size_t count(Verdict v) const;
  std::size_t newly_failing() const;
  std::size_t skipped_in_both() const;
  std::size_t cut_short() const;
  // Regressed when a comparison regressed or a case that was ok now fails with an error.
  bool regressed() const { return count(Verdict::regressed) > 0 || newly_failing() > 0; }
  bool nothing_compared() const { return comparisons.empty(); }
  // Why no case could be compared, e.g. "the 4 cases in common are skipped in both"; empty otherwise.
  std::string why_nothing_compared() const;
  int exit_code() const;
  std::size_t algorithms_changed() const;
  // The algorithms are listed where a library version or an algorithm changed: otherwise they
  // only repeat themselves.
  bool show_algorithms() const { return !algorithms.empty() && (!library_changes.empty() || algorithms_changed() > 0); }
};

// Throws UsageError when the sides have no case in common (other suites) or a side has fewer
// runs than options.min_runs.
Report compare(const Side& base, const Side& current, const Options& options);

// "key: base -> new" for each top-level param whose value differs (strings unquoted, "-" for
// absent), of params given as JSON text (Run::params: the same params give the same text).
std::vector<std::string> param_changes(std::string_view base, std::string_view current);

}  // namespace mpbench::compare
