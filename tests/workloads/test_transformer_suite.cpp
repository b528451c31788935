// The transformer suite on the reference ops: planning (defaults, bad input, the memory check) and
// the cases a run produces.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "workloads/reference_ops.hpp"
#include "workloads/transformer_suite.hpp"

namespace mpbench::workloads {
namespace {

DeviceInfo cpu_with(std::uint64_t memory_bytes) {
  DeviceInfo device;
  device.backend = "cpu";
  device.name = "test CPU";
  device.memory_bytes = memory_bytes;
  return device;
}

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
  EXPECT_EQ(lines.size(), 13u) << "one line per step of the two trained modes, one for the skipped";
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
    EXPECT_NEAR(c->rates["tokens_per_s"].get<double>(), 64 / c->seconds->median, 1e-9 * 64 / c->seconds->median);
    EXPECT_EQ(c->details["loss"].size(), 6u);
    EXPECT_GT(c->rates["peak_memory_bytes"].get<double>(), 0);
    EXPECT_EQ(c->details["memory"]["allocated_peak_bytes"], c->details["memory"]["estimate_bytes"]);
    EXPECT_GT(c->details["entropy_floor"].get<double>(), 0);
    EXPECT_FALSE(c->rates.contains("mfu")) << "no datasheet peak for CPUs";
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
  EXPECT_EQ(fp16.precision, "amp-fp16");
  EXPECT_EQ(fp16.details["loss_scale"].size(), 6u);
  EXPECT_FALSE(fp32.details.contains("loss_scale"));
  EXPECT_TRUE(fp16.details.contains("final_loss_vs_fp32"));
  EXPECT_LT(std::abs(fp16.details["final_loss_vs_fp32"].get<double>()), 0.02);
  EXPECT_EQ(outcome.cases[2].status, CaseStatus::skipped);
  EXPECT_NE(outcome.cases[2].message.find("fp8"), std::string::npos);
}

TEST(TransformerSuite, AnInterruptKeepsOnlyFinishedModes) {
  const DeviceInfo device = cpu_with(64ull << 30);
  TransformerSuiteOptions o = tiny(4);
  o.modes = {amp::Mode::fp32, amp::Mode::bf16};
  const TransformerPlan plan = plan_transformer_run(o, device);
  ReferenceOps<float> ops;
  int lines = 0;
  const auto outcome = run_transformer_suite(plan, ops, device, [&](const std::string&) {
    if (++lines == 6) request_interrupt();  // during the second mode
  });
  clear_interrupt();
  EXPECT_TRUE(outcome.interrupted);
  ASSERT_EQ(outcome.cases.size(), 1u);
  EXPECT_EQ(outcome.cases[0].precision, "fp32");
}

}  // namespace
}  // namespace mpbench::workloads
