#include "backends/cuda/check.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace mpbench::cuda {

void check(cudaError_t status, std::string_view call) {
  if (status == cudaSuccess) return;
  // Reset the runtime's last error, or the next launch check would report this failure again.
  cudaGetLastError();
  throw BackendError(fmt::format("{} failed: {} ({})", call, cudaGetErrorString(status),
                                 cudaGetErrorName(status)));
}

void check(cublasStatus_t status, std::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw BackendError(fmt::format("{} failed: {} ({})", call, cublasLtGetStatusString(status),
                                 cublasLtGetStatusName(status)));
}

// The message is formatted only on failure: this runs after every launch of a training step.
void check_launch(std::string_view kernel) {
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess)
    check(status, fmt::format("launch of kernel {}", kernel));
}

}  // namespace mpbench::cuda
