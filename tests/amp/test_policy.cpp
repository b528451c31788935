#include "amp/policy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace mpbench::amp;
using mpbench::num::Format;

TEST(Policy, EveryModeHasEveryOpInOrder) {
  ASSERT_EQ(all_policies().size(), 8u);
  for (const ModePolicy& p : all_policies()) {
    for (std::size_t i = 0; i < kOpCategoryCount; ++i) {
      EXPECT_EQ(static_cast<std::size_t>(p.ops[i].op), i) << p.name << " slot " << i;
      EXPECT_FALSE(p.ops[i].note.empty()) << p.name << " " << op_name(p.ops[i].op);
    }
    EXPECT_EQ(parse_mode(p.name), p.mode);
    EXPECT_EQ(mode_name(p.mode), p.name);
  }
}

TEST(Policy, AmpFp16FollowsAutocastLists) {
  const ModePolicy& p = policy(Mode::amp_fp16);
  EXPECT_EQ(p.op(OpCategory::matmul).rule, CastRule::lower_precision);
  EXPECT_EQ(p.op(OpCategory::matmul).input, Format::fp16);
  EXPECT_EQ(p.op(OpCategory::matmul).compute, Format::fp32);
  EXPECT_EQ(p.op(OpCategory::matmul).output, Format::fp16);
  EXPECT_EQ(p.op(OpCategory::attention).rule, CastRule::lower_precision);
  EXPECT_EQ(p.op(OpCategory::layernorm).rule, CastRule::fp32);
  EXPECT_EQ(p.op(OpCategory::exp_log).rule, CastRule::fp32);
  for (OpCategory op : {OpCategory::softmax, OpCategory::cross_entropy, OpCategory::reduction, OpCategory::norm}) {
    EXPECT_EQ(p.op(op).rule, CastRule::fp32_in_kernel) << op_name(op);
    EXPECT_EQ(p.op(op).output, Format::fp32) << op_name(op);
  }
  EXPECT_EQ(p.op(OpCategory::add_concat).rule, CastRule::promote);
  EXPECT_EQ(p.op(OpCategory::gelu).rule, CastRule::input_dtype);
  EXPECT_EQ(p.op(OpCategory::gelu).output, Format::fp16);
  EXPECT_EQ(p.op(OpCategory::optimizer).compute, Format::fp32);
  EXPECT_EQ(p.loss_scaling, LossScaling::dynamic);
  EXPECT_TRUE(p.master_weights);
}

TEST(Policy, AmpBf16UsesTheSameListsWithBf16) {
  const ModePolicy& fp16 = policy(Mode::amp_fp16);
  const ModePolicy& bf16 = policy(Mode::amp_bf16);
  for (std::size_t i = 0; i < kOpCategoryCount; ++i) {
    EXPECT_EQ(fp16.ops[i].rule, bf16.ops[i].rule) << op_name(fp16.ops[i].op);
    const auto swap = [](Format f) { return f == Format::fp16 ? Format::bf16 : f; };
    EXPECT_EQ(swap(fp16.ops[i].input), bf16.ops[i].input);
    EXPECT_EQ(swap(fp16.ops[i].output), bf16.ops[i].output);
  }
  EXPECT_EQ(bf16.loss_scaling, LossScaling::none);
}

TEST(Policy, Fp32AndTf32DifferOnlyInGemmMath) {
  const ModePolicy& fp32 = policy(Mode::fp32);
  const ModePolicy& tf32 = policy(Mode::tf32);
  for (std::size_t i = 0; i < kOpCategoryCount; ++i) {
    EXPECT_EQ(fp32.ops[i].rule, CastRule::input_dtype);
    EXPECT_EQ(fp32.ops[i].input, Format::fp32);
    EXPECT_EQ(fp32.ops[i].output, Format::fp32);
    EXPECT_EQ(fp32.ops[i].compute, Format::fp32);
    const bool gemm = fp32.ops[i].op == OpCategory::matmul || fp32.ops[i].op == OpCategory::attention;
    EXPECT_EQ(tf32.ops[i].compute, gemm ? Format::tf32 : Format::fp32) << op_name(tf32.ops[i].op);
  }
  EXPECT_FALSE(fp32.master_weights);
}

TEST(Policy, Bf16AndFp8Storage) {
  const ModePolicy& bf16 = policy(Mode::bf16);
  EXPECT_EQ(bf16.weight_storage, Format::bf16);
  EXPECT_EQ(bf16.op(OpCategory::layernorm).input, Format::bf16);
  EXPECT_EQ(bf16.op(OpCategory::layernorm).compute, Format::fp32);
  EXPECT_EQ(bf16.op(OpCategory::layernorm).output, Format::bf16);
  EXPECT_EQ(bf16.op(OpCategory::cross_entropy).output, Format::fp32);
  const ModePolicy& fp8 = policy(Mode::fp8);
  EXPECT_EQ(fp8.op(OpCategory::matmul).rule, CastRule::fp8_scaled);
  EXPECT_EQ(fp8.op(OpCategory::matmul).input, Format::e4m3);
  EXPECT_EQ(fp8.op(OpCategory::matmul).output, Format::bf16);
  EXPECT_EQ(fp8.op(OpCategory::attention).input, Format::bf16);
  const ModePolicy& current = policy(Mode::fp8_current);
  EXPECT_EQ(current.op(OpCategory::matmul).rule, CastRule::fp8_scaled);
  EXPECT_EQ(current.weight_storage, Format::bf16);
  EXPECT_TRUE(current.master_weights);
}

TEST(Policy, ParsesModes) {
  EXPECT_EQ(parse_mode("AMP-FP16"), Mode::amp_fp16);
  EXPECT_EQ(parse_mode("bf16"), Mode::bf16);
  EXPECT_FALSE(parse_mode("fp16").has_value());
  EXPECT_EQ(mode_names(), "fp32, tf32, amp-fp16, amp-bf16, bf16, fp8-delayed, fp8-current, mxfp8");
  EXPECT_EQ(parse_mode("fp8"), Mode::fp8) << "fp8 stays a name of fp8-delayed";
  EXPECT_EQ(parse_mode("FP8-Current"), Mode::fp8_current);
}

TEST(Policy, PromoteResolvesToWidestInput) {
  const ModePolicy& p = policy(Mode::amp_fp16);
  const auto resolve = [&](std::vector<Format> in) { return resolve_input_dtype(p, OpCategory::add_concat, in); };
  EXPECT_EQ(resolve({Format::fp16, Format::fp32}), Format::fp32);
  EXPECT_EQ(resolve({Format::fp16, Format::fp16}), Format::fp16);
  EXPECT_EQ(resolve({Format::fp16, Format::bf16}), Format::fp32);  // torch.promote_types(half, bfloat16)
  EXPECT_EQ(resolve({Format::e4m3, Format::bf16}), Format::bf16);
  const std::vector<Format> fp32_in = {Format::fp32};
  EXPECT_EQ(resolve_input_dtype(p, OpCategory::matmul, fp32_in), Format::fp16);
  EXPECT_EQ(resolve_input_dtype(p, OpCategory::layernorm, std::vector<Format>{Format::fp16}), Format::fp32);
}

TEST(CastCounter, LinearUnderAutocastCastsActivationAndWeightOnce) {
  CastCounter counter(policy(Mode::amp_fp16));
  const uint64_t tokens = 1024, d = 768;
  const TensorArg activation{Format::fp32, tokens * d};
  const TensorArg weight{Format::fp32, d * 3 * d, /*parameter_id=*/7};
  const TensorArg linear_inputs[] = {activation, weight};
  const CastCount first = counter.add_op(OpCategory::matmul, linear_inputs);
  EXPECT_EQ(first.casts, 2u);
  EXPECT_EQ(first.bytes_read, (tokens * d + d * 3 * d) * 4);
  EXPECT_EQ(first.bytes_written, (tokens * d + d * 3 * d) * 2);
  // The same weight again (e.g. the next micro-batch's forward): cached, only the activation.
  const CastCount second = counter.add_op(OpCategory::matmul, linear_inputs);
  EXPECT_EQ(second.casts, 1u);
  EXPECT_EQ(second.bytes(), tokens * d * 6);
  EXPECT_EQ(counter.forward().casts, 3u);
  EXPECT_EQ(counter.backward().casts, 3u);
  EXPECT_EQ(counter.backward().bytes_read, counter.forward().bytes_written);
  EXPECT_EQ(counter.step().bytes(), 2 * counter.forward().bytes());
  EXPECT_EQ(counter.forward_by_op(OpCategory::matmul).casts, 3u);
  counter.new_step();
  EXPECT_EQ(counter.forward().casts, 0u);
  EXPECT_EQ(counter.add_op(OpCategory::matmul, linear_inputs).casts, 2u);
}

TEST(CastCounter, OtherRules) {
  CastCounter counter(policy(Mode::amp_fp16));
  const TensorArg half_act[] = {{Format::fp16, 5000}};
  EXPECT_EQ(counter.add_op(OpCategory::layernorm, half_act).casts, 1u);  // fp32 list: cast kernel
  EXPECT_EQ(counter.add_op(OpCategory::softmax, half_act).casts, 0u);    // dtype=float32 in kernel
  EXPECT_EQ(counter.add_op(OpCategory::gelu, half_act).casts, 0u);
  const TensorArg residual[] = {{Format::fp32, 5000}, {Format::fp16, 5000}};
  const CastCount add = counter.add_op(OpCategory::add_concat, residual);
  EXPECT_EQ(add.casts, 1u);
  EXPECT_EQ(add.bytes_read, 10000u);
  EXPECT_EQ(add.bytes_written, 20000u);
  EXPECT_EQ(counter.forward_by_op(OpCategory::layernorm).bytes(), 5000u * 6);
}

TEST(CastCounter, Fp32AndTf32LaunchNoCasts) {
  for (Mode mode : {Mode::fp32, Mode::tf32}) {
    CastCounter counter(policy(mode));
    const TensorArg inputs[] = {{Format::fp32, 1000}, {Format::fp32, 4000, 1}};
    for (std::size_t i = 0; i < kOpCategoryCount; ++i) counter.add_op(static_cast<OpCategory>(i), inputs);
    EXPECT_EQ(counter.step().casts, 0u) << mode_name(mode);
  }
}

TEST(CastCounter, Fp8QuantizesGemmInputsOnly) {
  CastCounter counter(policy(Mode::fp8));
  const TensorArg inputs[] = {{Format::bf16, 2048}, {Format::bf16, 4096, 3}};
  const CastCount gemm = counter.add_op(OpCategory::matmul, inputs);
  EXPECT_EQ(gemm.casts, 2u);
  EXPECT_EQ(gemm.bytes_read, (2048u + 4096u) * 2);
  EXPECT_EQ(gemm.bytes_written, 2048u + 4096u);
  const TensorArg already_fp8[] = {{Format::e5m2, 2048}};
  EXPECT_EQ(counter.add_op(OpCategory::matmul, already_fp8).casts, 0u);
  EXPECT_EQ(counter.add_op(OpCategory::layernorm, inputs).casts, 0u);
}

}  // namespace
