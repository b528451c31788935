#include <gtest/gtest.h>

#include <cmath>

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

TEST(Statistics, JsonRoundTrip) {
  const Statistics s = Statistics::of({1.5e-3, 1.7e-3, 1.6e-3});
  const Statistics back = Statistics::from_json(s.to_json());
  EXPECT_EQ(back.median, s.median);
  EXPECT_EQ(back.stddev, s.stddev);
  EXPECT_EQ(back.values, s.values);
  EXPECT_EQ(s.to_json()["samples"], 3);
}

}  // namespace
}  // namespace mpbench
