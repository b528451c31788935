#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mpbench {

// Summary of repeated measurements of one quantity; keeps the samples so that later tools
// (compare's rank test) can use them.
struct Statistics {
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;
  std::vector<double> values;

  static Statistics of(std::vector<double> samples);  // needs at least one sample
  double relative_spread() const { return mean > 0 ? stddev / mean : 0; }
  nlohmann::json to_json() const;
  // UsageError naming `where` and the field for a malformed summary.
  static Statistics from_json(const nlohmann::json& j, const std::string& where = "seconds");
};

}  // namespace mpbench
