#pragma once
// A history's series (one case on one machine, run after run) and what `history show` and
// `history check` read from them, with compare's statistics: a new run is judged against the last
// runs of its series as `mpbench compare WINDOW... NEW` would judge it (compare::judge, the spread
// between the window's runs, the ±threshold band).
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "compare/options.hpp"
#include "compare/verdict.hpp"
#include "history/change_points.hpp"
#include "history/store.hpp"

namespace mpbench::history {

struct Series {
  std::string machine;
  compare::CaseKey key;
  std::vector<StoredCase> runs;  // in run order
  std::string label() const;     // suite/name/backend/precision
};

// The stored cases grouped into series; `machine` (a substring of the machine's name, empty for
// all) and `filter` (on the label) select them.
std::vector<Series> series_of(const std::vector<StoredCase>& cases, const std::string& machine,
                              const std::optional<std::regex>& filter);

// The figure a series is tracked by, as compare picks it: the speedup over fp32 where its runs
// have one, else the share of the copy, else the fastest time.
std::optional<compare::Metric> tracked_metric(const Series& s);
const std::optional<compare::RunFigure>& figure_of(const StoredCase& c, compare::Metric metric);

// The change points of the series' tracked figure over its ok runs (`then`, the new run's figure,
// appended where given), seeded by the series' machine and label so that the answer is
// reproducible; each with the runs either side of it.
struct SeriesChange {
  ChangePoint point;
  const StoredCase* before = nullptr;  // the last run before the change
  const StoredCase* after = nullptr;   // the first run after it (null: the new run)
};
std::vector<SeriesChange> changes_of(const Series& s, compare::Metric metric,
                                     std::optional<double> then = std::nullopt);

// Each ok case of the new run against the last `window` runs of its series on the same machine
// that have its tracked figure; the run itself, where it was added already (`stored_as`), is not
// part of its window. Cases without a series, or a window without the figure, are left out.
std::vector<compare::Comparison> check_run(const std::vector<Series>& history, const ResultDocument& run,
                                           std::optional<std::int64_t> stored_as, std::size_t window,
                                           const compare::Options& options);

}  // namespace mpbench::history
