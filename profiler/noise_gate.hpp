#pragma once
// explain's noise gate. A speedup or a share of the copy is the ratio of two measured times, and its
// noise is both times' spreads combined. Where that exceeds what the run's noise target allows a
// ratio (both times just at the target: target * sqrt(2)), explain names no cause for the ratio
// and says to rerun instead: a cause read into noise is worse than none.
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "core/result.hpp"

namespace mpbench::profiler {

struct NoiseGate {
  double noise = 0;        // sqrt(spread_a^2 + spread_b^2), relative
  double limit = 0;        // run.sampler.max_noise * sqrt(2)
  double spread_a = 0, spread_b = 0;
  bool closed() const { return noise > limit; }
  // "its times spread ±134% and ±230%, beyond the run's noise target of 2%: ..." and what to do.
  std::string message() const;
};

// Empty where no noise target applies: cases measured without the sampler (the Transformer's
// steps) or documents that did not record run.sampler.max_noise.
std::optional<NoiseGate> noise_gate(const ResultDocument& doc, const CaseResult& a, const CaseResult& b);

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
