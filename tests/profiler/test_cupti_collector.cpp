// The CUPTI collector: without a GPU (or CUPTI, or CUDA) it either starts and collects nothing or
// says why it cannot; on a GPU it records a memset, its launching API call, the external id pushed
// around it and, NVTX injection arranged before the process's first NVTX call, the NVTX range
// around it.
#include <gtest/gtest.h>

#include <algorithm>

#include "profiler/cupti_collector.hpp"

#ifdef MPBENCH_TEST_WITH_CUDA
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace mpbench::profiler {
namespace {

TEST(CuptiCollector, StartsOrSaysWhyNot) {
  try {
    CuptiCollector collector;
    EXPECT_THROW(CuptiCollector second, CuptiUnavailable);  // one at a time
    const Trace t = collector.stop();
    EXPECT_TRUE(t.kernels.empty());
    EXPECT_TRUE(collector.stop().api_calls.empty());  // a second stop has nothing left
    RecordProperty("cupti", "started");
  } catch (const CuptiUnavailable& e) {
    RecordProperty("cupti", e.what());
    EXPECT_GT(std::string(e.what()).size(), 10u) << e.what();
  }
}

#ifdef MPBENCH_TEST_WITH_CUDA
TEST(CuptiCollector, RecordsAMemsetItsLaunchAndTheExternalId) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no usable GPU";
  // No other test of this binary makes an NVTX call, so this comes before the first.
  const std::string injection = arrange_nvtx_injection();
  void* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, 1 << 20), cudaSuccess);
  Trace t;
  {
    CuptiCollector collector;
    nvtxRangePushA("mpbench test range");
    collector.push_external_id(42);
    ASSERT_EQ(cudaMemsetAsync(buffer, 0, 1 << 20), cudaSuccess);
    collector.pop_external_id();
    nvtxRangePop();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    t = collector.stop();
    EXPECT_FALSE(collector.incomplete()) << *collector.incomplete();
  }
  cudaFree(buffer);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 1u << 20);
  EXPECT_GT(t.memsets[0].time.duration_ns(), 0u);
  const auto corr = t.memsets[0].where.correlation_id;
  const auto api = std::find_if(t.api_calls.begin(), t.api_calls.end(),
                                [&](const ApiRecord& a) { return a.correlation_id == corr; });
  ASSERT_NE(api, t.api_calls.end());
  EXPECT_NE(api->name.find("Memset"), std::string::npos) << api->name;
  EXPECT_TRUE(std::any_of(t.external_correlations.begin(), t.external_correlations.end(),
                          [&](const ExternalCorrelation& e) { return e.external_id == 42 && e.correlation_id == corr; }));
  ASSERT_EQ(t.nvtx_ranges.size(), 1u) << injection;
  EXPECT_EQ(t.nvtx_ranges[0].name, "mpbench test range");
  EXPECT_TRUE(t.nvtx_ranges[0].time.contains(api->time));
}
#endif

}  // namespace
}  // namespace mpbench::profiler
