#include "workloads/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.hpp"

namespace mpbench::workloads {

float cosine_learning_rate(int step, int total_steps, int warmup_steps, float max_lr, float min_lr) {
  if (step < warmup_steps) return max_lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
  const int decay_steps = total_steps - 1 - warmup_steps;
  if (decay_steps <= 0) return max_lr;
  const double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / decay_steps);
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return static_cast<float>(min_lr + cosine * (max_lr - min_lr));
}

double clip_factor(double norm, double max_norm) {
  return max_norm > 0 && norm > max_norm ? max_norm / norm : 1.0;
}

void AdamW::step(TransformerOps<float>& ops, std::vector<float>& params, const std::vector<float>& grads,
                 const std::vector<ParameterTensor>& tensors, float lr, float grad_scale) {
  if (m_.size() != params.size()) {
    m_.assign(params.size(), 0.0f);
    v_.assign(params.size(), 0.0f);
  }
  ++t_;
  for (const ParameterTensor& t : tensors) {
    const AdamWStep hyper{lr,
                          options_.beta1,
                          options_.beta2,
                          options_.eps,
                          t.is_matrix ? options_.weight_decay : 0.0f,
                          grad_scale,
                          t_};
    ops.adamw_update(params.data() + t.offset, grads.data() + t.offset, m_.data() + t.offset,
                     v_.data() + t.offset, t.size, hyper);
  }
}

std::vector<StepRecord> train_fp32(const GptConfig& config, const TrainOptions& options, TokenSource& data,
                                   TransformerOps<float>& ops) {
  if (options.steps < 1 || options.micro_batches < 1 || options.warmup_steps < 0) {
    throw UsageError("training needs steps >= 1, micro-batches >= 1 and warm-up steps >= 0");
  }
  Gpt2Model<float> model(config, options.batch, options.seq_len, ops);
  model.init(options.seed);
  AdamW optimizer(options);
  std::vector<StepRecord> curve;
  for (int step = 0; step < options.steps; ++step) {
    model.zero_grad();
    double loss = 0;
    for (int micro = 0; micro < options.micro_batches; ++micro) {
      const TokenBatch batch = data.next_batch(options.batch, options.seq_len);
      loss += model.forward(batch.inputs.data(), batch.targets.data()) / options.micro_batches;
      model.backward(1.0 / options.micro_batches);
    }
    if (!std::isfinite(loss)) {
      throw BackendError("fp32 training diverged: the loss is " + std::to_string(loss) + " at step " +
                         std::to_string(step));
    }
    const double norm = ops.global_norm(model.grads().data(), model.grads().size());
    const float lr = cosine_learning_rate(step, options.steps, options.warmup_steps, options.max_lr, options.min_lr);
    optimizer.step(ops, model.params(), model.grads(), model.tensors(), lr,
                   static_cast<float>(clip_factor(norm, options.grad_clip)));
    curve.push_back({step, loss, norm, lr});
  }
  return curve;
}

}  // namespace mpbench::workloads
