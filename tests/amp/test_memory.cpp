#include "amp/memory.hpp"

#include <gtest/gtest.h>

namespace {

using namespace mpbench::amp;
using mpbench::num::Format;

TEST(Memory, ZeroPaperMixedPrecisionAdamIs16BytesPerParameter) {
  // fp16 weights 2 + fp16 grads 2 + fp32 master 4 + fp32 momentum 4 + fp32 variance 4.
  const ParameterBytes b = parameter_bytes(Format::fp16, Format::fp16, true, OptimizerKind::adamw);
  EXPECT_EQ(b.weights, 2);
  EXPECT_EQ(b.gradients, 2);
  EXPECT_EQ(b.master, 4);
  EXPECT_EQ(b.optimizer_state, 8);
  EXPECT_EQ(b.persistent(), 16);
}

TEST(Memory, PerMode) {
  EXPECT_EQ(parameter_bytes(Mode::fp32).persistent(), 16);
  EXPECT_EQ(parameter_bytes(Mode::tf32).peak(), 16);
  const ParameterBytes amp = parameter_bytes(Mode::amp_fp16);
  EXPECT_EQ(amp.persistent(), 16);
  EXPECT_EQ(amp.working_copy, 2);
  EXPECT_EQ(amp.peak(), 18);
  EXPECT_EQ(parameter_bytes(Mode::amp_bf16).peak(), 18);
  const ParameterBytes bf16 = parameter_bytes(Mode::bf16);
  EXPECT_EQ(bf16.master, 4);
  EXPECT_EQ(bf16.peak(), 16);
  EXPECT_EQ(parameter_bytes(Mode::fp8).peak(), 17);
  EXPECT_EQ(parameter_bytes(Mode::bf16, OptimizerKind::sgd).persistent(), 8);
  EXPECT_EQ(parameter_bytes(Mode::fp32, OptimizerKind::sgd_momentum).persistent(), 12);
}

TEST(Memory, Fp8ModesCountTheirWeightCopyScalesAndHistories) {
  EXPECT_EQ(parameter_bytes(Mode::fp8_current).working_copy, 1);
  EXPECT_EQ(parameter_bytes(Mode::mxfp8).working_copy, 1 + 1.0 / 32) << "e4m3 elements and an e8m0 scale per 32";
  // GPT-2 124M under fp8-delayed: 12 layers of four linear GEMMs and the LM head, three operands
  // each, a 1024-step fp32 history with a scale and its inverse.
  EXPECT_EQ(delayed_scaling_bytes(3 * (4 * 12 + 1), 1024), 147ull * 1026 * 4);
  const ModelStateMemory m = model_state_memory(Mode::fp8, 1000, OptimizerKind::adamw, 4104);
  EXPECT_EQ(m.persistent_bytes(), 16'000u + 4104u);
  EXPECT_EQ(m.peak_bytes(), 17'000u + 4104u);
}

TEST(Memory, ModelTotals) {
  const ModelStateMemory gpt2 = model_state_memory(Mode::amp_fp16, 124'439'808);
  EXPECT_EQ(gpt2.persistent_bytes(), 124'439'808ull * 16);
  EXPECT_EQ(gpt2.peak_bytes(), 124'439'808ull * 18);
  EXPECT_EQ(optimizer_name(OptimizerKind::adamw), "adamw");
}

}  // namespace
