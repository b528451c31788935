#include <gtest/gtest.h>

#include "core/progress.hpp"

namespace mpbench {
namespace {

TEST(Progress, DurationsReadInTheirLargestUnits) {
  EXPECT_EQ(duration_text(0), "0 s");
  EXPECT_EQ(duration_text(59.4), "59 s");
  EXPECT_EQ(duration_text(59.6), "1 min 00 s");
  EXPECT_EQ(duration_text(125), "2 min 05 s");
  EXPECT_EQ(duration_text(3725), "1 h 02 min");
  EXPECT_EQ(duration_text(-3), "0 s");
}

TEST(Progress, TheTimeLeftFollowsThePaceSoFar) {
  EXPECT_EQ(elapsed_and_left(30, 0, 10), "30 s");  // no pace yet
  EXPECT_EQ(elapsed_and_left(0.5, 5, 10), "1 s");  // too short a time to tell a pace
  EXPECT_EQ(elapsed_and_left(30, 3, 10), "30 s, about 1 min 10 s left");  // 10 s a unit, 7 to go
  EXPECT_EQ(elapsed_and_left(90, 9, 10), "1 min 30 s, about 10 s left");
  EXPECT_EQ(elapsed_and_left(100, 10, 10), "1 min 40 s");  // done: nothing left to estimate
}

}  // namespace
}  // namespace mpbench
