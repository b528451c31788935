#pragma once
// The TransformerOps implementation for the backend a run chose: CUDA ops on a GPU, oneDNN ops on
// the CPU.
#include <memory>

#include "core/backend.hpp"
#include "workloads/ops.hpp"

namespace mpbench::cli {

std::unique_ptr<workloads::TransformerOps<float>> make_transformer_ops(const Backend& backend);

}  // namespace mpbench::cli
