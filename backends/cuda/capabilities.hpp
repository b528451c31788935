#pragma once
// The GPU's capability table: which GEMM precisions cuBLASLt runs on its Tensor Cores (or, for
// fp32, on its CUDA cores), from its compute capability alone, so that it is known (and tested)
// without a GPU. Every row is native or unsupported: a GPU has no converted path.
#include "core/backend.hpp"
#include "core/capability.hpp"

namespace mpbench::cuda {

CapabilityTable gpu_capabilities(const DeviceInfo& gpu);

}  // namespace mpbench::cuda
