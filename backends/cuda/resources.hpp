#pragma once
// Owners of CUDA resources, so that whatever a half-finished constructor made is released. The
// deleters cannot throw; a failure is dropped from the runtime's last error, where it would
// otherwise be blamed on the next kernel launch.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <type_traits>

namespace mpbench::cuda {

struct DeviceFree {
  void operator()(void* memory) const noexcept {
    if (cudaFree(memory) != cudaSuccess) cudaGetLastError();
  }
};
struct PinnedFree {
  void operator()(void* memory) const noexcept {
    if (cudaFreeHost(memory) != cudaSuccess) cudaGetLastError();
  }
};
struct StreamDestroy {
  void operator()(cudaStream_t stream) const noexcept {
    if (cudaStreamDestroy(stream) != cudaSuccess) cudaGetLastError();
  }
};
struct EventDestroy {
  void operator()(cudaEvent_t event) const noexcept {
    if (cudaEventDestroy(event) != cudaSuccess) cudaGetLastError();
  }
};
struct LtHandleDestroy {
  void operator()(cublasLtHandle_t handle) const noexcept { cublasLtDestroy(handle); }
};

using DeviceMemory = std::unique_ptr<void, DeviceFree>;
using PinnedMemory = std::unique_ptr<void, PinnedFree>;
using StreamOwner = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroy>;
using EventOwner = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDestroy>;
using LtHandleOwner = std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, LtHandleDestroy>;

}  // namespace mpbench::cuda
