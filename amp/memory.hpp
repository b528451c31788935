#pragma once
// Bytes per parameter of the model state (weights, master copy, gradients, optimizer moments) for
// each precision mode. Mixed precision saves activation memory and GEMM time, not model-state
// memory: fp32 AdamW and fp16/bf16 with fp32 master weights both need 16 bytes per parameter
// (ZeRO paper, section 3.1). The workload reports this next to the measured peak memory.
#include <cstdint>
#include <optional>
#include <string_view>

#include "amp/policy.hpp"

namespace mpbench::amp {

enum class OptimizerKind { adamw, sgd_momentum, sgd };

struct ParameterBytes {
  double weights = 0;          // the weights the forward pass reads, kept across steps
  double working_copy = 0;     // low-precision copy made each step (autocast cast cache, fp8 weights)
  double master = 0;           // separate fp32 master copy
  double gradients = 0;
  double optimizer_state = 0;  // AdamW: fp32 first and second moments

  double persistent() const { return weights + master + gradients + optimizer_state; }
  double peak() const { return persistent() + working_copy; }
};

// The general bookkeeping: weights and gradients in the given types, an optional fp32 master copy,
// an optional per-step working copy, fp32 optimizer moments.
ParameterBytes parameter_bytes(Format weights, Format gradients, bool fp32_master,
                               OptimizerKind optimizer, std::optional<Format> working_copy = std::nullopt);

// What each mode keeps, as the policy table describes it.
ParameterBytes parameter_bytes(Mode mode, OptimizerKind optimizer = OptimizerKind::adamw);

// fp8-delayed's scaling state, as Transformer Engine keeps it for each scaled tensor (every
// operand of every fp8 GEMM: input, weight, output gradient): an fp32 amax history of
// `history_length` steps, the scale and its inverse. Per tensor, not per parameter: a fixed term
// beside the per-parameter bytes (about 0.6 MB for GPT-2 124M's 147 tensors at 1024 steps).
uint64_t delayed_scaling_bytes(uint64_t scaled_tensors, int history_length);

struct ModelStateMemory {
  uint64_t parameters;
  ParameterBytes per_parameter;
  uint64_t scaling_state_bytes = 0;  // fp8-delayed's amax histories and scales (delayed_scaling_bytes)
  uint64_t persistent_bytes() const {
    return uint64_t(double(parameters) * per_parameter.persistent()) + scaling_state_bytes;
  }
  uint64_t peak_bytes() const { return uint64_t(double(parameters) * per_parameter.peak()) + scaling_state_bytes; }
};

ModelStateMemory model_state_memory(Mode mode, uint64_t parameters, OptimizerKind optimizer = OptimizerKind::adamw,
                                    uint64_t scaling_state_bytes = 0);

std::string_view optimizer_name(OptimizerKind optimizer);

}  // namespace mpbench::amp
