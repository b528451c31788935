#pragma once
// GEMMs through cuBLASLt: descriptors built and the heuristic asked once per prepared op.
#include <memory>

#include "backends/cuda/cuda_device.hpp"
#include "core/backend.hpp"

namespace mpbench::cuda {

// Throws UsageError for buffers that do not match the precision or the shape, and for fp8 shapes
// that are not multiples of 16; BackendError when cuBLASLt has no algorithm for the problem.
// The GEMM runs on the device's stream with its cuBLASLt handle, workspace and fp8 unit scale.
std::unique_ptr<PreparedOp> make_cublaslt_gemm(std::shared_ptr<CudaDevice> device, GemmPrecision precision,
                                               const GemmShape& shape, const DeviceBuffer& a, const DeviceBuffer& b,
                                               DeviceBuffer& c);

}  // namespace mpbench::cuda
