#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "backends/reference/reference_backend.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/measure.hpp"

namespace mpbench {
namespace {

SamplerConfig fast_config() {
  SamplerConfig c = SamplerConfig::quick();
  c.flush_cache = false;
  c.min_time_s = 0.01;
  c.timeout_s = 1.0;
  return c;
}

TEST(Measure, TakesAtLeastMinSamplesAndRecordsClocks) {
  reference::ReferenceBackend backend;
  int calls = 0;
  const Measurement m = measure(backend, [&] { ++calls; std::this_thread::sleep_for(std::chrono::microseconds(200)); }, fast_config());
  EXPECT_GE(m.seconds_per_op.values.size(), 5u);
  EXPECT_GE(calls, static_cast<int>(m.seconds_per_op.values.size()) * m.ops_per_sample + 2);  // + warm-up
  EXPECT_GT(m.seconds_per_op.min, 150e-6);  // a sleep never ends early
  EXPECT_FALSE(m.stop_reason.empty());
  EXPECT_TRUE(m.clocks_before.is_object());
}

TEST(Measure, ShortOpsAreBatchedIntoLongerSamples) {
  reference::ReferenceBackend backend;
  volatile int sink = 0;
  const Measurement m = measure(backend, [&] { sink = sink + 1; }, fast_config());
  EXPECT_GT(m.ops_per_sample, 1);
}

TEST(Measure, StopsAtTheTimeoutWhenNoiseNeverSettles) {
  reference::ReferenceBackend backend;
  SamplerConfig c = fast_config();
  c.max_noise = 0;  // unreachable
  c.timeout_s = 0.2;
  int i = 0;
  const Measurement m = measure(backend, [&] { std::this_thread::sleep_for(std::chrono::microseconds(100 * (1 + (++i % 3)))); }, c);
  EXPECT_FALSE(m.converged);
  EXPECT_NE(m.stop_reason.find("timeout 0.2 s reached before the noise target"), std::string::npos) << m.stop_reason;
  EXPECT_NE(m.stop_reason.find("% > 0.00%"), std::string::npos) << m.stop_reason;
}

TEST(Measure, ATimeoutSaysWhatTheCaseLacked) {
  reference::ReferenceBackend backend;
  SamplerConfig c = fast_config();
  c.min_samples = 100000;  // out of reach in the time allowed, whatever the noise
  c.min_time_s = 1000;
  c.timeout_s = 0.05;
  const Measurement m = measure(backend, [] { std::this_thread::sleep_for(std::chrono::microseconds(500)); }, c);
  EXPECT_FALSE(m.converged);
  const int samples = static_cast<int>(m.seconds_per_op.values.size());
  EXPECT_NE(m.stop_reason.find(std::to_string(samples) + " samples < 100000"), std::string::npos) << m.stop_reason;
  EXPECT_NE(m.stop_reason.find("s measured < 1000 s"), std::string::npos) << m.stop_reason;
  EXPECT_NE(m.stop_reason.find("noise "), std::string::npos) << m.stop_reason;
  EXPECT_NE(m.stop_reason.find(" 2.00%"), std::string::npos) << m.stop_reason;  // quick's target
}

TEST(Measure, InterruptStopsTheSampler) {
  reference::ReferenceBackend backend;
  request_interrupt();
  EXPECT_THROW(measure(backend, [] {}, fast_config()), Interrupted);
  clear_interrupt();
}

}  // namespace
}  // namespace mpbench
