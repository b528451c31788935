// Attribution of kernels to op ranges on hand-built records: exact through external correlation,
// by the enclosing range of the launching call otherwise, and unattributed when neither exists.
#include <gtest/gtest.h>

#include "profiler/attribute.hpp"
#include "records.hpp"

namespace mpbench::profiler {
namespace {

using namespace testing;

std::string range_name(const Trace& t, const Attribution& a) { return a.range ? t.ranges[*a.range].name : "(none)"; }

TEST(Attribution, ExternalCorrelationIsExactEvenWhenTimesSaySomethingElse) {
  Trace t;
  t.ranges = {range("forward", 0, 1000, 1), range("layer0/qkv", 100, 200, 2)};
  // The launch happened inside "layer0/qkv" by time, but its external id says "forward": the id
  // is what CUPTI recorded, so it wins.
  t.api_calls = {launch(150, 160, 11)};
  t.external_correlations = {{1, 11}};
  t.kernels = {kernel("nvjet_hsh", 5000, 6000, 11)};
  const auto a = attribute_kernels(t);
  ASSERT_EQ(a.per_kernel.size(), 1u);
  EXPECT_EQ(range_name(t, a.per_kernel[0]), "forward");
  EXPECT_EQ(a.per_kernel[0].method, AttributionMethod::external_correlation);
  EXPECT_EQ(a.unattributed, 0u);
}

TEST(Attribution, FallsBackToTheInnermostRangeAroundTheLaunchOnItsThread) {
  Trace t;
  t.ranges = {range("forward", 0, 1000), range("layer0/ln_1", 100, 200), range("other_thread", 0, 1000, 0, 999)};
  t.api_calls = {launch(150, 160, 21), launch(500, 510, 22), launch(2000, 2010, 23)};
  // Kernels run long after their launches (asynchronous); only the launch times matter.
  t.kernels = {kernel("a", 9000, 9100, 21), kernel("b", 9100, 9200, 22), kernel("c", 9200, 9300, 23)};
  const auto a = attribute_kernels(t);
  EXPECT_EQ(range_name(t, a.per_kernel[0]), "layer0/ln_1");
  EXPECT_EQ(a.per_kernel[0].method, AttributionMethod::enclosing_range);
  EXPECT_EQ(range_name(t, a.per_kernel[1]), "forward");
  EXPECT_EQ(range_name(t, a.per_kernel[2]), "(none)");
  EXPECT_EQ(a.per_kernel[2].method, AttributionMethod::none);
  EXPECT_EQ(a.unattributed, 1u);
}

TEST(Attribution, KernelsWithoutALaunchRecordAreUnattributed) {
  Trace t;
  t.ranges = {range("forward", 0, 1000, 1)};
  t.external_correlations = {{1, 31}};
  t.kernels = {kernel("a", 100, 200, 31), kernel("lost", 300, 400, 32)};
  const auto a = attribute_kernels(t);
  EXPECT_EQ(range_name(t, a.per_kernel[0]), "forward");
  EXPECT_FALSE(a.per_kernel[1].range);
  EXPECT_EQ(a.unattributed, 1u);
}

TEST(Attribution, AnExternalIdOfNoKnownRangeFallsBackToTime) {
  Trace t;
  t.ranges = {range("backward", 0, 1000)};
  t.api_calls = {launch(10, 20, 41)};
  t.external_correlations = {{77, 41}};
  t.kernels = {kernel("a", 100, 200, 41)};
  EXPECT_EQ(range_name(t, attribute_kernels(t).per_kernel[0]), "backward");
}

}  // namespace
}  // namespace mpbench::profiler
