#pragma once
// fp32 training on TransformerOps: AdamW (decoupled weight decay on matrices only), a cosine
// learning-rate schedule with linear warm-up, clipping by global gradient norm, and gradient
// accumulation over micro-batches.
#include <cstdint>
#include <vector>

#include "workloads/config.hpp"
#include "workloads/data.hpp"
#include "workloads/model.hpp"
#include "workloads/ops.hpp"

namespace mpbench::workloads {

struct TrainOptions {
  int batch = 4;          // sequences per micro-batch
  int seq_len = 16;       // tokens per sequence, <= config.max_seq
  int micro_batches = 1;  // gradient accumulation: one optimizer step per this many micro-batches
  int steps = 10;
  int warmup_steps = 2;
  float max_lr = 6e-4f;
  float min_lr = 6e-5f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  float grad_clip = 1.0f;  // max global gradient norm; 0 turns clipping off
  std::uint64_t seed = 1;  // model initialisation
};

// Linear warm-up to max_lr over the first warmup_steps steps (step 0 gets max_lr / warmup_steps),
// then cosine decay from max_lr to min_lr, reached at the last step (total_steps - 1).
float cosine_learning_rate(int step, int total_steps, int warmup_steps, float max_lr, float min_lr);

// The factor that brings a gradient of global norm `norm` down to max_norm (1 when it is below).
double clip_factor(double norm, double max_norm);

// AdamW over a model's parameter buffer, one (m, v) pair per parameter.
class AdamW {
 public:
  explicit AdamW(const TrainOptions& options) : options_(options) {}
  // One update of every tensor; weight decay only on tensors marked is_matrix.
  void step(TransformerOps<float>& ops, std::vector<float>& params, const std::vector<float>& grads,
            const std::vector<ParameterTensor>& tensors, float lr, float grad_scale);
  int steps_taken() const { return t_; }

 private:
  TrainOptions options_;
  std::vector<float> m_, v_;
  int t_ = 0;
};

struct StepRecord {
  int step = 0;
  double loss = 0;       // mean over the step's micro-batches
  double grad_norm = 0;  // before clipping
  double lr = 0;
};

// Trains config from options.seed on batches from `data` in fp32; returns one record per step.
std::vector<StepRecord> train_fp32(const GptConfig& config, const TrainOptions& options, TokenSource& data,
                                   TransformerOps<float>& ops);

}  // namespace mpbench::workloads
