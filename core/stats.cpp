#include "core/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace mpbench {

Statistics Statistics::of(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("statistics of no samples");
  Statistics s;
  s.values = samples;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  double squares = 0;
  for (double v : samples) squares += (v - s.mean) * (v - s.mean);
  s.stddev = n > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
  return s;
}

nlohmann::json Statistics::to_json() const {
  return {{"median", median}, {"min", min},       {"max", max},
          {"mean", mean},     {"stddev", stddev}, {"samples", values.size()},
          {"values", values}};
}

Statistics Statistics::from_json(const nlohmann::json& j, const std::string& where) {
  const JsonObject fields(j, where);
  Statistics s;
  s.median = fields.number("median");
  s.min = fields.number("min");
  s.max = fields.number("max");
  s.mean = fields.number("mean");
  s.stddev = fields.number("stddev");
  if (fields.has("values")) {
    const nlohmann::json& values = fields.array("values");
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!values[i].is_number() || !std::isfinite(values[i].get<double>()))
        throw UsageError(fmt::format("{}[{}]: must be a finite number", fields.path_of("values"), i));
      s.values.push_back(values[i].get<double>());
    }
  }
  return s;
}

}  // namespace mpbench
