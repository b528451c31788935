#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "core/error.hpp"

#include "core/stats.hpp"

namespace mpbench {
namespace {

TEST(Statistics, HandComputedOddCount) {
  const Statistics s = Statistics::of({4.0, 1.0, 3.0, 2.0, 10.0});
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  // Sample variance: (0 + 9 + 1 + 4 + 36) / 4 = 12.5
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(12.5));
  EXPECT_EQ(s.values.size(), 5u);
  EXPECT_DOUBLE_EQ(s.values[0], 4.0);  // samples kept in measurement order
}

TEST(Statistics, EvenCountMedianAveragesTheMiddlePair) {
  const Statistics s = Statistics::of({2.0, 8.0, 4.0, 6.0});
  EXPECT_DOUBLE_EQ(s.median, 5.0);
  EXPECT_NEAR(s.relative_spread(), s.stddev / 5.0, 1e-15);
}

TEST(Statistics, EmptyIsAnError) { EXPECT_THROW(Statistics::of({}), std::invalid_argument); }

TEST(Statistics, MedianOfHandComputedCases) {
  EXPECT_DOUBLE_EQ(median_of({7.0}), 7.0);
  EXPECT_DOUBLE_EQ(median_of({9.0, -1.0, 4.0}), 4.0);
  EXPECT_DOUBLE_EQ(median_of({5.0, 1.0, 8.0, 2.0}), 3.5);
  EXPECT_THROW(median_of({}), std::invalid_argument);
}

TEST(Statistics, JsonRoundTrip) {
  const Statistics s = Statistics::of({1.5e-3, 1.7e-3, 1.6e-3});
  const Statistics back = Statistics::from_json(s.to_json());
  EXPECT_EQ(back.median, s.median);
  EXPECT_EQ(back.stddev, s.stddev);
  EXPECT_EQ(back.values, s.values);
  EXPECT_EQ(s.to_json()["samples"], 3);
}

// Fresh random samples: what Statistics::of writes reads back, and each way a summary can
// contradict itself or its samples is refused naming the field.
std::vector<double> random_samples(std::mt19937& rng) {
  std::uniform_real_distribution<double> time(1e-6, 1e-2);
  std::vector<double> v(2 + rng() % 20);
  for (double& x : v) x = time(rng);
  return v;
}

TEST(Statistics, SummariesOfRandomSamplesReadBack) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 100; ++i) {
    const Statistics s = Statistics::of(random_samples(rng));
    EXPECT_EQ(Statistics::from_json(s.to_json()).values, s.values);
  }
  // One sample (a transformer run of --steps 2): no spread, and read as it was written.
  const Statistics one = Statistics::of({std::uniform_real_distribution<double>(1e-6, 1.0)(rng)});
  EXPECT_EQ(Statistics::from_json(one.to_json()).values, one.values);
  EXPECT_EQ(one.to_json()["samples"], 1);
  // Equal samples: their mean may round an ulp beyond them.
  const Statistics equal = Statistics::of(std::vector<double>(7, 0.1));
  EXPECT_NO_THROW(Statistics::from_json(equal.to_json()));
}

// A document may leave the samples out: the summary keeps how many there were.
TEST(Statistics, ASummaryWithoutItsSamplesKeepsTheirCount) {
  std::mt19937 rng(std::random_device{}());
  nlohmann::json j = Statistics::of(random_samples(rng)).to_json();
  const auto n = j["values"].size();
  j.erase("values");
  const Statistics s = Statistics::from_json(j);
  EXPECT_EQ(s.samples, n);
  EXPECT_TRUE(s.values.empty());
  EXPECT_EQ(s.to_json()["samples"], n);
  EXPECT_FALSE(s.to_json().contains("values"));
  EXPECT_NO_THROW(Statistics::from_json(s.to_json()));
}

std::string error_of(const nlohmann::json& j) {
  try {
    Statistics::from_json(j, "cases[4].metrics.seconds");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Statistics, InconsistentSummariesAreRefusedNamingTheField) {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 20; ++round) {
    const nlohmann::json good = Statistics::of(random_samples(rng)).to_json();
    const double min = good["min"], max = good["max"];
    const std::pair<std::function<void(nlohmann::json&)>, std::string> mutations[] = {
        {[&](auto& j) { j["min"] = max * 1.5; }, ".max: must be at least min"},
        {[&](auto& j) { j["min"] = -min; }, ".min: must be 0 or more"},
        {[&](auto& j) { j["median"] = max * 2; }, ".median: must be within min and max"},
        {[&](auto& j) { j["median"] = min / 2; }, ".median: must be within min and max"},
        {[&](auto& j) { j["mean"] = max * 1.01; }, ".mean: must be within min and max"},
        {[&](auto& j) { j["stddev"] = -1e-9; }, ".stddev: must be 0 or more"},
        {[&](auto& j) { j["samples"] = j["values"].size() + 1 + rng() % 5; }, ".samples: is"},
        {[&](auto& j) { j["values"].push_back(min); }, ".samples: is"},
        {[&](auto& j) { j["samples"] = 1; j["values"] = {min}; }, ".samples: is 1, but min"},
        {[&](auto& j) { j["samples"] = 0; j.erase("values"); }, ".samples: must be a whole number of at least 1"},
        {[&](auto& j) { j["samples"] = -3; }, ".samples: must be a whole number"},
        {[&](auto& j) { j["samples"] = 2.5; }, ".samples: must be a whole number"},
        {[&](auto& j) { j.erase("samples"); }, ".samples: missing"},
        {[&](auto& j) { j["values"][rng() % j["values"].size()] = max * 3; }, ".values["},
        // Finite but beyond any measurement: ratios and intervals of them overflowed to ±inf%.
        {[&](auto& j) { j["stddev"] = 1e308; }, ".stddev: must be at most max - min"},
        {[&](auto& j) { j["stddev"] = (max - min) * 1.01 + 1e-300; }, ".stddev: must be at most max - min"},
        {[&](auto& j) { j = Statistics::of({5e-324, 5e-324}).to_json(); }, ".median: must be 0 or between 1e-12"},
        {[&](auto& j) { j = Statistics::of({1e300}).to_json(); }, ".median: must be 0 or between 1e-12"},
    };
    for (const auto& [mutate, says] : mutations) {
      nlohmann::json j = good;
      mutate(j);
      const std::string error = error_of(j);
      EXPECT_EQ(error.rfind("cases[4].metrics.seconds", 0), 0u) << error;
      EXPECT_NE(error.find(says), std::string::npos) << "expected " << says << ", got " << error << "\n" << j.dump();
    }
  }
}

}  // namespace
}  // namespace mpbench
