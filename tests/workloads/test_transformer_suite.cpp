// The transformer suite on the reference ops: planning (defaults, bad input, the memory check) and
// the cases a run produces.
#include <gtest/gtest.h>

#include <cmath>

#include <functional>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "tests/workloads/gradient_check.hpp"
#include "workloads/reference_ops.hpp"
#include "workloads/trainer.hpp"
#include "workloads/transformer_suite.hpp"

namespace mpbench::workloads {
namespace {

using testing::cpu_with;

TransformerSuiteOptions tiny(int steps) {
  TransformerSuiteOptions o;
  o.config = "tiny";
  o.steps = steps;
  o.seed = 5;
  return o;
}

TEST(TransformerPlan, DefaultsFollowTheDevice) {
  const TransformerPlan cpu = plan_transformer_run({}, cpu_with(64ull << 30));
  EXPECT_EQ(cpu.config.name, "small");
  EXPECT_EQ(cpu.train.batch, 4);
  EXPECT_EQ(cpu.train.seq_len, cpu.config.max_seq);
  EXPECT_EQ(cpu.train.steps, 30);
  EXPECT_EQ(cpu.timing_warmup, 6);
  EXPECT_EQ(cpu.modes.size(), 5u);
  EXPECT_EQ(cpu.case_name(), "small_b4_t256");
  EXPECT_EQ(cpu.train.max_lr, 6e-4f);
  EXPECT_FLOAT_EQ(cpu.train.min_lr, 6e-5f);
  DeviceInfo gpu = cpu_with(141ull << 30);
  gpu.backend = "cuda";
  const TransformerPlan h200 = plan_transformer_run({}, gpu);
  EXPECT_EQ(h200.config.name, "gpt2-124m");
  EXPECT_EQ(h200.config.padded_vocab(), 50304);
  EXPECT_EQ(h200.train.batch, 8);
}

// What a plan trains, counted: tokens through the model, and their FLOPs (llm.c's count).
double planned_tokens(const TransformerPlan& p) {
  return static_cast<double>(p.train.steps) * p.train.batch * p.train.seq_len * p.train.micro_batches *
         static_cast<double>(p.modes.size());
}
double planned_flops(const TransformerPlan& p) { return planned_tokens(p) * flops_per_token_llmc(p.config, p.train.seq_len); }

TEST(TransformerPlan, QuickOnACpuTrainsTheDefaultModelOnFewerTokensAndSaysSo) {
  const DeviceInfo cpu = cpu_with(64ull << 30);
  TransformerSuiteOptions o;
  o.quick = true;
  const TransformerPlan quick = plan_transformer_run(o, cpu);
  const TransformerPlan standard = plan_transformer_run({}, cpu);
  EXPECT_EQ(quick.config.name, standard.config.name);
  EXPECT_EQ(quick.case_name(), "small_b2_t128");
  EXPECT_EQ(quick.train.steps, kQuickCpu.steps);
  EXPECT_GE(quick.train.steps - quick.timing_warmup, 5) << "enough timed steps for a spread";
  EXPECT_LE(planned_tokens(quick), planned_tokens(standard) / 16);
  EXPECT_LE(planned_flops(quick), 0.5e12);  // about 0.25 TFLOP in all, five modes planned
  EXPECT_NE(quick.quick_note.find("batch 2, 128 tokens, 6 steps"), std::string::npos) << quick.quick_note;
  EXPECT_TRUE(standard.quick_note.empty());
  // What is asked for is kept: a config named, or a batch.
  o.config = "small";
  const TransformerPlan named = plan_transformer_run(o, cpu);
  EXPECT_EQ(named.case_name(), "small_b4_t256");
  EXPECT_EQ(named.train.steps, 10);
  EXPECT_TRUE(named.quick_note.empty());
  o.config.clear();
  o.batch = 3;
  EXPECT_EQ(plan_transformer_run(o, cpu).case_name(), "small_b3_t128");
  // A GPU's quick run keeps GPT-2 124M's shape.
  DeviceInfo gpu = cpu_with(141ull << 30);
  gpu.backend = "cuda";
  TransformerSuiteOptions on_gpu;
  on_gpu.quick = true;
  EXPECT_EQ(plan_transformer_run(on_gpu, gpu).case_name(), "gpt2-124m_b8_t1024");
}

TEST(TransformerPlan, BadInputIsAUsageError) {
  const DeviceInfo device = cpu_with(64ull << 30);
  TransformerSuiteOptions o = tiny(10);
  o.config = "gpt5";
  EXPECT_THROW(plan_transformer_run(o, device), UsageError);
  o = tiny(10);
  o.seq_len = 17;  // tiny has 16 positions
  EXPECT_THROW(plan_transformer_run(o, device), UsageError);
  o = tiny(2);
  o.warmup_steps = 2;
  EXPECT_THROW(plan_transformer_run(o, device), UsageError);
  o = tiny(10);
  o.max_lr = 0;
  EXPECT_THROW(plan_transformer_run(o, device), UsageError);
  for (float scale : {0.0f, -1.0f, INFINITY, NAN, 0x1p65f}) {
    o = tiny(10);
    o.loss_scale = scale;
    EXPECT_THROW(plan_transformer_run(o, device), UsageError) << scale;
  }
  o = tiny(10);
  o.loss_scale = 0x1p24f;
  EXPECT_EQ(plan_transformer_run(o, device).train.scaler.init_scale, 0x1p24f);
  o = tiny(10);
  o.data_file = "/nonexistent/tokens.bin";
  EXPECT_THROW(plan_transformer_run(o, device), UsageError);
  o = tiny(10);
  o.checkpoint_in = "/nonexistent/checkpoint";
  EXPECT_THROW(plan_transformer_run(o, device), UsageError);
}

TEST(TransformerPlan, TensorCorePolicyNamesTheCaseOnAGpuAndIsRefusedOnTheCpu) {
  DeviceInfo gpu = cpu_with(141ull << 30);
  gpu.backend = "cuda";
  TransformerSuiteOptions o = tiny(10);
  const TransformerPlan on = plan_transformer_run(o, gpu);
  EXPECT_EQ(on.tensor_cores, TensorCorePolicy::on);
  EXPECT_EQ(on.case_name(), "tiny_b4_t16");
  o.tensor_cores = "off";
  const TransformerPlan off = plan_transformer_run(o, gpu);
  EXPECT_EQ(off.tensor_cores, TensorCorePolicy::off);
  EXPECT_EQ(off.case_name(), "tiny_b4_t16_tc-off");
  o.tensor_cores = "batched-off";
  const TransformerPlan batched_off = plan_transformer_run(o, gpu);
  EXPECT_EQ(batched_off.tensor_cores, TensorCorePolicy::batched_off);
  EXPECT_EQ(batched_off.case_name(), "tiny_b4_t16_tc-batched-off");
  o.tensor_cores = "sometimes";
  EXPECT_THROW(plan_transformer_run(o, gpu), UsageError);
  for (const char* policy : {"off", "batched-off"}) {
    o.tensor_cores = policy;
    try {
      plan_transformer_run(o, cpu_with(64ull << 30));
      FAIL() << "--tensor-cores " << policy << " planned on a CPU";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("use --cpu-isa"), std::string::npos) << e.what();
    }
  }
  o.tensor_cores = "on";
  EXPECT_EQ(plan_transformer_run(o, cpu_with(64ull << 30)).tensor_cores, TensorCorePolicy::on);
}

TEST(TransformerPlan, AttentionChosenByHandNamesTheCaseAndFusedIsRefusedOnTheCpu) {
  DeviceInfo gpu = cpu_with(141ull << 30);
  gpu.backend = "cuda";
  TransformerSuiteOptions o = tiny(10);
  EXPECT_EQ(plan_transformer_run(o, gpu).attention, std::nullopt) << "auto: chosen per mode";
  o.attention = "fused";
  EXPECT_EQ(plan_transformer_run(o, gpu).attention, AttentionKernels::fused);
  EXPECT_EQ(plan_transformer_run(o, gpu).case_name(), "tiny_b4_t16_att-fused");
  o.attention = "unfused";
  EXPECT_EQ(plan_transformer_run(o, gpu).case_name(), "tiny_b4_t16_att-unfused");
  EXPECT_EQ(plan_transformer_run(o, cpu_with(64ull << 30)).attention, AttentionKernels::unfused);
  o.attention = "flash";
  EXPECT_THROW(plan_transformer_run(o, gpu), UsageError);
  o.attention = "fused";
  try {
    plan_transformer_run(o, cpu_with(64ull << 30));
    FAIL() << "--attention fused planned on a CPU";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA GPUs only"), std::string::npos) << e.what();
  }
}

TEST(TransformerPlan, EmulatedActivationsNameTheCase) {
  const DeviceInfo device = cpu_with(64ull << 30);
  TransformerSuiteOptions o = tiny(10);
  EXPECT_EQ(plan_transformer_run(o, device).train.activation_storage, ActivationStorage::half);
  o.activation_storage = "emulated";
  const TransformerPlan emulated = plan_transformer_run(o, device);
  EXPECT_EQ(emulated.train.activation_storage, ActivationStorage::emulated);
  EXPECT_EQ(emulated.case_name(), "tiny_b4_t16_act-emulated");
  o.activation_storage = "fp8";
  EXPECT_THROW(plan_transformer_run(o, device), UsageError);
}

TEST(TransformerPlan, CountersImplyProfilingOnAGpuAndAreRefusedOnTheCpu) {
  DeviceInfo gpu = cpu_with(141ull << 30);
  gpu.backend = "cuda";
  TransformerSuiteOptions o = tiny(10);
  EXPECT_FALSE(plan_transformer_run(o, gpu).counters);
  EXPECT_EQ(plan_transformer_run(o, gpu).profile_steps, 0);
  o.counters = true;
  const TransformerPlan counted = plan_transformer_run(o, gpu);
  EXPECT_TRUE(counted.counters);
  EXPECT_EQ(counted.profile_steps, kProfiledSteps);
  try {
    plan_transformer_run(o, cpu_with(64ull << 30));
    FAIL() << "--counters planned on a CPU";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU hardware counters"), std::string::npos) << e.what();
  }
}

TEST(TransformerPlan, ABatchThatDoesNotFitSaysWhatItNeedsAndWhatFits) {
  TransformerSuiteOptions o;
  o.config = "gpt2-124m";
  o.batch = 64;
  DeviceInfo gpu = cpu_with(80ull << 30);
  gpu.backend = "cuda";
  gpu.name = "test GPU";
  try {
    plan_transformer_run(o, gpu);
    FAIL() << "B=64 T=1024 of gpt2-124m with fp32 activations cannot fit in 80 GiB";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("needs"), std::string::npos) << message;
    EXPECT_NE(message.find("test GPU has 80.00 GiB"), std::string::npos) << message;
    const auto fits = message.rfind("--batch ");
    ASSERT_NE(fits, std::string::npos) << message;
    const int batch = std::stoi(message.substr(fits + 8));
    EXPECT_GT(batch, 0);
    EXPECT_LT(batch, 64);
    // What it says fits does fit.
    o.batch = batch;
    EXPECT_NO_THROW(plan_transformer_run(o, gpu));
  }
}

TEST(TransformerPlan, TheMemoryCheckCountsTheFusedAttentionAutoPicks) {
  TransformerSuiteOptions o;
  o.config = "gpt2-124m";
  o.batch = 32;
  o.modes = {amp::Mode::amp_bf16};
  DeviceInfo gpu = cpu_with(1ull << 40);
  gpu.backend = "cuda";
  gpu.name = "test GPU";
  const TransformerPlan roomy = plan_transformer_run(o, gpu);
  TrainOptions fused = roomy.train, unfused = roomy.train;
  fused.attention = AttentionKernels::fused;
  unfused.attention = AttentionKernels::unfused;
  const double fused_bytes = double(training_bytes_estimate(roomy.config, fused, amp::Mode::amp_bf16, true));
  const double unfused_bytes = double(training_bytes_estimate(roomy.config, unfused, amp::Mode::amp_bf16, true));
  ASSERT_LT(fused_bytes, unfused_bytes) << "the fused attention keeps no T x T scores";
  // Nine tenths of the memory are usable: here, room for the fused attention's step only.
  gpu.memory_bytes = static_cast<std::uint64_t>((fused_bytes + unfused_bytes) / 2 / 0.9);
  EXPECT_NO_THROW(plan_transformer_run(o, gpu)) << "auto runs amp-bf16 with fused attention on a GPU";
  o.attention = "unfused";
  try {
    plan_transformer_run(o, gpu);
    FAIL() << "the unfused attention's scores do not fit";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("in amp-bf16 with unfused attention"), std::string::npos) << e.what();
  }
  o.attention = "auto";  // a CPU has no fused attention: auto means unfused there
  EXPECT_THROW(plan_transformer_run(o, cpu_with(gpu.memory_bytes)), UsageError);
}

TEST(TransformerSuite, EveryModeIsACaseWithItsMetrics) {
  const DeviceInfo device = cpu_with(64ull << 30);
  TransformerSuiteOptions o = tiny(6);
  o.modes = {amp::Mode::fp32, amp::Mode::amp_fp16, amp::Mode::fp8};
  const TransformerPlan plan = plan_transformer_run(o, device);
  ReferenceOps<float> ops;
  std::vector<std::string> lines;
  auto outcome = run_transformer_suite(plan, ops, device, [&](const std::string& l) { lines.push_back(l); });
  compare_final_losses(outcome.cases);
  ASSERT_EQ(outcome.cases.size(), 3u);
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_EQ(lines.size(), 18u) << "one line per step of the three trained modes";
  const CaseResult& fp32 = outcome.cases[0];
  const CaseResult& fp16 = outcome.cases[1];
  for (const CaseResult* c : {&fp32, &fp16}) {
    ASSERT_EQ(c->status, CaseStatus::ok) << c->message;
    EXPECT_EQ(c->suite, "transformer");
    EXPECT_EQ(c->name, "tiny_b4_t16");
    EXPECT_EQ(c->params["tensor_cores"], "on");
    // auto: the reference ops have no fused attention, and the case says why it ran unfused.
    EXPECT_EQ(c->params["attention"], "unfused");
    EXPECT_NE(c->details.value("attention_note", "").find("only the CUDA backend"), std::string::npos)
        << c->details.dump();
    ASSERT_TRUE(c->seconds);
    EXPECT_EQ(c->seconds->values.size(), 5u) << "6 steps less 1 of warm-up";
    // Whether the fixed steps spread within the run's noise target, as the sampler records it.
    const auto& measurement = c->details["measurement"];
    EXPECT_EQ(measurement["converged"].get<bool>(), c->seconds->relative_spread() <= plan.max_noise);
    EXPECT_NE(measurement["stop_reason"].get<std::string>().find("5 timed steps after 1 warm-up step(s), a fixed count"),
              std::string::npos) << measurement;
    EXPECT_NEAR(c->rates["tokens_per_s"].get<double>(), 64 / c->seconds->median, 1e-9 * 64 / c->seconds->median);
    EXPECT_EQ(c->details["loss"].size(), 6u);
    EXPECT_GT(c->rates["peak_memory_bytes"].get<double>(), 0);
    EXPECT_EQ(c->details["memory"]["allocated_peak_bytes"], c->details["memory"]["estimate_bytes"]);
    EXPECT_GT(c->details["entropy_floor"].get<double>(), 0);
    EXPECT_FALSE(c->rates.contains("mfu")) << "no datasheet peak for CPUs";
    EXPECT_FALSE(c->details.contains("gemm_algorithms")) << "the reference ops know no GEMM algorithm";
    // Host-timed op ranges: every op of the model appears, and they account for most of a step.
    const auto& breakdown = c->details["breakdown"];
    for (const char* category : {"gemm", "attention", "normalization", "elementwise", "reduction", "optimizer"})
      EXPECT_GT(breakdown["categories"].value(category, 0.0), 0.0) << category;
    EXPECT_TRUE(breakdown["ops"].contains("c_fc backward"));
    if (c == &fp32) {  // no skipped step, so AdamW ran every step
      // Forward and backward ops, the inputs' upload, the loss's download, zeroing the activation
      // gradients and the parameter gradients, norm and AdamW.
      const double per_step_ranges = 2 * (1 + 10 * 2 + 3) + 4 + 2;
      EXPECT_EQ(breakdown["kernel_count"].get<double>(), per_step_ranges);
    }
    double attributed = 0;
    for (const auto& [name, seconds] : breakdown["categories"].items()) attributed += seconds.get<double>();
    EXPECT_LE(attributed, breakdown["region_s"].get<double>() * 1.0001);
    EXPECT_GT(attributed, 0.5 * breakdown["region_s"].get<double>());
  }
  // The reference ops have half storage: amp-fp16's GEMM outputs take 2 bytes; fp32 has none to halve.
  EXPECT_EQ(fp16.params["activation_storage"], "half");
  EXPECT_EQ(fp16.details["memory"]["activation_storage"], "half");
  EXPECT_EQ(fp32.params["activation_storage"], "emulated");
  EXPECT_LT(fp16.details["memory"]["activation_bytes"].get<double>(),
            fp32.details["memory"]["activation_bytes"].get<double>());
  EXPECT_EQ(fp16.precision, "amp-fp16");
  EXPECT_EQ(fp16.details["loss_scale"].size(), 6u);
  EXPECT_FALSE(fp32.details.contains("loss_scale"));
  EXPECT_TRUE(fp16.details.contains("final_loss_vs_fp32"));
  EXPECT_LT(std::abs(fp16.details["final_loss_vs_fp32"].get<double>()), 0.02);
  // fp8-delayed on the reference's converted path: per step its quantization counts and scale changes.
  const CaseResult& fp8 = outcome.cases[2];
  ASSERT_EQ(fp8.status, CaseStatus::ok) << fp8.message;
  EXPECT_EQ(fp8.precision, "fp8-delayed");
  EXPECT_EQ(fp8.details["gemm_path"]["path"], "converted");
  const nlohmann::json& q = fp8.details["fp8"];
  EXPECT_EQ(q["recipe"], "delayed");
  EXPECT_EQ(q["gemm_path"], "converted");
  ASSERT_EQ(q["per_step"].size(), 6u);
  for (const nlohmann::json& step : q["per_step"]) {
    EXPECT_GT(step["by_operand"]["grad"]["elements"].get<double>(), 0) << step.dump();
    EXPECT_GT(step["by_operand"]["weight"]["tensors"].get<double>(), 0) << step.dump();
    EXPECT_TRUE(step.contains("scale_changes")) << step.dump();
  }
  EXPECT_GT(q["per_step"][0]["scale_changes"].get<double>(), 0) << "every scale leaves 1 after the first step";
  EXPECT_GT(q["scale_changes_total"].get<double>(), 0);
  EXPECT_FALSE(fp32.details.contains("fp8"));
  // The fp8 GEMM FLOPs from the shapes against what the quantizer saw: each weight element it
  // quantized in a step's forward takes 6 FLOPs per token of the step (x W^T, dx, dW).
  const double tokens = double(plan.train.batch) * plan.train.seq_len * plan.train.micro_batches;
  const double weights = q["per_step"][0]["by_operand"]["weight"]["elements"].get<double>() / plan.train.micro_batches;
  EXPECT_DOUBLE_EQ(q["gemm_flops"]["fp8_per_step"].get<double>(), 6 * weights * tokens) << q["gemm_flops"].dump();
  const double bf16_flops = q["gemm_flops"]["bf16_per_step"].get<double>();
  EXPECT_DOUBLE_EQ(bf16_flops, 12.0 * plan.config.layers * plan.config.channels * plan.train.seq_len * tokens);
  EXPECT_DOUBLE_EQ(q["gemm_flops"]["fp8_share"].get<double>(),
                   6 * weights * tokens / (6 * weights * tokens + bf16_flops));
  // The account holds each scaled tensor's amax history, scale and inverse: the three operands of
  // every linear GEMM (four per layer and the LM head), counted from the config, not the quantizer.
  const std::uint64_t tensors = 3 * (4 * std::uint64_t(plan.config.layers) + 1);
  EXPECT_EQ(q["per_step"][0]["scaled_tensors"].get<std::uint64_t>(), tensors);
  const auto& account = fp8.details["memory"]["account"];
  EXPECT_EQ(account["scaling_state_bytes"].get<std::uint64_t>(),
            tensors * (q["history_length"].get<std::uint64_t>() + 2) * 4);
  EXPECT_EQ(account["persistent_bytes"].get<std::uint64_t>(),
            fp16.details["memory"]["account"]["persistent_bytes"].get<std::uint64_t>() +
                account["scaling_state_bytes"].get<std::uint64_t>())
      << "16 bytes per parameter in both, and fp8-delayed's scaling state";
  EXPECT_EQ(fp16.details["memory"]["account"]["scaling_state_bytes"], 0);
}

// The reference ops, reporting hand-built GEMM algorithms as the CUDA ops report cuBLASLt's.
// ReferenceOps is final, so this wraps one and forwards every op to it (host memory on both sides).
class ReportingOps final : public TransformerOps<float>, public HostOpsMemory {
 public:
  explicit ReportingOps(std::vector<GemmAlgorithm> algorithms) : algorithms_(std::move(algorithms)) {}
  std::vector<GemmAlgorithm> gemm_algorithms() const override { return algorithms_; }

  std::string implementation() const override { return ref_.implementation(); }
  const CapabilityTable& capabilities() const override { return ref_.capabilities(); }
  void set_matmul_precision(const MatmulPrecision& p) override { ref_.set_matmul_precision(p); }
  void round_to(float* x, std::size_t n, num::Format f) override { ref_.round_to(x, n, f); }
  bool has_half_storage() const override { return ref_.has_half_storage(); }
  void encoder_forward(Tensor<float> out, const std::int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override {
    ref_.encoder_forward(out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, ConstTensor<float> dout, const std::int32_t* tokens, int B, int T,
                        int C) override {
    ref_.encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(Tensor<float> out, float* mean, float* rstd, ConstTensor<float> inp, const float* weight,
                         const float* bias, int N, int C) override {
    ref_.layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout, ConstTensor<float> inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override {
    ref_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void matmul_forward(Tensor<float> out, ConstTensor<float> inp, const float* weight, const float* bias, int N, int C,
                      int OC) override {
    ref_.matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout, ConstTensor<float> inp,
                       const float* weight, int N, int C, int OC) override {
    ref_.matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  void attention_forward(Tensor<float> out, float* att, ConstTensor<float> qkv, int B, int T, int C, int NH) override {
    ref_.attention_forward(out, att, qkv, B, T, C, NH);
  }
  void attention_backward(Tensor<float> dqkv, ConstTensor<float> dout, ConstTensor<float> qkv, const float* att, int B, int T, int C,
                          int NH) override {
    ref_.attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
  }
  void gelu_forward(Tensor<float> out, ConstTensor<float> inp, std::size_t n) override { ref_.gelu_forward(out, inp, n); }
  void gelu_backward(Tensor<float> dinp, ConstTensor<float> dout, ConstTensor<float> inp, std::size_t n) override {
    ref_.gelu_backward(dinp, dout, inp, n);
  }
  void residual_forward(Tensor<float> out, ConstTensor<float> a, ConstTensor<float> b, std::size_t n) override {
    ref_.residual_forward(out, a, b, n);
  }
  void residual_backward(Tensor<float> da, Tensor<float> db, ConstTensor<float> dout, std::size_t n) override {
    ref_.residual_backward(da, db, dout, n);
  }
  void softmax_crossentropy_forward(float* losses, float* probs, ConstTensor<float> logits, const std::int32_t* targets,
                                    int N, int V, int Vp) override {
    ref_.softmax_crossentropy_forward(losses, probs, logits, targets, N, V, Vp);
  }
  void softmax_crossentropy_backward(Tensor<float> dlogits, const float* dlosses, const float* probs,
                                     const std::int32_t* targets, int N, int V, int Vp) override {
    ref_.softmax_crossentropy_backward(dlogits, dlosses, probs, targets, N, V, Vp);
  }
  void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const AdamWStep& step) override {
    ref_.adamw_update(params, grads, m, v, n, step);
  }
  double global_norm(const float* grads, std::size_t n) override { return ref_.global_norm(grads, n); }
  void copy(float* dst, const float* src, std::size_t n) override { ref_.copy(dst, src, n); }

 private:
  ReferenceOps<float> ref_;
  std::vector<GemmAlgorithm> algorithms_;
};

TEST(TransformerSuite, EachModeRecordsTheGemmAlgorithmsOfItsPrecision) {
  const DeviceInfo device = cpu_with(64ull << 30);
  TransformerSuiteOptions o = tiny(3);
  o.modes = {amp::Mode::fp32, amp::Mode::amp_fp16, amp::Mode::amp_bf16};
  const TransformerPlan plan = plan_transformer_run(o, device);
  ReportingOps ops({{"matmul forward (inp weight^T)", "bf16 GEMM m=64 n=16 k=64", GemmPrecision::bf16, false, true,
                     0x20202, "CUBLAS_COMPUTE_32F", 64, 16, 64},
                    {"matmul forward (inp weight^T)", "fp32 GEMM m=64 n=16 k=64", GemmPrecision::fp32, false, false,
                     0x80201, "CUBLAS_COMPUTE_32F_PEDANTIC", 64, 16, 64,
                     {{"algo_id", 6}, {"tile", "64x64"}, {"stages", "16x5"}}},
                    {"attention scores (q k^T)", "bf16 GEMM m=16 n=16 k=16 batch=16", GemmPrecision::bf16, true,
                     false, 0x20201, "CUBLAS_COMPUTE_32F_PEDANTIC", 16, 16, 16}});
  const auto outcome = run_transformer_suite(plan, ops, device, [](const std::string&) {});
  ASSERT_EQ(outcome.cases.size(), 3u);
  for (const CaseResult& c : outcome.cases) ASSERT_EQ(c.status, CaseStatus::ok) << c.precision << ": " << c.message;
  const nlohmann::json& fp32 = outcome.cases[0].details;
  ASSERT_TRUE(fp32.contains("gemm_algorithms")) << fp32.dump();
  ASSERT_EQ(fp32["gemm_algorithms"].size(), 1u);
  EXPECT_EQ(fp32["gemm_algorithms"][0],
            nlohmann::json({{"gemm", "matmul forward (inp weight^T)"},
                            {"problem", "fp32 GEMM m=64 n=16 k=64"},
                            {"batched", false},
                            {"tensor_cores", false},
                            {"numerical_impl_flags", "0x80201"},
                            {"compute_type", "CUBLAS_COMPUTE_32F_PEDANTIC"},
                            {"m", 64},
                            {"n", 16},
                            {"k", 64},
                            {"algo_id", 6},
                            {"tile", "64x64"},
                            {"stages", "16x5"}}));
  EXPECT_FALSE(outcome.cases[1].details.contains("gemm_algorithms")) << "no fp16 algorithm: nothing to record";
  const nlohmann::json& bf16 = outcome.cases[2].details;
  ASSERT_TRUE(bf16.contains("gemm_algorithms")) << bf16.dump();
  ASSERT_EQ(bf16["gemm_algorithms"].size(), 2u);
  EXPECT_EQ(bf16["gemm_algorithms"][0]["problem"], "bf16 GEMM m=64 n=16 k=64");
  EXPECT_EQ(bf16["gemm_algorithms"][0]["tensor_cores"], true);
  EXPECT_EQ(bf16["gemm_algorithms"][0]["numerical_impl_flags"], "0x20202");
  EXPECT_EQ(bf16["gemm_algorithms"][1],
            nlohmann::json({{"gemm", "attention scores (q k^T)"},
                            {"problem", "bf16 GEMM m=16 n=16 k=16 batch=16"},
                            {"batched", true},
                            {"tensor_cores", false},
                            {"numerical_impl_flags", "0x20201"},
                            {"compute_type", "CUBLAS_COMPUTE_32F_PEDANTIC"},
                            {"m", 16},
                            {"n", 16},
                            {"k", 16}}));
}

// The finished modes are kept as they are; the interrupted one is an error case that keeps the
// steps it finished, and no mode after it runs.
TEST(TransformerSuite, AnInterruptKeepsFinishedModesAndTheStepsOfTheInterruptedOne) {
  const DeviceInfo device = cpu_with(64ull << 30);
  TransformerSuiteOptions o = tiny(4);
  o.modes = {amp::Mode::fp32, amp::Mode::bf16, amp::Mode::amp_bf16};
  const TransformerPlan plan = plan_transformer_run(o, device);
  ReferenceOps<float> ops;
  int lines = 0;
  const auto outcome = run_transformer_suite(plan, ops, device, [&](const std::string&) {
    if (++lines == 6) request_interrupt();  // after the second mode's second step
  });
  clear_interrupt();
  EXPECT_TRUE(outcome.interrupted);
  ASSERT_EQ(outcome.cases.size(), 2u);
  EXPECT_EQ(outcome.cases[0].precision, "fp32");
  EXPECT_EQ(outcome.cases[0].status, CaseStatus::ok);
  const CaseResult& cut = outcome.cases[1];
  EXPECT_EQ(cut.precision, "bf16");
  EXPECT_EQ(cut.status, CaseStatus::error);
  EXPECT_NE(cut.message.find("interrupted after 2 of 4 steps"), std::string::npos) << cut.message;
  EXPECT_EQ(cut.details["interrupted_after_steps"], 2);
  EXPECT_EQ(cut.details["loss"].size(), 2u);
  EXPECT_EQ(cut.details["step_seconds"].size(), 2u);
  EXPECT_FALSE(cut.seconds.has_value()) << "no step-time statistics from a cut mode";
}

// Side outputs that fail mid-run (the checkpoint's or trace's folder is a file) cost themselves, not
// the mode: the case is ok and says what could not be written.
TEST(TransformerSuite, ACheckpointOrTraceThatCannotBeWrittenCostsOnlyItself) {
  const DeviceInfo device = cpu_with(64ull << 30);
  TransformerSuiteOptions o = tiny(3);
  o.modes = {amp::Mode::fp32};
  o.checkpoint_out = "/etc/hostname/ckpt";
  o.trace_file = "/etc/hostname/trace.json";
  const TransformerPlan plan = plan_transformer_run(o, device);
  ReferenceOps<float> ops;
  std::string notes;
  const auto outcome =
      run_transformer_suite(plan, ops, device, [&](const std::string& line) { notes += line + "\n"; });
  ASSERT_EQ(outcome.cases.size(), 1u);
  const CaseResult& c = outcome.cases[0];
  EXPECT_EQ(c.status, CaseStatus::ok) << c.message;
  EXPECT_NE(c.details["checkpoint"]["error"].get<std::string>().find("/etc/hostname"), std::string::npos);
  EXPECT_NE(c.details["profile"]["trace_error"].get<std::string>().find("/etc/hostname"), std::string::npos);
  EXPECT_NE(notes.find("the checkpoint was not written"), std::string::npos) << notes;
}

TEST(TransformerPlan, SizesBeyondTheirBoundsAreRefusedBeforeAnyWork) {
  const DeviceInfo device = cpu_with(64ull << 30);
  for (auto [set, says] : std::initializer_list<std::pair<std::function<void(TransformerSuiteOptions&)>, const char*>>{
           {[](TransformerSuiteOptions& o) { o.batch = 100000000; }, "--batch 100000000 is more than"},
           {[](TransformerSuiteOptions& o) { o.micro_batches = 1000000000; }, "--micro-batches 1000000000"},
           {[](TransformerSuiteOptions& o) { o.steps = 2000000000; }, "--steps 2000000000"},
           {[](TransformerSuiteOptions& o) { o.vocab_pad = 2147483647; }, "vocab padding must be between 1"}}) {
    TransformerSuiteOptions o = tiny(4);
    set(o);
    try {
      plan_transformer_run(o, device);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

TEST(TransformerPlan, TheBatchThatFitsIsFoundQuicklyForAHugeBatch) {
  // A GPU of 24 GiB and the largest batch allowed: the suggestion is the largest batch that fits
  // (found by bisection: a linear search from 2^20 down took minutes).
  DeviceInfo gpu = cpu_with(24ull << 30);
  gpu.backend = "cuda";
  TransformerSuiteOptions o;
  o.config = "gpt2-124m";
  o.batch = 1 << 20;
  o.modes = {amp::Mode::fp32};
  std::string message;
  try {
    plan_transformer_run(o, gpu);
  } catch (const UsageError& e) {
    message = e.what();
  }
  const auto fits_at = message.find("--batch ", message.find("usable"));
  ASSERT_NE(fits_at, std::string::npos) << message;
  const int fits = std::stoi(message.substr(fits_at + 8));
  o.batch = fits;
  EXPECT_NO_THROW(plan_transformer_run(o, gpu)) << "the suggested batch fits";
  o.batch = fits + 1;
  EXPECT_THROW(plan_transformer_run(o, gpu), UsageError) << "and is the largest that does";
}

}  // namespace
}  // namespace mpbench::workloads
