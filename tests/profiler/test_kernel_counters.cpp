// Hardware counters attached to kernel records (launch order), carried over by op range and kernel
// name to other steps, and read by the classification as measured Tensor Core evidence; the
// counter collector either counts or says why it cannot (no GPU, no permission).
#include <gtest/gtest.h>

#include "profiler/classify.hpp"
#include "profiler/kernel_counters.hpp"
#include "records.hpp"

namespace mpbench::profiler {
namespace {

using namespace testing;

// One step: two ranges, each launching a GEMM and an elementwise kernel; the records arrive out
// of launch order, as CUPTI's buffers may deliver them.
Trace step(std::uint64_t base, std::uint32_t first_correlation) {
  Trace t;
  t.ranges = {range("c_fc L0 forward", base, base + 100, 1), range("c_fc L1 forward", base + 100, base + 200, 2)};
  const std::uint32_t c = first_correlation;
  t.external_correlations = {{1, c}, {1, c + 1}, {2, c + 2}, {2, c + 3}};
  t.api_calls = {launch(base + 10, base + 11, c), launch(base + 20, base + 21, c + 1),
                 launch(base + 110, base + 111, c + 2), launch(base + 120, base + 121, c + 3)};
  t.kernels = {kernel("nvjet_tst_bf16", base + 130, base + 150, c + 2), kernel("nvjet_tst_bf16", base + 30, base + 50, c),
               kernel("add_bias_and_round_kernel", base + 160, base + 170, c + 3),
               kernel("add_bias_and_round_kernel", base + 60, base + 70, c + 1)};
  return t;
}

TEST(KernelCounters, AttachInLaunchOrder) {
  Trace t = step(1000, 10);
  ASSERT_TRUE(attach_tensor_pipe_counters(t, {61.0, 0.0, 59.0, 0.5}));
  // Launch order: correlation 10 (kernels[1]), 11 (kernels[3]), 12 (kernels[0]), 13 (kernels[2]).
  EXPECT_EQ(t.kernels[1].tensor_pipe_pct, 61.0);
  EXPECT_EQ(t.kernels[3].tensor_pipe_pct, 0.0);
  EXPECT_EQ(t.kernels[0].tensor_pipe_pct, 59.0);
  EXPECT_EQ(t.kernels[2].tensor_pipe_pct, 0.5);
  EXPECT_EQ(classify_kernel(t.kernels[0]).tensor_cores, TensorCoreEvidence::measured);
  // A count that does not match the kernels changes nothing.
  Trace other = step(1000, 10);
  EXPECT_FALSE(attach_tensor_pipe_counters(other, {61.0, 0.0, 59.0}));
  for (const KernelRecord& k : other.kernels) EXPECT_FALSE(k.tensor_pipe_pct.has_value());
}

TEST(KernelCounters, KernelsOfOneLaunchCallAttachInStartOrder) {
  Trace t;  // one API call (a graph launch) ran three kernels, delivered out of order
  t.kernels = {kernel("nvjet_tst_bf16", 300, 320, 7), kernel("add_bias_and_round_kernel", 100, 120, 7),
               kernel("nvjet_tst_bf16", 200, 220, 7)};
  ASSERT_TRUE(attach_tensor_pipe_counters(t, {0.5, 61.0, 59.0}));
  EXPECT_EQ(t.kernels[1].tensor_pipe_pct, 0.5);
  EXPECT_EQ(t.kernels[2].tensor_pipe_pct, 61.0);
  EXPECT_EQ(t.kernels[0].tensor_pipe_pct, 59.0);
}

TEST(KernelCounters, OneCountedStepAttachesToEveryStepOfTheSameKernels) {
  // Two steps of the same four launches (correlations 10-13, then 20-23), delivered shuffled.
  Trace two = step(1000, 10);
  Trace second = step(2000, 20);
  two.kernels.insert(two.kernels.begin(), second.kernels.begin(), second.kernels.end());
  ASSERT_TRUE(attach_tensor_pipe_counters(two, {61.0, 0.0, 59.0, 0.5}, 2));
  for (const KernelRecord& k : two.kernels) {
    const std::uint32_t launch = k.where.correlation_id % 10;  // position within its step
    EXPECT_EQ(k.tensor_pipe_pct, (std::vector<double>{61.0, 0.0, 59.0, 0.5}[launch])) << k.where.correlation_id;
  }
  Trace three = step(1000, 10);
  EXPECT_FALSE(attach_tensor_pipe_counters(three, {61.0, 0.0}, 3)) << "4 kernels are not 3 steps of 2";
  EXPECT_FALSE(attach_tensor_pipe_counters(three, {}, 1));
  for (const KernelRecord& k : three.kernels) EXPECT_FALSE(k.tensor_pipe_pct.has_value());
}

TEST(KernelCounters, CarriedToTheSameKernelsOfTheSameRangesInOtherSteps) {
  Trace counted = step(1000, 10);
  ASSERT_TRUE(attach_tensor_pipe_counters(counted, {60.0, 0.0, 40.0, 0.0}));
  Trace target = step(5000, 50);
  target.kernels.push_back(kernel("unseen_kernel", 5180, 5190, 53));
  target.kernels[1].tensor_pipe_pct = 7.0;  // counted already: kept
  EXPECT_EQ(carry_tensor_pipe_counters(counted, target), 3u);
  EXPECT_EQ(target.kernels[0].tensor_pipe_pct, 40.0) << "the GEMM of c_fc L1";
  EXPECT_EQ(target.kernels[1].tensor_pipe_pct, 7.0);
  EXPECT_EQ(target.kernels[2].tensor_pipe_pct, 0.0);
  EXPECT_EQ(target.kernels[3].tensor_pipe_pct, 0.0);
  EXPECT_FALSE(target.kernels[4].tensor_pipe_pct.has_value());
  // A Tensor Core name with a zero count is no evidence; a counted GEMM is measured.
  EXPECT_EQ(classify_kernel(target.kernels[0]).tensor_cores, TensorCoreEvidence::measured);
  KernelRecord idle = target.kernels[0];
  idle.tensor_pipe_pct = 0.0;
  EXPECT_EQ(classify_kernel(idle).tensor_cores, TensorCoreEvidence::no_evidence);
}

// Whether CUPTI itself is missing (no libcupti, a build without CUDA), the one reason to skip.
bool cupti_missing(const CuptiUnavailable& e) {
  const std::string what = e.what();
  return what.find("libcupti was not found") != std::string::npos || what.find("without CUDA") != std::string::npos;
}

// CUPTI's metric tables, read on the host: each chip mpbench targets knows a tensor-pipe metric, and
// an unknown name ahead of it is passed over (adding it would spoil the host object).
TEST(KernelCounterMetric, EveryTargetChipKnowsATensorPipeMetric) {
  try {
    for (const char* chip : {"GA100", "AD102", "GH100", "GB100"})
      EXPECT_EQ(first_known_metric(chip, tensor_pipe_metric_candidates()), tensor_pipe_metric_candidates().front())
          << chip;
    const std::vector<std::string> unknown_first = {"sm__no_such_metric.avg", tensor_pipe_metric_candidates().front()};
    EXPECT_EQ(first_known_metric("GH100", unknown_first), unknown_first[1]);
  } catch (const CuptiUnavailable& e) {
    if (cupti_missing(e)) GTEST_SKIP() << e.what();
    FAIL() << e.what();
  }
}

TEST(KernelCounterMetric, NoKnownMetricIsRefusedWithTheChip) {
  try {
    first_known_metric("GH100", {"sm__no_such_metric.avg"});
    ADD_FAILURE() << "an unknown metric was accepted";
  } catch (const CuptiUnavailable& e) {
    if (cupti_missing(e)) GTEST_SKIP() << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("chip GH100 has none of the metrics sm__no_such_metric.avg"), std::string::npos) << what;
  }
}

TEST(KernelCounterCollector, CountsOrSaysWhyNot) {
  try {
    KernelCounterCollector collector(tensor_pipe_metric_candidates(), 16);
    EXPECT_FALSE(collector.metric().empty());
    EXPECT_TRUE(collector.stop().empty()) << "no kernel ran";
  } catch (const CuptiUnavailable& e) {
    EXPECT_GT(std::string(e.what()).size(), 10u) << e.what();
  }
}

}  // namespace
}  // namespace mpbench::profiler
