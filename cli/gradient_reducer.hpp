#pragma once
// Data parallelism's gradient all-reduce on the run's backend and communicator: fp32 gradients
// summed as they are, or cast to bf16 or fp16 on the device first and back after (Megatron's
// --grad-reduce-in-bf16, PyTorch DDP's compression hooks).
#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/communicator.hpp"
#include "workloads/trainer.hpp"

namespace mpbench::cli {

// The dtype of --grad-reduce: fp32, bf16 or fp16; UsageError otherwise.
DType grad_reduce_dtype(const std::string& name);
// `dtype`: as grad_reduce_dtype takes it.
std::unique_ptr<workloads::GradientReducer> make_gradient_reducer(Backend& backend, Communicator& communicator,
                                                                  ProcessGroup& group, const std::string& dtype);

}  // namespace mpbench::cli
