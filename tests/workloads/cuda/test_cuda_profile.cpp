// A profiled training step of the tiny model on the GPU: CUPTI records its kernels and every one
// is attributed to an op range through the external correlation ids the ranges push; a counted
// step gives every kernel its tensor pipe %, busy in bf16 GEMMs and idle in mpbench's own
// kernels. Skipped, with the reason, where no GPU is usable or CUPTI cannot collect (another
// profiler, no permission for counters).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "backends/cuda/cuda_device.hpp"
#include "core/error.hpp"
#include "profiler/attribute.hpp"
#include "profiler/breakdown.hpp"
#include "profiler/classify.hpp"
#include "profiler/cupti_collector.hpp"
#include "workloads/config.hpp"
#include "workloads/cuda/cuda_ops.hpp"
#include "workloads/data.hpp"
#include "workloads/step_profiler.hpp"
#include "workloads/trainer.hpp"

namespace mpbench::workloads {
namespace {

// The tiny model training in amp-bf16 on GPU 0, one step taken (module loads and cuBLASLt
// heuristics stay out of what the tests record).
class CudaProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = cuda::unavailable_reason()) GTEST_SKIP() << "no usable GPU: " << *why;
    try {
      ops_ = std::make_unique<CudaTransformerOps>(cuda::make_device(0));
    } catch (const UsageError& e) {
      GTEST_SKIP() << "no usable GPU: " << e.what();
    }
    TrainOptions options;
    options.batch = 4;
    options.seq_len = 16;
    options.steps = 3;
    trainer_ = std::make_unique<Trainer>(config_by_name("tiny"), options, *ops_, amp::Mode::amp_bf16);
    trainer_->step(data_);
  }

  // One step with `listener` told of every op range.
  void step_with(StepProfiler& listener) {
    ops_->listen_to_ops(&listener);
    trainer_->step(data_);
    ops_->listen_to_ops(nullptr);
  }

  std::unique_ptr<CudaTransformerOps> ops_;
  std::unique_ptr<Trainer> trainer_;
  MarkovTokenStream data_{MarkovChain::random(config_by_name("tiny").vocab, 3, 1), 2};
};

TEST_F(CudaProfile, EveryKernelOfATinyStepIsAttributedToAnOp) {
  std::unique_ptr<StepProfiler> recorder;
  try {
    recorder = cupti_step_profiler(*ops_);
  } catch (const profiler::CuptiUnavailable& e) {
    if (!e.refused_by_the_machine()) FAIL() << e.what();
    GTEST_SKIP() << "CUPTI cannot collect here: " << e.what();
  }
  step_with(*recorder);
  const profiler::Trace trace = recorder->finish();

  ASSERT_GT(trace.kernels.size(), 0u);
  EXPECT_GT(trace.ranges.size(), 0u);
  EXPECT_GT(trace.external_correlations.size(), 0u);
  const auto attributions = profiler::attribute_kernels(trace);
  for (std::size_t i = 0; i < trace.kernels.size(); ++i)
    EXPECT_TRUE(attributions.per_kernel[i].range) << "kernel not attributed to an op: " << trace.kernels[i].name;
  const profiler::Breakdown b = profiler::compute_breakdown(trace);
  double gpu_s = 0;
  for (const auto& [category, seconds] : b.categories) gpu_s += seconds;
  ASSERT_GT(gpu_s, 0);
  EXPECT_LT(b.unattributed_s, 0.01 * gpu_s) << "unattributed GPU time (kernels and copies) above 1%";
  EXPECT_TRUE(b.ops.contains("c_fc L0 forward"));
  EXPECT_TRUE(b.ops.contains("adamw optimizer"));
}

TEST_F(CudaProfile, CountedStepMeasuresTensorCoresInGemmsOnly) {
  std::unique_ptr<StepProfiler> counter;
  try {
    counter = counting_step_profiler(*ops_, 1 << 14);
  } catch (const profiler::CuptiUnavailable& e) {
    // Any refusal skips: which codes a virtualised GPU answers the range profiler with is unknown.
    GTEST_SKIP() << "no hardware counters here: " << e.what();
  }
  step_with(*counter);
  const profiler::Trace trace = counter->finish();
  ASSERT_TRUE(counter->counted_metric().has_value());
  ASSERT_GT(trace.kernels.size(), 0u);
  double gemm_max = 0, own_max = 0;
  for (const profiler::KernelRecord& k : trace.kernels) {
    ASSERT_TRUE(k.tensor_pipe_pct.has_value()) << k.name;
    const profiler::Classification c = profiler::classify_kernel(k);
    if (profiler::is_gemm(c.category)) gemm_max = std::max(gemm_max, *k.tensor_pipe_pct);
    if (profiler::is_mpbench_kernel(k.name)) own_max = std::max(own_max, *k.tensor_pipe_pct);
  }
  // The tiny model's GEMMs run on a CTA or two for a few hundred cycles: their share of the SMs'
  // active cycles is small, but not zero, where mpbench's kernels are.
  EXPECT_GT(gemm_max, 0.0) << *counter->counted_metric() << ": bf16 GEMMs use the tensor pipe";
  EXPECT_LT(own_max, 0.1) << "mpbench's elementwise kernels never touch it";
}

}  // namespace
}  // namespace mpbench::workloads
