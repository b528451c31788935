#pragma once
// GradScaler on the GPU: the state (scale, growth tracker, found_inf) lives in device memory, the
// fused unscale kernel sets found_inf there and the update runs as a one-thread kernel, so a step
// needs no host synchronisation. A fused optimizer reads found_inf from device_state() to skip.
// The state's memory is the caller's, allocated through its device context, so that it counts
// among the run's memory and running out of it is reported like any other allocation.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "amp/loss_scaler_math.hpp"

namespace mpbench::amp::cuda {

class DeviceLossScaler {
 public:
  // Device memory the state needs (`state` below).
  static constexpr std::size_t kStateBytes = sizeof(ScalerState);

  // Checks `config` (std::invalid_argument, before any CUDA call), then writes the initial state to
  // `state`: kStateBytes of device memory on the GPU `stream` runs on, allocated by the caller
  // through its device context (cuda::CudaDevice::allocate, or the Transformer ops' OpsMemory) and
  // kept alive for as long as the scaler.
  DeviceLossScaler(ScalerConfig config, void* state, cudaStream_t stream);
  DeviceLossScaler(const DeviceLossScaler&) = delete;
  DeviceLossScaler& operator=(const DeviceLossScaler&) = delete;

  // Enqueues one fused pass over all the fp32 gradient tensors (device pointers, element counts):
  // multiply by 1/scale, set found_inf on any inf/NaN. Tensors are packed into few launches.
  void unscale(std::span<float* const> grads, std::span<const int64_t> sizes);

  // Enqueues the scale update (GradScaler's rule); it also clears found_inf for the next step.
  void update();

  ScalerState* device_state() { return state_; }
  const ScalerConfig& config() const { return config_; }

  // Copies the state to the host; waits for the stream. For reporting, not for every step.
  ScalerState read_state() const;

 private:
  ScalerConfig config_;
  cudaStream_t stream_;
  ScalerState* state_ = nullptr;
};

}  // namespace mpbench::amp::cuda
