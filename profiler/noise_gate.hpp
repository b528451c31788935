#pragma once
// explain's noise gate weighs the effect, not the spread alone. A speedup (or a cast's share of a
// copy) is the ratio of two measured times; its confidence interval comes from both cases' samples
// (per-step times of a training run, per-sample times of a microbenchmark; a summary's spread and
// count where a document left them out) by the statistics `compare` uses for one run a side:
// Student's t on the two mean ln times, their variances added, at compare's default alpha. The
// ratio is read against compare's default no-change band (±5% of time): its interval beyond the
// band pays, below it does not, within it is on par; only an interval across one of the band's
// edges is too noisy to read, and then explain names no cause for it.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "core/result.hpp"

namespace mpbench::profiler {

enum class Reading { pays, on_par, does_not_pay, too_noisy };
std::string_view reading_name(Reading r);  // "pays", "on par", "does not pay", "too noisy"

// The band and the confidence explain reads ratios with: compare's defaults (compare/options.hpp).
double no_change_threshold();  // 0.05: a time within ±5% is no change
double interval_confidence();  // 0.99

// How much faster case `a` is than case `b` (b's time over a's), with its interval.
struct RatioInterval {
  double estimate = 1;        // the recorded figure (of the median times), which the interval is around
  double low = 1, high = 1;   // estimate times exp(-+ the t interval's half-width of the ln times)
  std::size_t samples_a = 0, samples_b = 0;
  Reading reading = Reading::too_noisy;  // of the interval against the no-change band
  bool decided() const { return reading != Reading::too_noisy; }
  // "99% interval 1.31x-1.39x"
  std::string interval_text() const;
  // The same for a figure in percent (a share of the copy): "99% interval 48.1%-53.0%".
  std::string percent_interval_text() const;
};

// The interval of `figure`, as recorded, proportional to b's time over a's (a speedup of a over b,
// or a's share of copy b in percent): its width from the two cases' samples; `reading` reads the
// figure as a speedup. Empty where either case has fewer than two samples.
std::optional<RatioInterval> ratio_interval(const CaseResult& a, const CaseResult& b, double figure);

// Whether the interval lies wholly on one side of `threshold`: it decides a rule comparing the
// figure with it.
bool decides_against(const RatioInterval& r, double threshold);

// What gets a too-noisy ratio read, for the case's suite: more steps or several runs for
// training, a longer sampling for microbenchmarks.
std::string rerun_advice(const CaseResult& c);

// The copies a document's pct_of_copy figures are shares of, indexed once: looking each one up by a
// scan of the document would make explain quadratic in its cases.
class CopyIndex {
 public:
  explicit CopyIndex(const ResultDocument& doc);
  // The copy `c`'s pct_of_copy is a share of (details.copy_reference, or the suite's "copy" kernel
  // of the same element count in documents written before it); null when the run has none.
  const CaseResult* copy_of(const CaseResult& c) const;

 private:
  // suite, backend, name, precision of every ok case; suite, backend, elements of each "copy" kernel.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, const CaseResult*> by_name_;
  std::map<std::tuple<std::string, std::string, double>, const CaseResult*> copy_by_size_;
};

}  // namespace mpbench::profiler
