#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

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

Statistics Statistics::from_json(const nlohmann::json& j) {
  Statistics s;
  s.median = j.at("median").get<double>();
  s.min = j.at("min").get<double>();
  s.max = j.at("max").get<double>();
  s.mean = j.at("mean").get<double>();
  s.stddev = j.at("stddev").get<double>();
  if (j.contains("values")) s.values = j.at("values").get<std::vector<double>>();
  return s;
}

}  // namespace mpbench
