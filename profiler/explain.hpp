#pragma once
// `mpbench explain`: why a precision mode is (or is not) faster than the baseline. With kernel
// breakdowns it decomposes the speedup Amdahl-style by category; for microbenchmark documents it
// reads what each case recorded (cuBLASLt's Tensor Core flag, oneDNN's implementation, datasheet
// peaks, cast and copy rates). Each rule that fires carries its evidence.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profiler/noise_gate.hpp"

namespace mpbench::profiler {

struct CategoryShare {
  std::string category;
  double baseline_s = 0;
  double mode_s = 0;
  double share_of_baseline = 0;  // baseline_s / baseline total
  double share_of_mode = 0;      // mode_s / mode total
  std::optional<double> speedup;  // baseline_s / mode_s; none when the mode spent no time here
  // Time saved here as a fraction of the baseline total; these add up to 1 - 1/total speedup.
  double contribution = 0;
  // The total speedup had only this category changed.
  double speedup_if_only_this = 1;
};

struct Decomposition {
  double baseline_s = 0;
  double mode_s = 0;
  double speedup = 0;
  std::vector<CategoryShare> categories;  // by baseline time, largest first
  std::string limiting_category;          // the largest part of the mode's time
  double ceiling = 0;  // speedup if everything but the limiting category took no time
};

// Both maps: seconds per category. Categories missing on one side count as 0 there.
Decomposition decompose(const std::map<std::string, double>& baseline, const std::map<std::string, double>& mode);

struct Finding {
  std::string rule;
  std::string severity;  // "warning": costs speed; "info": context for the numbers
  std::string message;
  nlohmann::json evidence = nlohmann::json::object();
};

struct CaseExplanation {
  std::string id;  // suite/name/backend/precision
  std::string precision;
  std::optional<double> speedup;  // measured, over the baseline
  std::optional<RatioInterval> interval;  // the speedup's, where both cases kept their samples
  std::optional<double> pct_of_copy;      // a cast's or stream kernel's recorded share of the copy
  std::optional<Decomposition> decomposition;
  std::vector<Finding> findings;
};

struct Explanation {
  std::string baseline;
  // On top: per low-precision mode, whether it pays here, by how much, what limits it and what
  // would change that (profiler/mode_verdict.hpp).
  std::vector<Finding> modes;
  // Then: whether the device ran the low-precision GEMMs natively, and the run's figures.
  std::vector<Finding> verdict;
  std::vector<CaseExplanation> cases;
  std::vector<Finding> findings;  // about the document as a whole (casts, ...)
  // With --peer: mpbench against PyTorch (profiler/peer.hpp); peer_label names PyTorch's side.
  std::string peer_label;
  std::vector<Finding> peer;
  // With --against: the same cases under other library versions (profiler/against.hpp);
  // against_label names the other document.
  std::string against_label;
  std::vector<Finding> against;

  nlohmann::json to_json() const;
  std::string to_text() const;
};

// Throws UsageError when no case ran in the baseline precision, or a breakdown is malformed.
// bf16_noise: the same run with another seed (explain --noise), whose bf16 losses give the noise
// fp8_loss_drift judges the fp8 modes' losses by; null: the rule's threshold instead.
Explanation explain(const ResultDocument& document, const std::string& baseline = "fp32",
                    const ResultDocument* bf16_noise = nullptr);

}  // namespace mpbench::profiler
