// The precision modes on the reference ops: what each mode stores in low precision, dynamic loss
// scaling in amp-fp16 with fp16 activations, master weights in bf16, and the loss of every
// mode against fp32's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "amp/formats.hpp"
#include "core/error.hpp"
#include "tests/workloads/gradient_check.hpp"
#include "workloads/reference_ops.hpp"
#include "workloads/trainer.hpp"

namespace mpbench::workloads {
namespace {

TrainOptions tiny_options(int steps) {
  TrainOptions o;
  o.batch = 4;
  o.seq_len = 16;
  o.steps = steps;
  o.warmup_steps = 5;
  o.max_lr = 1e-2f;
  o.min_lr = 1e-3f;
  o.seed = testing::fresh_seed();
  return o;
}

bool is_bf16(float x) { return num::bf16_bits_to_f32(num::f32_to_bf16_bits(x)) == x; }

TEST(PrecisionModes, AmpFp16OverflowsAtTheInitialScaleSkipsAndBacksOff) {
  const GptConfig config = config_by_name("tiny");
  const MarkovChain chain = MarkovChain::random(config.vocab, 3, 11);
  MarkovTokenStream data(chain, 1);
  TrainOptions options = tiny_options(30);
  // apex's largest scale, 2^24: the tiny model's gradients are too small to overflow fp16 at
  // GradScaler's 2^16 (GPT-2's do, in the first steps), and 2^24 lets the test see several back-offs.
  options.scaler.init_scale = 16777216.0f;
  SCOPED_TRACE("seed " + std::to_string(options.seed));
  ReferenceOps<float> ops;
  Trainer trainer(config, options, ops, amp::Mode::amp_fp16);
  ASSERT_TRUE(trainer.loss_scaling());
  const std::vector<float> before = trainer.model().download_params();
  const StepRecord first = trainer.step(data);
  // 2^24 times a loss gradient of order 1/N pushes the weight gradients past fp16's 65504: the
  // fp16 GEMM outputs become inf and the step must be skipped.
  EXPECT_EQ(first.loss_scale, 16777216.0);
  EXPECT_TRUE(first.skipped);
  EXPECT_FALSE(std::isfinite(first.grad_norm));
  EXPECT_EQ(trainer.model().download_params(), before) << "a skipped step must leave the weights alone";
  EXPECT_EQ(trainer.scaler().scale, 8388608.0f);
  EXPECT_EQ(trainer.scaler().skipped_steps, 1);

  std::vector<StepRecord> curve{first};
  for (int s = 1; s < options.steps; ++s) curve.push_back(trainer.step(data));
  const auto first_finite = std::find_if(curve.begin(), curve.end(), [](const StepRecord& r) { return !r.skipped; });
  EXPECT_GT(first_finite - curve.begin(), 1);
  EXPECT_LE(first_finite - curve.begin(), 8) << "2^16 does not overflow the untrained model: at most 8 back-offs first";
  // Later steps may overflow again as the gradients grow in training, each one more back-off.
  const auto skipped = std::count_if(curve.begin(), curve.end(), [](const StepRecord& r) { return r.skipped; });
  EXPECT_LT(skipped, options.steps / 2);
  EXPECT_LT(curve.back().loss, curve.front().loss - 0.5) << "it trains once the scale fits";
  for (std::size_t i = 1; i < curve.size(); ++i) {
    const double expected = curve[i - 1].skipped ? curve[i - 1].loss_scale / 2 : curve[i - 1].loss_scale;
    EXPECT_EQ(curve[i].loss_scale, expected) << "step " << i;
  }
}

TEST(PrecisionModes, Bf16ModeKeepsBf16WeightsAndFp32Master) {
  const GptConfig config = config_by_name("tiny");
  const MarkovChain chain = MarkovChain::random(config.vocab, 3, 11);
  MarkovTokenStream data(chain, 2);
  ReferenceOps<float> ops;
  Trainer trainer(config, tiny_options(5), ops, amp::Mode::bf16);
  ASSERT_TRUE(trainer.has_master_copy());
  for (int s = 0; s < 3; ++s) trainer.step(data);
  const std::vector<float> working = trainer.model().download_params();
  const std::vector<float> grads = trainer.model().download_grads();
  std::vector<float> master(working.size());
  ops.copy_to_host(master.data(), trainer.master_params(), master.size() * sizeof(float));
  std::size_t master_not_bf16 = 0;
  for (std::size_t i = 0; i < working.size(); ++i) {
    ASSERT_TRUE(is_bf16(working[i])) << "weight " << i;
    ASSERT_TRUE(is_bf16(grads[i])) << "gradient " << i;
    ASSERT_EQ(working[i], num::bf16_bits_to_f32(num::f32_to_bf16_bits(master[i]))) << "weight " << i;
    master_not_bf16 += is_bf16(master[i]) ? 0 : 1;
  }
  // The master keeps the updates bf16 would round away.
  EXPECT_GT(master_not_bf16, working.size() / 2);
}

TEST(PrecisionModes, AmpBf16StoresGemmOutputsInBf16AndTheResidualInFp32) {
  const GptConfig config = config_by_name("tiny");
  ReferenceOps<float> ops;
  Gpt2Model<float> model(config, 2, 8, ops, amp::Mode::amp_bf16);
  model.init(testing::fresh_seed());
  std::vector<std::int32_t> tokens(16);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 7 % config.vocab);
  model.forward(tokens.data(), tokens.data());
  model.zero_grad();
  model.backward();
  // Parameter gradients stay fp32 in autocast (the weights are fp32), though each GEMM's weight
  // gradient was rounded to bf16 before it was added: wte collects two of them (embedding, LM
  // head), so its sums are mostly not bf16 values, while c_fc's single GEMM gradient is.
  const std::vector<float> grads = model.download_grads();
  const ParameterTensor& fc = model.tensor("h.0.mlp.c_fc.weight");
  for (std::size_t i = fc.offset; i < fc.offset + fc.size; ++i) ASSERT_TRUE(is_bf16(grads[i])) << i;
  const ParameterTensor& wpe = model.tensor("wpe.weight");
  std::size_t wpe_not_bf16 = 0;
  for (std::size_t i = wpe.offset; i < wpe.offset + 8 * config.channels; ++i) wpe_not_bf16 += is_bf16(grads[i]) ? 0 : 1;
  EXPECT_GT(wpe_not_bf16, 0u) << "the embedding gradient comes from the fp32 residual stream";
}

TEST(PrecisionModes, EveryModeTrainsCloseToFp32) {
  const GptConfig config = config_by_name("tiny");
  const MarkovChain chain = MarkovChain::random(config.vocab, 3, 11);
  const TrainOptions options = tiny_options(40);
  SCOPED_TRACE("seed " + std::to_string(options.seed));
  ReferenceOps<float> ops;
  auto final_loss = [&](amp::Mode mode) {
    MarkovTokenStream data(chain, 5);
    const auto curve = train(config, options, data, ops, mode);
    double sum = 0;
    for (std::size_t i = curve.size() - 5; i < curve.size(); ++i) sum += curve[i].loss / 5;
    return sum;
  };
  const double fp32 = final_loss(amp::Mode::fp32);
  for (amp::Mode mode : {amp::Mode::tf32, amp::Mode::amp_fp16, amp::Mode::amp_bf16, amp::Mode::bf16}) {
    EXPECT_NEAR(final_loss(mode), fp32, 0.05 * fp32) << amp::mode_name(mode);
  }
}

TEST(PrecisionModes, MemoryEstimateIsWhatTheTrainerAllocates) {
  const GptConfig config = config_by_name("tiny");
  const MarkovChain chain = MarkovChain::random(config.vocab, 3, 11);
  for (amp::Mode mode : {amp::Mode::fp32, amp::Mode::bf16}) {
    ReferenceOps<float> ops;
    TrainOptions options = tiny_options(2);
    options.batch = 3;
    options.seq_len = 7;
    MarkovTokenStream data(chain, 1);
    Trainer trainer(config, options, ops, mode);
    trainer.step(data);
    EXPECT_EQ(ops.peak_bytes(), training_bytes_estimate(config, options, mode, ops.has_half_storage()))
        << amp::mode_name(mode);
    EXPECT_EQ(ops.live_bytes(), ops.peak_bytes()) << "nothing is allocated per step";
  }
}

TEST(PrecisionModes, ANonFiniteLossStopsFp32ButOnlySkipsAStepUnderLossScaling) {
  const GptConfig config = config_by_name("tiny");
  const MarkovChain chain = MarkovChain::random(config.vocab, 3, 11);
  ReferenceOps<float> ops;
  for (amp::Mode mode : {amp::Mode::fp32, amp::Mode::amp_fp16}) {
    MarkovTokenStream data(chain, 1);
    Trainer trainer(config, tiny_options(3), ops, mode);
    std::vector<float> weights = trainer.model().download_params();
    weights[trainer.model().tensor("ln_f.weight").offset] = NAN;
    trainer.load_params(weights);
    if (mode == amp::Mode::fp32) {
      try {
        trainer.step(data);
        FAIL() << "a NaN loss in fp32 must stop training";
      } catch (const BackendError& e) {
        EXPECT_NE(std::string(e.what()).find("fp32 training diverged"), std::string::npos) << e.what();
      }
    } else {
      const StepRecord r = trainer.step(data);
      EXPECT_TRUE(r.skipped);
      EXPECT_EQ(trainer.scaler().skipped_steps, 1);
    }
  }
}

// The fp8 modes run on the converted path (the reference's table, a CPU's); a native fp8 row (a
// GPU's) has no fp8 GEMM path in the workload yet.
TEST(PrecisionModes, Fp8ModesRunConvertedAndNotOnCudaYet) {
  ReferenceOps<float> ops;
  for (amp::Mode mode : {amp::Mode::fp8, amp::Mode::fp8_current, amp::Mode::mxfp8}) {
    EXPECT_FALSE(unsupported_mode(ops, mode)) << amp::mode_name(mode);
    const CapabilityTable native = CapabilityTable::every_precision(GemmPath::native, "every GEMM runs");
    const auto reason = unsupported_mode(native, mode);
    ASSERT_TRUE(reason.has_value());
    EXPECT_NE(reason->find("no fp8 GEMM path on CUDA yet"), std::string::npos) << *reason;
  }
  EXPECT_EQ(amp::parse_mode("fp8"), amp::Mode::fp8) << "the old name is fp8-delayed";
  EXPECT_EQ(amp::mode_name(amp::Mode::fp8), "fp8-delayed");
  EXPECT_EQ(amp::mode_name(amp::Mode::fp8_current), "fp8-current");
}

// One rule for every reader (the trainer, the suite, `list`): the workload's own refusal first,
// then the device's table.
TEST(PrecisionModes, UnsupportedModeReadsTheCapabilityTable) {
  const CapabilityTable native = CapabilityTable::every_precision(GemmPath::native, "every GEMM runs");
  const CapabilityTable none = CapabilityTable::every_precision(GemmPath::unsupported, "no GEMM here");
  for (const amp::ModePolicy& p : amp::all_policies()) {
    const auto on_native = unsupported_mode(native, p.mode), on_none = unsupported_mode(none, p.mode);
    if (p.mode == amp::Mode::fp8 || p.mode == amp::Mode::fp8_current || p.mode == amp::Mode::mxfp8) {
      ASSERT_TRUE(on_native && on_none);
      EXPECT_NE(on_native->find("no fp8 GEMM path on CUDA yet"), std::string::npos) << *on_native;
      EXPECT_EQ(*on_none, "no GEMM here");
      EXPECT_FALSE(workload_gemm_rule(GemmPrecision::fp8_e4m3)) << "fp8 is refused by the device's row only";
    } else {
      EXPECT_FALSE(on_native) << p.name << ": " << *on_native;
      ASSERT_TRUE(on_none) << p.name;
      EXPECT_EQ(*on_none, "no GEMM here");
    }
  }
}

}  // namespace
}  // namespace mpbench::workloads
