// The host side of profiled steps from hand-built records: the input wait, blocking runtime calls
// and device time per step.
#include <gtest/gtest.h>

#include "profiler/host_evidence.hpp"
#include "records.hpp"

namespace mpbench::profiler {
namespace {

using testing::kernel;
using testing::launch;
using testing::range;

TEST(HostEvidence, BlockingRuntimeCallsAreSyncsWhateverTheirVersionSuffix) {
  for (const char* sync : {"cudaStreamSynchronize_v3020", "cudaDeviceSynchronize", "cudaMemcpy_v3020",
                           "cudaEventSynchronize_v3020"})
    EXPECT_TRUE(is_host_sync(sync)) << sync;
  // Asynchronous calls, and the driver calls a runtime call makes (counted once, as the runtime's).
  for (const char* async : {"cudaMemcpyAsync_v3020", "cudaLaunchKernel_v7000", "cuStreamSynchronize",
                            "cudaStreamSynchronize_vx", "cudaMemcpy_v"})
    EXPECT_FALSE(is_host_sync(async)) << async;
}

// Two steps: each stages its inputs for 30 us, launches two kernels of 100 and 50 us, and reads
// its loss back with a synchronous copy; the first also synchronizes the device.
TEST(HostEvidence, PerStepFiguresFromTwoRecordedSteps) {
  Trace t;
  for (std::uint64_t step = 0; step < 2; ++step) {
    const std::uint64_t at = step * 1'000'000;
    t.ranges.push_back(range("inputs forward", at, at + 30'000));
    t.ranges.push_back(range("c_fc L0 forward", at + 30'000, at + 40'000));
    t.kernels.push_back(kernel("k1", at + 40'000, at + 140'000, 1));
    t.kernels.push_back(kernel("k2", at + 140'000, at + 190'000, 2));
    t.api_calls.push_back(launch(at + 31'000, at + 32'000, 1));
    t.api_calls.push_back({"cudaMemcpy_v3020", {at + 200'000, at + 210'000}, 100, 3});
  }
  t.api_calls.push_back({"cudaDeviceSynchronize_v3020", {1'500'000, 1'600'000}, 100, 4});
  const HostEvidence h = host_evidence(t, 2, 0.004, 0.0012, true);
  EXPECT_DOUBLE_EQ(h.data_s_per_step, 0.002);
  EXPECT_NEAR(h.staging_s_per_step, 30e-6, 1e-15);
  EXPECT_NEAR(h.input_wait_s_per_step(), 0.002 + 30e-6, 1e-15);
  EXPECT_DOUBLE_EQ(*h.host_syncs_per_step, 1.5);
  EXPECT_NEAR(*h.kernel_s_per_step, 150e-6, 1e-15);
  const auto j = h.to_json();
  EXPECT_DOUBLE_EQ(j["step_s"].get<double>(), 0.0012);
  EXPECT_DOUBLE_EQ(j["host_syncs_per_step"].get<double>(), 1.5);
  // The host clock's ranges only (a CPU run): nothing to count syncs or device time from.
  const HostEvidence cpu = host_evidence(t, 2, 0.004, 0.0012, false);
  EXPECT_FALSE(cpu.host_syncs_per_step);
  EXPECT_TRUE(cpu.to_json()["kernel_s_per_step"].is_null());
}

}  // namespace
}  // namespace mpbench::profiler
