#include "core/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace mpbench {

double median_of(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Statistics Statistics::of(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("statistics of no samples");
  Statistics s;
  s.values = samples;
  s.samples = samples.size();
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = median_of(samples);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  double squares = 0;
  for (double v : samples) squares += (v - s.mean) * (v - s.mean);
  s.stddev = n > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
  return s;
}

nlohmann::json Statistics::to_json() const {
  nlohmann::json j = {{"median", median}, {"min", min}, {"max", max}, {"mean", mean}, {"stddev", stddev},
                      {"samples", samples}};
  if (!values.empty()) j["values"] = values;  // a summary read without its samples is written without them
  return j;
}

namespace {

constexpr double kShortestTime = 1e-12, kLongestTime = 1e7;  // a picosecond; 116 days

// The fields of a summary must agree with each other and with its samples: a reader that took a
// min above the max or a negative time would compute ratios from them without noticing.
void check_consistent(const Statistics& s, const JsonObject& fields) {
  const auto wrong = [&](const char* key, const std::string& why) {
    throw UsageError(fmt::format("{}: {}", fields.path_of(key), why));
  };
  if (s.min < 0) wrong("min", fmt::format("must be 0 or more, is {}", s.min));
  if (s.max < s.min) wrong("max", fmt::format("must be at least min ({}), is {}", s.min, s.max));
  if (s.median < s.min || s.median > s.max)
    wrong("median", fmt::format("must be within min and max [{}, {}], is {}", s.min, s.max, s.median));
  // The mean of equal samples may round an ulp beyond them.
  constexpr double kRounding = 1e-9;
  if (s.mean < s.min * (1 - kRounding) || s.mean > s.max * (1 + kRounding))
    wrong("mean", fmt::format("must be within min and max [{}, {}], is {}", s.min, s.max, s.mean));
  if (s.stddev < 0) wrong("stddev", fmt::format("must be 0 or more, is {}", s.stddev));
  // A sample's standard deviation is below 0.71 times its range (equal samples' may round a little
  // above 0): a larger one was not computed from samples within min and max, and a spread of
  // 1e308 s overflows every interval built on it.
  if (s.stddev > s.max - s.min + kRounding * s.max)
    wrong("stddev", fmt::format("must be at most max - min ({}), is {}", s.max - s.min, s.stddev));
  // No clock measures beyond these: a time of 5e-324 s made a change of +inf%.
  for (const auto& [key, value] : {std::pair{"median", s.median}, {"min", s.min}, {"max", s.max}, {"mean", s.mean}}) {
    if ((value > 0 && value < kShortestTime) || value > kLongestTime)
      wrong(key, fmt::format("must be 0 or between {:g} and {:g} seconds, is {}", kShortestTime, kLongestTime, value));
  }
  for (std::size_t i = 0; i < s.values.size(); ++i)
    if (s.values[i] < s.min || s.values[i] > s.max)
      throw UsageError(fmt::format("{}[{}]: must be within min and max [{}, {}], is {}", fields.path_of("values"), i,
                                   s.min, s.max, s.values[i]));
}

// How many samples the summary is of: at least kMinSamples, and as many as its values when it
// lists them.
void check_samples(const Statistics& s, const JsonObject& fields, bool has_values) {
  const nlohmann::json& samples = fields.value("samples");
  // A whole number however the JSON holds it: parsed text makes it unsigned, a value built in code signed.
  const bool whole = samples.is_number_unsigned() || (samples.is_number_integer() && samples.get<std::int64_t>() >= 0);
  if (!whole || samples.get<std::uint64_t>() < Statistics::kMinSamples)
    throw UsageError(fmt::format("{}: must be a whole number of at least {}, is {}", fields.path_of("samples"),
                                 Statistics::kMinSamples, samples.dump().substr(0, 40)));
  if (samples.get<std::uint64_t>() == 1 && (s.min != s.max || s.stddev != 0))
    throw UsageError(fmt::format("{}: is 1, but min {} and max {} or stddev {} show a spread", fields.path_of("samples"),
                                 s.min, s.max, s.stddev));
  if (has_values && samples.get<std::uint64_t>() != s.values.size())
    throw UsageError(fmt::format("{}: is {} but values lists {}", fields.path_of("samples"),
                                 samples.get<std::uint64_t>(), s.values.size()));
}

}  // namespace

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
    s.values.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!values[i].is_number() || !std::isfinite(values[i].get<double>()))
        throw UsageError(fmt::format("{}[{}]: must be a finite number", fields.path_of("values"), i));
      s.values.push_back(values[i].get<double>());
    }
  }
  check_samples(s, fields, fields.has("values"));
  s.samples = fields.value("samples").get<std::uint64_t>();
  check_consistent(s, fields);
  return s;
}

}  // namespace mpbench
