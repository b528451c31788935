#include <stdexcept>
#include <string>

#include "amp/loss_scaler.hpp"
#include "amp/loss_scaler_cuda.hpp"
#include "amp/multi_tensor_plan.hpp"
#include "core/error.hpp"

namespace mpbench::amp::cuda {
namespace {

// One launch covers up to kMaxTensors tensors and kMaxBlocks chunks of kChunk elements; the
// metadata travels as a kernel parameter (about 2.2 KB, under the 4 KB limit), as in PyTorch's
// multi_tensor_apply.
constexpr int kMaxTensors = 36;
constexpr int kMaxBlocks = 320;
constexpr int64_t kChunk = 65536;
constexpr int kThreads = 512;

struct TensorListMeta {
  float* ptrs[kMaxTensors];
  int64_t sizes[kMaxTensors];
  unsigned char block_tensor[kMaxBlocks];
  int32_t block_chunk[kMaxBlocks];
};

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // clears a non-sticky error, so that a later launch check does not report it again
    throw BackendError(std::string(call) + " failed: " + cudaGetErrorString(status));
  }
}

__global__ void unscale_kernel(TensorListMeta meta, ScalerState* state) {
  const int tensor = meta.block_tensor[blockIdx.x];
  float* data = meta.ptrs[tensor];
  const int64_t begin = int64_t(meta.block_chunk[blockIdx.x]) * kChunk;
  const int64_t end = min(begin + kChunk, meta.sizes[tensor]);
  const float inv = inverse_scale(state->scale);
  int32_t found = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    data[i] = unscale_element(data[i], inv, found);
  }
  // Every writer stores the same 1, so the race is harmless and needs no atomic.
  if (found) state->found_inf = 1;
}

__global__ void update_kernel(ScalerState* state, ScalerConfig config) { update_scale(*state, config); }

}  // namespace

DeviceLossScaler::DeviceLossScaler(ScalerConfig config, void* state, cudaStream_t stream)
    : config_(config), stream_(stream), state_(static_cast<ScalerState*>(state)) {
  check_scaler_config(config);
  if (state_ == nullptr) throw std::invalid_argument("DeviceLossScaler: no device memory for the state");
  const ScalerState initial = initial_scaler_state(config);
  // On the scaler's stream, and waited for: `initial` is a stack variable, and a plain cudaMemcpy
  // may return before its DMA lands, unordered with a non-blocking stream's kernels.
  check(cudaMemcpyAsync(state_, &initial, sizeof initial, cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync(loss scaler state)");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(loss scaler state)");
}

void DeviceLossScaler::unscale(std::span<float* const> grads, std::span<const int64_t> sizes) {
  if (grads.size() != sizes.size()) throw std::invalid_argument("unscale: one size per gradient tensor");
  for (const Launch& launch : plan_launches(sizes, kMaxTensors, kMaxBlocks, kChunk)) {
    TensorListMeta meta{};
    for (std::size_t slot = 0; slot < launch.tensors.size(); ++slot) {
      meta.ptrs[slot] = grads[launch.tensors[slot]];
      meta.sizes[slot] = sizes[launch.tensors[slot]];
    }
    for (std::size_t b = 0; b < launch.blocks.size(); ++b) {
      meta.block_tensor[b] = static_cast<unsigned char>(launch.blocks[b].tensor_slot);
      meta.block_chunk[b] = launch.blocks[b].chunk;
    }
    unscale_kernel<<<int(launch.blocks.size()), kThreads, 0, stream_>>>(meta, state_);
    check(cudaGetLastError(), "unscale_kernel launch");
  }
}

void DeviceLossScaler::update() {
  update_kernel<<<1, 1, 0, stream_>>>(state_, config_);
  check(cudaGetLastError(), "update_kernel launch");
}

ScalerState DeviceLossScaler::read_state() const {
  ScalerState host{};
  check(cudaMemcpyAsync(&host, state_, sizeof host, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync(scaler state)");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  return host;
}

}  // namespace mpbench::amp::cuda
