#pragma once
// GEMMs through cuBLASLt: descriptors built and the heuristic asked once per prepared op.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "core/backend.hpp"

namespace mpbench::cuda {

// What all GEMMs of one backend share.
struct GemmContext {
  int device = 0;
  cublasLtHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  const float* unit_scale = nullptr;  // 1.0f on the device: the fp8 A and B scales
};

// cuBLASLt's recommended workspace: 32 MiB on Hopper and newer, 4 MiB before.
std::size_t cublaslt_workspace_bytes(int compute_capability_major);

// Throws UsageError for buffers that do not match the precision or the shape, and for fp8 shapes
// that are not multiples of 16; BackendError when cuBLASLt has no algorithm for the problem.
std::unique_ptr<PreparedOp> make_cublaslt_gemm(const GemmContext& context, GemmPrecision precision,
                                               const GemmShape& shape, const DeviceBuffer& a,
                                               const DeviceBuffer& b, DeviceBuffer& c);

}  // namespace mpbench::cuda
