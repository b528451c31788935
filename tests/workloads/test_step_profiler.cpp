// Op ranges reach a listener, each in order; the profiled steps of the transformer suite: on the
// host clock (CPU), through a GPU-like recorder of hand-made activity (the breakdown a CUPTI trace
// gives), and when CUPTI is unavailable (the run goes on unprofiled and says why, once).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "profiler/cupti_collector.hpp"
#include "workloads/config.hpp"
#include "workloads/data.hpp"
#include "workloads/reference_ops.hpp"
#include "workloads/step_profiler.hpp"
#include "workloads/trainer.hpp"
#include "workloads/transformer_suite.hpp"

namespace mpbench::workloads {
namespace {

class RecordingListener : public OpRangeListener {
 public:
  void op_begin(std::string_view op, int layer, Phase phase) override {
    events.push_back("begin " + op_range_name(op, layer, phase));
  }
  void op_end(std::string_view op, int layer, Phase phase) override {
    events.push_back("end " + op_range_name(op, layer, phase));
  }
  std::vector<std::string> events;
};

// The op ranges of one training step of a model with `layers` blocks, in the order they run.
std::vector<std::string> one_step_ranges(int layers) {
  std::vector<std::string> r = {"zero_grad optimizer", "inputs forward", "embedding forward"};
  const char* block_forward[] = {"ln_1", "c_attn", "attention", "attn.c_proj", "residual_1",
                                 "ln_2", "c_fc",   "gelu",      "mlp.c_proj",  "residual_2"};
  for (int l = 0; l < layers; ++l)
    for (const char* op : block_forward) r.push_back(op_range_name(op, l, Phase::forward));
  for (const char* op : {"ln_f", "lm_head", "cross_entropy", "loss"}) r.push_back(std::string(op) + " forward");
  for (const char* op : {"zero_activation_grads", "cross_entropy", "lm_head", "ln_f"}) r.push_back(std::string(op) + " backward");
  for (int l = layers - 1; l >= 0; --l)
    for (int i = 9; i >= 0; --i) r.push_back(op_range_name(block_forward[i], l, Phase::backward));
  for (const char* op : {"embedding backward", "global_norm optimizer", "adamw optimizer"}) r.push_back(op);
  return r;
}

TEST(OpRangeListener, SeesEveryOpRangeOfAStepInOrder) {
  const GptConfig config = config_by_name("tiny");
  TrainOptions options;
  options.batch = 2;
  options.seq_len = 8;
  options.steps = 2;
  ReferenceOps<float> ops;
  Trainer trainer(config, options, ops, amp::Mode::fp32);
  MarkovTokenStream data(MarkovChain::random(config.vocab, 3, 1), 2);
  RecordingListener listener;
  OpTimes times;
  ops.listen_to_ops(&listener);
  ops.time_ops_on_host(&times);
  trainer.step(data);
  ops.listen_to_ops(nullptr);
  trainer.step(data);  // no longer heard
  std::vector<std::string> expected;
  for (const auto& name : one_step_ranges(config.layers)) {
    expected.push_back("begin " + name);
    expected.push_back("end " + name);
  }
  EXPECT_EQ(listener.events, expected);
  EXPECT_EQ(times.ranges(), 2 * (expected.size() / 2)) << "host timing goes on beside the listener, both steps";
}

TEST(OpRangeNames, TheKeyDropsOnlyTheLayer) {
  EXPECT_EQ(op_range_name("c_fc", 3, Phase::forward), "c_fc L3 forward");
  EXPECT_EQ(op_range_name("adamw", -1, Phase::optimizer), "adamw optimizer");
  EXPECT_EQ(op_key_of_range("c_fc L3 forward"), "c_fc forward");
  EXPECT_EQ(op_key_of_range("attn.c_proj L11 backward"), "attn.c_proj backward");
  EXPECT_EQ(op_key_of_range("adamw optimizer"), "adamw optimizer");
  EXPECT_EQ(op_key_of_range("ln_f Lx forward"), "ln_f Lx forward");
}

TEST(HostStepProfiler, KeepsEveryRangeWithItsHostTimes) {
  const auto profiler = host_step_profiler();
  profiler->op_begin("c_fc", 0, Phase::forward);
  profiler->op_end("c_fc", 0, Phase::forward);
  profiler->op_begin("adamw", -1, Phase::optimizer);
  profiler->op_end("adamw", -1, Phase::optimizer);
  const profiler::Trace t = profiler->finish();
  EXPECT_FALSE(profiler->records_gpu_activity());
  ASSERT_EQ(t.ranges.size(), 2u);
  EXPECT_EQ(t.ranges[0].name, "c_fc L0 forward");
  EXPECT_EQ(t.ranges[1].name, "adamw optimizer");
  EXPECT_LE(t.ranges[0].time.start_ns, t.ranges[0].time.end_ns);
  EXPECT_LE(t.ranges[0].time.end_ns, t.ranges[1].time.start_ns);
  EXPECT_GT(t.process_id, 0u);
}

DeviceInfo test_cpu() {
  DeviceInfo device;
  device.backend = "cpu";
  device.name = "test CPU";
  device.memory_bytes = 64ull << 30;
  return device;
}

TransformerPlan tiny_plan(std::vector<amp::Mode> modes) {
  TransformerSuiteOptions o;
  o.config = "tiny";
  o.steps = 4;
  o.seed = 5;
  o.profile = true;
  o.modes = std::move(modes);
  return plan_transformer_run(o, test_cpu());
}

TEST(TransformerSuiteProfile, CpuStepsAreProfiledApartFromTheTimedOnes) {
  const TransformerPlan plan = tiny_plan({amp::Mode::fp32});
  ASSERT_EQ(plan.profile_steps, kProfiledSteps);
  ReferenceOps<float> ops;
  const auto outcome = run_transformer_suite(plan, ops, test_cpu(), [](const std::string&) {});
  ASSERT_EQ(outcome.cases.size(), 1u);
  const CaseResult& c = outcome.cases[0];
  ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
  EXPECT_EQ(c.seconds->values.size(), 3u) << "4 steps less 1 of warm-up: the profiled steps are not timed";
  EXPECT_EQ(c.details["loss"].size(), 4u);
  const auto& profile = c.details["profile"];
  EXPECT_EQ(profile["status"], "profiled");
  EXPECT_EQ(profile["steps"], kProfiledSteps);
  const double per_step = static_cast<double>(one_step_ranges(plan.config.layers).size());
  EXPECT_EQ(profile["ranges_per_step"].get<double>(), per_step);
  EXPECT_EQ(c.details["breakdown"]["kernel_count"].get<double>(), per_step)
      << "the timed steps' host breakdown does not count the profiled steps";
  EXPECT_GT(profile["profiled_step_median_s"].get<double>(), 0);
  EXPECT_EQ(profile["unprofiled_step_median_s"].get<double>(), c.seconds->median);
  EXPECT_DOUBLE_EQ(profile["overhead"].get<double>(),
                   profile["profiled_step_median_s"].get<double>() / c.seconds->median - 1);
  EXPECT_FALSE(profile.contains("trace"));
  EXPECT_FALSE(ops.op_listener()) << "the suite stops listening";
  // On the CPU: the input wait is measured, syncs and device time are not there to count.
  const auto& host = c.details["host"];
  EXPECT_GT(host["staging_s_per_step"].get<double>(), 0);
  EXPECT_GT(host["data_s_per_step"].get<double>(), 0);
  EXPECT_LT(host["input_wait_s_per_step"].get<double>(), profile["profiled_step_median_s"].get<double>());
  EXPECT_TRUE(host["host_syncs_per_step"].is_null());
  EXPECT_TRUE(host["kernel_s_per_step"].is_null());
}

// Stands in for CUPTI: every op range launches one 1 us kernel, tied to it by an external id.
class FakeGpuProfiler : public StepProfiler {
 public:
  void op_begin(std::string_view op, int layer, Phase phase) override {
    open_ = {op_range_name(op, layer, phase), {clock_, 0}, 1, ++id_};
    clock_ += 10'000;
  }
  void op_end(std::string_view op, int, Phase) override {
    const auto correlation = static_cast<std::uint32_t>(id_ + 100);
    trace_.api_calls.push_back({"cudaLaunchKernel", {open_.time.start_ns + 10, open_.time.start_ns + 20}, 1, correlation});
    // Reading the loss back is a synchronous copy, as on a GPU: one host sync per step.
    if (op == "loss") trace_.api_calls.push_back({"cudaMemcpy_v3020", {open_.time.start_ns + 30, open_.time.start_ns + 40}, 1, 0});
    trace_.external_correlations.push_back({id_, correlation});
    profiler::KernelRecord k;
    k.name = "_Z10map_kernelIfEvPf";
    k.time = {open_.time.start_ns + 1'000, open_.time.start_ns + 2'000};
    k.where = {0, 7, correlation};
    trace_.kernels.push_back(k);
    open_.time.end_ns = clock_;
    trace_.ranges.push_back(open_);
    clock_ += 10'000;
  }
  profiler::Trace finish() override { return trace_; }
  bool records_gpu_activity() const override { return true; }
  std::string source() const override { return "fake GPU activity"; }

 private:
  profiler::Trace trace_;
  profiler::RangeRecord open_;
  std::uint64_t clock_ = 1'000'000, id_ = 0;
};

TEST(TransformerSuiteProfile, AGpuTraceBecomesABreakdownPerStepWithOpsSummedOverLayers) {
  const TransformerPlan plan = tiny_plan({amp::Mode::fp32});
  ReferenceOps<float> ops;
  const auto outcome = run_transformer_suite(plan, ops, test_cpu(), [](const std::string&) {},
                                             [](const DeviceInfo&, OpsMemory&) { return std::make_unique<FakeGpuProfiler>(); });
  const CaseResult& c = outcome.cases.at(0);
  ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
  const double per_step = static_cast<double>(one_step_ranges(plan.config.layers).size());
  EXPECT_EQ(c.details["profile"]["kernels"], kProfiledSteps * per_step);
  const auto& b = c.details["breakdown"];
  EXPECT_EQ(b["kernel_count"].get<double>(), per_step);
  EXPECT_EQ(b["unattributed_s"].get<double>(), 0);
  EXPECT_EQ(b["unattributed_kernels"].get<double>(), 0);
  double ops_s = 0;
  for (const auto& [op, seconds] : b["ops"].items()) {
    EXPECT_EQ(op.find(" L"), std::string::npos) << op;
    ops_s += seconds.get<double>();
  }
  EXPECT_NEAR(ops_s, per_step * 1e-6, 1e-12) << "one 1 us kernel per range, per step";
  EXPECT_NEAR(b["ops"]["c_fc forward"].get<double>(), plan.config.layers * 1e-6, 1e-12);
  EXPECT_EQ(b["top_kernels"][0]["count"].get<double>(), per_step);
  EXPECT_NE(b["source"].get<std::string>().find("3 profiled steps"), std::string::npos) << b["source"];
  // The host side: the fake's one sync per step, its kernels' device time, the 10 us "inputs" range.
  const auto& host = c.details["host"];
  EXPECT_EQ(host["host_syncs_per_step"].get<double>(), 1.0);
  EXPECT_NEAR(host["kernel_s_per_step"].get<double>(), per_step * 1e-6, 1e-12);
  EXPECT_NEAR(host["staging_s_per_step"].get<double>(), 10e-6, 1e-12);
  EXPECT_DOUBLE_EQ(host["input_wait_s_per_step"].get<double>(),
                   host["data_s_per_step"].get<double>() + host["staging_s_per_step"].get<double>());
  EXPECT_EQ(host["step_s"], c.details["profile"]["profiled_step_median_s"]);
}

class ProfilerThatFails : public FakeGpuProfiler {
 public:
  profiler::Trace finish() override { throw profiler::CuptiUnavailable("CUPTI dropped 7 activity records (test)"); }
};

TEST(TransformerSuiteProfile, WithoutCuptiTheRunGoesOnUnprofiledAndSaysWhyOnce) {
  const TransformerPlan plan = tiny_plan({amp::Mode::fp32, amp::Mode::amp_bf16});
  for (bool fail_at_start : {true, false}) {
    ReferenceOps<float> ops;
    std::vector<std::string> lines;
    const auto outcome = run_transformer_suite(
        plan, ops, test_cpu(), [&](const std::string& l) { lines.push_back(l); },
        [&](const DeviceInfo&, OpsMemory&) -> std::unique_ptr<StepProfiler> {
          if (fail_at_start) throw profiler::CuptiUnavailable("another profiler is attached (test)");
          return std::make_unique<ProfilerThatFails>();
        });
    const std::string reason = fail_at_start ? "another profiler is attached (test)" : "CUPTI dropped 7 activity records (test)";
    ASSERT_EQ(outcome.cases.size(), 2u);
    for (const CaseResult& c : outcome.cases) {
      ASSERT_EQ(c.status, CaseStatus::ok) << c.message;
      EXPECT_EQ(c.details["profile"], (nlohmann::json{{"status", "unprofiled"}, {"reason", reason}}));
      EXPECT_EQ(c.seconds->values.size(), 3u);
      EXPECT_TRUE(c.details.contains("breakdown")) << "the host breakdown of the timed steps stays";
    }
    int notes = 0;
    for (const auto& l : lines) notes += l.find("cannot profile (" + reason + ")") != std::string::npos;
    EXPECT_EQ(notes, 1);
    EXPECT_FALSE(ops.op_listener());
  }
}

TEST(TracePath, TheModeGoesBeforeTheExtension) {
  EXPECT_EQ(trace_path_for("out/trace.json", amp::Mode::amp_bf16), std::filesystem::path("out/trace.amp-bf16.json"));
  EXPECT_EQ(trace_path_for("trace", amp::Mode::fp32), std::filesystem::path("trace.fp32"));
}

}  // namespace
}  // namespace mpbench::workloads
