#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mpbench {

// The median of `values` (the mean of the middle two for an even count); needs at least one value.
double median_of(std::vector<double> values);

// Summary of repeated measurements of one quantity; keeps the samples so that later tools
// (compare's rank test) can use them.
struct Statistics {
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;
  std::uint64_t samples = 0;   // how many the summary is of
  std::vector<double> values;  // the samples themselves, where kept (a document may leave them out)

  // A document's summary is of one sample at least (a transformer run of --steps 2 times one step,
  // and marks it unconverged); a single sample's min, max, median and mean are the one value.
  static constexpr std::uint64_t kMinSamples = 1;

  static Statistics of(std::vector<double> samples);  // needs at least one sample
  double relative_spread() const { return mean > 0 ? stddev / mean : 0; }
  nlohmann::json to_json() const;
  // UsageError naming `where` and the field for a malformed summary: fields missing or not finite,
  // not 0 <= min <= median, mean <= max, a negative stddev, fewer than kMinSamples samples, one sample with a spread, a
  // samples count other than the number of values, or a value outside [min, max].
  static Statistics from_json(const nlohmann::json& j, const std::string& where = "seconds");
};

}  // namespace mpbench
