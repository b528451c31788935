#pragma once
// Finite-difference helpers for the gradient tests (double precision throughout), and the seeds,
// tokens, test names and devices the workload tests share.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "amp/policy.hpp"
#include "core/backend.hpp"
#include "core/random.hpp"

namespace mpbench::workloads::testing {

// A seed that differs from run to run; tests print it (SCOPED_TRACE), and MPBENCH_TEST_SEED set to
// the printed value replays a failure.
inline std::uint64_t fresh_seed() {
  if (const char* replay = std::getenv("MPBENCH_TEST_SEED")) return std::stoull(replay);
  std::random_device device;
  return (std::uint64_t{device()} << 32) | device();
}

// A CPU device with `memory_bytes` of memory, for planning runs against.
inline DeviceInfo cpu_with(std::uint64_t memory_bytes) {
  DeviceInfo device;
  device.backend = "cpu";
  device.name = "test CPU";
  device.memory_bytes = memory_bytes;
  return device;
}

// A test name for a precision mode: its name without dashes (amp-bf16: ampbf16).
inline std::string mode_test_name(const ::testing::TestParamInfo<amp::Mode>& info) {
  std::string name(amp::mode_name(info.param));
  std::erase(name, '-');
  return name;
}

// n token ids in [0, vocab), value i a function of (seed, i) alone.
inline std::vector<std::int32_t> random_tokens(std::size_t n, int vocab, std::uint64_t seed) {
  std::vector<std::int32_t> tokens(n);
  for (std::size_t i = 0; i < n; ++i) tokens[i] = static_cast<std::int32_t>(mix64(seed, i) % vocab);
  return tokens;
}

// n values uniform in [lo, hi), never all zero.
inline std::vector<double> random_values(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double unit = static_cast<double>(mix64(seed, i) >> 11) * 0x1.0p-53;
    v[i] = lo + (hi - lo) * unit;
  }
  return v;
}

// d loss / d x[i] by central differences; x[i] is restored.
inline double central_difference(double* x, std::size_t i, const std::function<double()>& loss, double h = 1e-5) {
  const double saved = x[i];
  x[i] = saved + h;
  const double up = loss();
  x[i] = saved - h;
  const double down = loss();
  x[i] = saved;
  return (up - down) / (2 * h);
}

// Every element of `analytic` against the central difference of loss() in x.
inline void expect_gradient(std::vector<double>& x, const std::vector<double>& analytic,
                            const std::function<double()>& loss, double tolerance = 1e-7) {
  ASSERT_EQ(x.size(), analytic.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double numeric = central_difference(x.data(), i, loss);
    EXPECT_NEAR(analytic[i], numeric, tolerance * std::max(1.0, std::abs(numeric))) << "element " << i;
  }
}

// sum_i w_i out_i: a scalar whose gradient in out is w.
inline double weighted_sum(const std::vector<double>& out, const std::vector<double>& w) {
  double sum = 0;
  for (std::size_t i = 0; i < out.size(); ++i) sum += out[i] * w[i];
  return sum;
}

}  // namespace mpbench::workloads::testing
