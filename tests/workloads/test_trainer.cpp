#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "tests/workloads/gradient_check.hpp"
#include "workloads/reference_ops.hpp"
#include "workloads/trainer.hpp"

namespace mpbench::workloads {
namespace {

TEST(CosineSchedule, WarmupMiddleAndEnd) {
  // 11 steps, 2 of warm-up, then cosine over steps 2..10.
  const auto lr = [](int step) { return cosine_learning_rate(step, 11, 2, 1.0f, 0.1f); };
  EXPECT_FLOAT_EQ(lr(0), 0.5f);
  EXPECT_FLOAT_EQ(lr(1), 1.0f);  // end of warm-up
  EXPECT_FLOAT_EQ(lr(2), 1.0f);  // the cosine starts at the top
  EXPECT_FLOAT_EQ(lr(6), 0.55f);  // half-way: (max + min) / 2
  EXPECT_FLOAT_EQ(lr(10), 0.1f);  // last step: min
  for (int step = 3; step <= 10; ++step) EXPECT_LT(lr(step), lr(step - 1));
}

TEST(GradientClipping, ScalesTheGlobalNormToOne) {
  ReferenceOps<float> ops;
  const auto values = testing::random_values(1000, testing::fresh_seed(), -2.0, 2.0);
  std::vector<float> grads(values.begin(), values.end());
  const double norm = ops.global_norm(grads.data(), grads.size());
  ASSERT_GT(norm, 1.0);
  const double factor = clip_factor(norm, 1.0);
  for (float& g : grads) g = static_cast<float>(g * factor);
  EXPECT_NEAR(ops.global_norm(grads.data(), grads.size()), 1.0, 1e-6);
  EXPECT_EQ(clip_factor(0.5, 1.0), 1.0);  // small gradients pass unchanged
  EXPECT_EQ(clip_factor(5.0, 0.0), 1.0);  // 0 turns clipping off
}

TEST(AdamW, WeightDecayOnlyOnMatricesHandWorked) {
  // One step from zero moments: m_hat = g, v_hat = g^2, so the update is
  // lr * (sign(g) + weight_decay * p) on a matrix and lr * sign(g) elsewhere.
  TrainOptions options;
  options.weight_decay = 0.1f;
  ReferenceOps<float> ops;
  const std::vector<ParameterTensor> tensors{{"matrix", 0, 2, true}, {"bias", 2, 2, false}};
  std::vector<float> params{2.0f, -1.0f, 2.0f, -1.0f};
  const std::vector<float> grads{0.5f, -0.25f, 0.5f, -0.25f};
  AdamW optimizer(options, ops, params.size());
  optimizer.step(params.data(), grads.data(), tensors, 0.1f, 1.0f);
  EXPECT_NEAR(params[0], 2.0 - 0.1 * (1.0 + 0.1 * 2.0), 1e-6);
  EXPECT_NEAR(params[1], -1.0 - 0.1 * (-1.0 + 0.1 * -1.0), 1e-6);
  EXPECT_NEAR(params[2], 2.0 - 0.1, 1e-6);
  EXPECT_NEAR(params[3], -1.0 + 0.1, 1e-6);
  EXPECT_EQ(optimizer.steps_taken(), 1);
}

TEST(AdamW, SecondStepUsesBiasCorrectedMoments) {
  TrainOptions options;
  options.weight_decay = 0.0f;
  ReferenceOps<float> ops;
  const std::vector<ParameterTensor> tensors{{"bias", 0, 1, false}};
  std::vector<float> params{0.0f};
  AdamW optimizer(options, ops, params.size());
  const float first = 1.0f, second_grad = -1.0f;
  optimizer.step(params.data(), &first, tensors, 0.1f, 1.0f);
  optimizer.step(params.data(), &second_grad, tensors, 0.1f, 1.0f);
  // m = 0.09 - 0.1 = -0.01, v = 0.0475 + 0.05 = 0.0975; m_hat = -0.01/0.19, v_hat = 0.0975/0.0975.
  const double second = 0.1 * (-0.01 / 0.19) / 1.0;
  EXPECT_NEAR(params[0], -0.1 - second, 1e-6);
}

TEST(AdamW, GradScaleMultipliesTheGradient) {
  TrainOptions options;
  ReferenceOps<float> ops;
  const std::vector<ParameterTensor> tensors{{"bias", 0, 2, false}};
  std::vector<float> scaled{1.0f, 1.0f}, plain{1.0f, 1.0f};
  AdamW a(options, ops, 2), b(options, ops, 2);
  const float scaled_grads[] = {4.0f, -2.0f}, plain_grads[] = {1.0f, -0.5f};
  a.step(scaled.data(), scaled_grads, tensors, 0.01f, 0.25f);
  b.step(plain.data(), plain_grads, tensors, 0.01f, 1.0f);
  EXPECT_FLOAT_EQ(scaled[0], plain[0]);
  EXPECT_FLOAT_EQ(scaled[1], plain[1]);
}

class TinyTraining : public ::testing::Test {
 protected:
  TrainOptions options() const {
    TrainOptions o;
    o.batch = 4;
    o.seq_len = 16;
    o.steps = 120;
    o.warmup_steps = 10;
    o.max_lr = 1e-2f;
    o.min_lr = 1e-3f;
    o.seed = 3;
    return o;
  }
  const GptConfig config_ = config_by_name("tiny");
  const MarkovChain chain_ = MarkovChain::random(config_.vocab, 3, 11);
  ReferenceOps<float> ops_;
};

TEST_F(TinyTraining, LossFallsTowardTheEntropyFloor) {
  MarkovTokenStream data(chain_, 1);
  const auto curve = train(config_, options(), data, ops_);
  ASSERT_EQ(curve.size(), 120u);
  const double floor = chain_.entropy_rate();
  const double start = curve.front().loss;
  double end = 0;
  for (std::size_t i = curve.size() - 10; i < curve.size(); ++i) end += curve[i].loss / 10;
  EXPECT_NEAR(start, std::log(config_.vocab), 0.2);
  // Most of the way from log(V) to the floor, and never below the floor by more than noise.
  EXPECT_LT(end - floor, 0.15 * (start - floor)) << "start " << start << " end " << end << " floor " << floor;
  EXPECT_GT(end, floor - 0.15);
  for (const StepRecord& r : curve) EXPECT_TRUE(std::isfinite(r.grad_norm));
}

TEST_F(TinyTraining, SameSeedSameCurve) {
  TrainOptions o = options();
  o.steps = 8;
  o.micro_batches = 2;
  MarkovTokenStream first_data(chain_, 4), second_data(chain_, 4), other_data(chain_, 4);
  const auto first = train(config_, o, first_data, ops_);
  const auto second = train(config_, o, second_data, ops_);
  ASSERT_EQ(first.size(), second.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].loss, second[i].loss) << "step " << i;
    EXPECT_EQ(first[i].grad_norm, second[i].grad_norm) << "step " << i;
  }
  o.seed = 4;
  EXPECT_NE(train(config_, o, other_data, ops_).front().loss, first.front().loss);
}

// Counts the batches it hands out and asks for an interrupt at the `interrupt_at`-th.
class InterruptingSource final : public TokenSource {
 public:
  InterruptingSource(const MarkovChain& chain, int interrupt_at) : data_(chain, 5), interrupt_at_(interrupt_at) {}
  TokenBatch next_batch(int batch, int seq_len) override {
    if (++handed_out == interrupt_at_) request_interrupt();
    return data_.next_batch(batch, seq_len);
  }
  int handed_out = 0;

 private:
  MarkovTokenStream data_;
  int interrupt_at_;
};

TEST_F(TinyTraining, AnInterruptStopsAStepBetweenItsMicroBatches) {
  TrainOptions o = options();
  o.micro_batches = 1000;
  Trainer trainer(config_, o, ops_, amp::Mode::fp32);
  InterruptingSource data(chain_, 3);
  EXPECT_THROW(trainer.step(data), Interrupted);
  const bool asked = interrupt_requested();
  clear_interrupt();
  EXPECT_TRUE(asked);
  EXPECT_EQ(data.handed_out, 3) << "the step stops before its fourth micro-batch";
}

}  // namespace
}  // namespace mpbench::workloads
