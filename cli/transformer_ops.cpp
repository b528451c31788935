#include "cli/transformer_ops.hpp"

#include <fmt/format.h>

#include "backends/cpu/cpu_backend.hpp"
#include "core/error.hpp"

#include "workloads/cpu/cpu_ops.hpp"
#if MPBENCH_HAVE_CUDA
#include "backends/cuda/cuda_backend.hpp"
#include "workloads/cuda/cuda_ops.hpp"
#endif

namespace mpbench::cli {

std::unique_ptr<workloads::TransformerOps<float>> make_transformer_ops(const Backend& backend,
                                                                      workloads::TensorCorePolicy tensor_cores) {
#if MPBENCH_HAVE_CUDA
  // On the backend's own device context: the suites and the Transformer share its stream and workspace.
  if (const auto* gpu = dynamic_cast<const cuda::CudaBackend*>(&backend)) {
    auto ops = std::make_unique<workloads::CudaTransformerOps>(gpu->device_context());
    ops->set_tensor_core_policy(tensor_cores);
    return ops;
  }
#endif
  if (tensor_cores != workloads::TensorCorePolicy::on)
    throw UsageError("Tensor Cores are a GPU feature: use --cpu-isa for the CPU counterfactual");
  const auto* cpu = dynamic_cast<const cpu::CpuBackend*>(&backend);
  if (cpu == nullptr) throw UsageError(fmt::format("the Transformer runs on a CPU or CUDA backend, not on {}", backend.device().backend));
  return std::make_unique<workloads::CpuTransformerOps>(cpu->device_layer());
}

}  // namespace mpbench::cli
