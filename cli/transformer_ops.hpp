#pragma once
// The TransformerOps implementation for the backend a run chose: CUDA ops on a GPU, set to the
// Tensor Core policy; oneDNN ops on the CPU, which take only TensorCorePolicy::on (UsageError).
#include <memory>

#include "core/backend.hpp"
#include "workloads/ops.hpp"

namespace mpbench::cli {

std::unique_ptr<workloads::TransformerOps<float>> make_transformer_ops(const Backend& backend,
                                                                      workloads::TensorCorePolicy tensor_cores);

}  // namespace mpbench::cli
