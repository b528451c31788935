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

TEST(Memory, ModelTotals) {
  const ModelStateMemory gpt2 = model_state_memory(Mode::amp_fp16, 124'439'808);
  EXPECT_EQ(gpt2.persistent_bytes(), 124'439'808ull * 16);
  EXPECT_EQ(gpt2.peak_bytes(), 124'439'808ull * 18);
  EXPECT_EQ(optimizer_name(OptimizerKind::adamw), "adamw");
}

}  // namespace
