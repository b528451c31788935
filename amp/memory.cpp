#include "amp/memory.hpp"

#include "amp/block_scaling.hpp"

namespace mpbench::amp {
namespace {

double moments_bytes(OptimizerKind optimizer) {
  switch (optimizer) {
    case OptimizerKind::adamw: return 8;         // m and v in fp32
    case OptimizerKind::sgd_momentum: return 4;  // one fp32 momentum buffer
    case OptimizerKind::sgd: return 0;
  }
  return 0;
}

}  // namespace

ParameterBytes parameter_bytes(Format weights, Format gradients, bool fp32_master, OptimizerKind optimizer,
                               std::optional<Format> working_copy) {
  ParameterBytes bytes;
  bytes.weights = double(storage_bytes(weights));
  bytes.working_copy = working_copy ? double(storage_bytes(*working_copy)) : 0.0;
  bytes.master = fp32_master ? 4.0 : 0.0;
  bytes.gradients = double(storage_bytes(gradients));
  bytes.optimizer_state = moments_bytes(optimizer);
  return bytes;
}

ParameterBytes parameter_bytes(Mode mode, OptimizerKind optimizer) {
  switch (mode) {
    case Mode::fp32:
    case Mode::tf32: return parameter_bytes(Format::fp32, Format::fp32, false, optimizer);
    // Autocast: the fp32 weights are the master copy; the fp16/bf16 copies are the per-step cast
    // cache, and the cast's backward hands the fp32 weights fp32 gradients.
    case Mode::amp_fp16: return parameter_bytes(Format::fp32, Format::fp32, false, optimizer, Format::fp16);
    case Mode::amp_bf16: return parameter_bytes(Format::fp32, Format::fp32, false, optimizer, Format::bf16);
    case Mode::bf16: return parameter_bytes(Format::bf16, Format::bf16, true, optimizer);
    case Mode::fp8:
    case Mode::fp8_current: return parameter_bytes(Format::bf16, Format::bf16, true, optimizer, Format::e4m3);
    case Mode::mxfp8: {
      // The e4m3 weight copy and its e8m0 scales: one byte for each block of 32 elements.
      ParameterBytes bytes = parameter_bytes(Format::bf16, Format::bf16, true, optimizer, Format::e4m3);
      bytes.working_copy += 1.0 / kMxBlockSize;
      return bytes;
    }
  }
  return {};
}

uint64_t delayed_scaling_bytes(uint64_t scaled_tensors, int history_length) {
  return scaled_tensors * (uint64_t(history_length) + 2) * sizeof(float);
}

ModelStateMemory model_state_memory(Mode mode, uint64_t parameters, OptimizerKind optimizer,
                                    uint64_t scaling_state_bytes) {
  return ModelStateMemory{parameters, parameter_bytes(mode, optimizer), scaling_state_bytes};
}

std::string_view optimizer_name(OptimizerKind optimizer) {
  switch (optimizer) {
    case OptimizerKind::adamw: return "adamw";
    case OptimizerKind::sgd_momentum: return "sgd-momentum";
    case OptimizerKind::sgd: return "sgd";
  }
  return "?";
}

}  // namespace mpbench::amp
