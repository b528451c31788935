// The CUDA loss scaler against the CPU one, bit for bit: same gradients after unscale, same state
// after the update. Needs a GPU; skips with the reason when none is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "amp/loss_scaler.hpp"
#include "amp/loss_scaler_cuda.hpp"
#include "backends/cuda/cuda_device.hpp"

namespace {

using mpbench::amp::LossScaler;
using mpbench::amp::ScalerConfig;
using mpbench::amp::ScalerState;
using mpbench::amp::cuda::DeviceLossScaler;

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

// The scaler's state and the gradients come from the device context's allocator, as a run's do.
class DeviceLossScalerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto reason = mpbench::cuda::unavailable_reason()) GTEST_SKIP() << "needs a GPU: " << *reason;
    device_ = mpbench::cuda::make_device(0);
  }

  // Uploads host tensors; returns device pointers in the same order.
  std::vector<float*> upload(const std::vector<std::vector<float>>& host) {
    std::vector<float*> ptrs;
    for (const auto& t : host) {
      const std::size_t bytes = std::max<std::size_t>(1, t.size()) * sizeof(float);
      memory_.push_back(device_->allocate(bytes, "a test gradient", "free memory on the GPU"));
      auto* p = static_cast<float*>(memory_.back().get());
      EXPECT_EQ(cudaMemcpy(p, t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      ptrs.push_back(p);
    }
    return ptrs;
  }

  std::shared_ptr<mpbench::cuda::CudaDevice> device_;
  std::vector<mpbench::cuda::DeviceMemory> memory_;
};

void expect_same_state(const ScalerState& cpu, const ScalerState& gpu, int step) {
  EXPECT_EQ(cpu.scale, gpu.scale) << "step " << step;
  EXPECT_EQ(cpu.growth_tracker, gpu.growth_tracker) << "step " << step;
  EXPECT_EQ(cpu.found_inf, gpu.found_inf) << "step " << step;
  EXPECT_EQ(cpu.steps, gpu.steps) << "step " << step;
  EXPECT_EQ(cpu.skipped_steps, gpu.skipped_steps) << "step " << step;
}

TEST_F(DeviceLossScalerTest, MatchesCpuScalerOverSteps) {
  std::mt19937 rng(51);
  std::normal_distribution<float> normal(0.0f, 3000.0f);
  // Sizes that straddle the 65536-element chunks and the 36-tensor, 320-block launch limits.
  std::vector<int64_t> sizes = {1, 65535, 65536, 65537, 0, 3'000'001, 17};
  for (int i = 0; i < 60; ++i) sizes.push_back(int64_t(rng() % 9000));
  ScalerConfig config;
  config.growth_interval = 2;
  LossScaler cpu(config);
  const mpbench::cuda::DeviceMemory state =
      device_->allocate(DeviceLossScaler::kStateBytes, "the loss scaler state", "free memory on the GPU");
  DeviceLossScaler gpu(config, state.get(), device_->stream());
  // Every kind of overflow the unscale must see: +inf, NaN and -inf, each followed by a clean step.
  constexpr float inf = std::numeric_limits<float>::infinity();
  const std::optional<float> overflow_at[] = {std::nullopt, inf, std::nullopt, std::numeric_limits<float>::quiet_NaN(),
                                              std::nullopt, -inf, std::nullopt, std::nullopt};
  for (int step = 0; step < 8; ++step) {
    std::vector<std::vector<float>> host;
    for (int64_t n : sizes) {
      std::vector<float> t(static_cast<std::size_t>(n));
      for (float& x : t) x = normal(rng);
      host.push_back(std::move(t));
    }
    if (overflow_at[step]) host[5][2'999'999] = *overflow_at[step];
    const std::vector<float*> ptrs = upload(host);
    gpu.unscale(ptrs, sizes);
    std::vector<std::span<float>> spans(host.begin(), host.end());
    cpu.unscale(spans);
    const ScalerState after_unscale = gpu.read_state();
    expect_same_state(cpu.state(), after_unscale, step);
    for (std::size_t t = 0; t < host.size(); ++t) {
      std::vector<float> back(host[t].size());
      ASSERT_CUDA(cudaMemcpy(back.data(), ptrs[t], back.size() * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < back.size(); ++i) {
        if (std::isnan(host[t][i])) continue;
        ASSERT_EQ(back[i], host[t][i]) << "tensor " << t << " element " << i << " step " << step;
      }
    }
    gpu.update();
    cpu.update();
    expect_same_state(cpu.state(), gpu.read_state(), step);
  }
  // Three back-offs from 65536 to 8192, then one growth after the last two clean steps.
  EXPECT_EQ(gpu.read_state().skipped_steps, 3);
  EXPECT_EQ(gpu.read_state().scale, 16384.0f);
}

TEST(DeviceLossScalerConfig, RefusesWhatTheCpuScalerRefuses) {
  // Checked before any CUDA call, so this runs without a GPU.
  ScalerConfig no_growth;
  no_growth.growth_interval = 0;
  EXPECT_THROW((DeviceLossScaler{no_growth, nullptr, nullptr}), std::invalid_argument);
  ScalerConfig no_backoff;
  no_backoff.backoff_factor = 1.0;
  EXPECT_THROW((DeviceLossScaler{no_backoff, nullptr, nullptr}), std::invalid_argument);
  ScalerConfig zero_scale;
  zero_scale.init_scale = 0.0f;
  EXPECT_THROW((DeviceLossScaler{zero_scale, nullptr, nullptr}), std::invalid_argument);
  EXPECT_THROW((DeviceLossScaler{ScalerConfig{}, nullptr, nullptr}), std::invalid_argument) << "no state memory";
}

}  // namespace
