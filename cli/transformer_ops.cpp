#include "cli/transformer_ops.hpp"

#include "workloads/cpu/cpu_ops.hpp"
#if MPBENCH_HAVE_CUDA
#include "workloads/cuda/cuda_ops.hpp"
#endif

namespace mpbench::cli {

std::unique_ptr<workloads::TransformerOps<float>> make_transformer_ops(const Backend& backend) {
#if MPBENCH_HAVE_CUDA
  if (backend.device().backend == "cuda") return std::make_unique<workloads::CudaTransformerOps>(backend.device().index);
#endif
  return std::make_unique<workloads::CpuTransformerOps>();
}

}  // namespace mpbench::cli
