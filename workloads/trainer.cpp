#include "workloads/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <numbers>

#include "core/error.hpp"
#include "core/interrupt.hpp"

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

AdamW::AdamW(const TrainOptions& options, TransformerOps<float>& ops, std::size_t parameters)
    : options_(options), ops_(ops), m_(ops, parameters), v_(ops, parameters) {}

void AdamW::step(float* params, const float* grads, const std::vector<ParameterTensor>& tensors, float lr,
                 float grad_scale) {
  ++t_;
  for (const ParameterTensor& t : tensors) {
    if (t.offset + t.size > m_.size()) throw std::out_of_range("AdamW: tensor " + t.name + " is past the moments");
    const AdamWStep hyper{lr,
                          options_.beta1,
                          options_.beta2,
                          options_.eps,
                          t.is_matrix ? options_.weight_decay : 0.0f,
                          grad_scale,
                          t_};
    ops_.adamw_update(params + t.offset, grads + t.offset, m_.data() + t.offset, v_.data() + t.offset, t.size,
                      hyper);
  }
}

std::size_t training_bytes_estimate(const GptConfig& config, const TrainOptions& options, amp::Mode mode,
                                    bool ops_have_half_storage) {
  const std::size_t parameters = static_cast<std::size_t>(parameter_count(config));
  const bool master = amp::policy(mode).weight_storage != num::Format::fp32;
  const std::size_t arrays = 2 + (master ? 1 : 0) + 2;  // weights, gradients, master, m, v
  const ActivationStorage storage = activation_storage_for(options.activation_storage, ops_have_half_storage, mode);
  return arrays * parameters * sizeof(float) +
         activation_bytes_estimate(config, options.batch, options.seq_len, options.attention, mode, storage);
}

std::optional<std::string> unsupported_mode(const CapabilityTable& table, amp::Mode mode) {
  GemmCapability row = workload_gemm_capability(table, gemm_precision(mode));
  if (row.path == GemmPath::unsupported) return std::move(row.reason);
  return std::nullopt;
}

std::optional<std::string> unsupported_mode(TransformerOps<float>& ops, amp::Mode mode) {
  return unsupported_mode(ops.capabilities(), mode);
}

namespace {

void check_options(const TrainOptions& options) {
  if (options.steps < 1 || options.micro_batches < 1 || options.warmup_steps < 0) {
    throw UsageError("training needs steps >= 1, micro-batches >= 1 and warm-up steps >= 0");
  }
}

const GptConfig& checked(const GptConfig& config, const TrainOptions& options, TransformerOps<float>& ops,
                         amp::Mode mode) {
  check_options(options);
  if (const auto reason = unsupported_mode(ops, mode)) throw UsageError(*reason);
  if (const auto reason = ops.attention_unsupported(options.attention, gemm_precision(mode), {config.head_size(), options.seq_len}))
    throw UsageError(*reason);
  return config;
}

// The test hook of a rank that fails alone (docs/testing.md): MPBENCH_TEST_FAIL_RANK=R and
// MPBENCH_TEST_FAIL_MODE=MODE make rank R throw at the start of each of MODE's steps. The failure's
// message, or empty when the hook is not set for this rank and mode.
std::string test_failure(const TrainOptions& options, amp::Mode mode) {
  const char* rank = std::getenv("MPBENCH_TEST_FAIL_RANK");
  const char* mode_name = std::getenv("MPBENCH_TEST_FAIL_MODE");
  if (!rank || !mode_name || mode_name != std::string(amp::mode_name(mode))) return "";
  const int mine = options.reducer ? options.reducer->rank() : 0;
  if (std::string(rank) != std::to_string(mine)) return "";
  return std::string("the test hook MPBENCH_TEST_FAIL_RANK=") + rank + " MPBENCH_TEST_FAIL_MODE=" + mode_name +
         " failed this rank's step";
}

}  // namespace

Trainer::Trainer(const GptConfig& config, const TrainOptions& options, TransformerOps<float>& ops, amp::Mode mode)
    : options_(options),
      ops_(ops),
      mode_(mode),
      model_(checked(config, options, ops, mode), options.batch, options.seq_len, ops, mode, options.attention,
             options.activation_storage),
      optimizer_(options, ops, model_.parameter_count()),
      loss_scaling_(amp::policy(mode).loss_scaling == amp::LossScaling::dynamic),
      scaler_(amp::initial_scaler_state(options.scaler)),
      test_failure_(test_failure(options, mode)) {
  model_.init(options.seed);
  // The model reads low-precision weights only where the policy stores them so; the fp32 master
  // copy is then separate. In the amp modes the weights themselves are fp32 (the GEMMs read them
  // rounded, as autocast's cast cache does) and are what the optimizer updates.
  if (amp::policy(mode).weight_storage != num::Format::fp32) {
    master_ = OpsArray<float>(ops, model_.parameter_count());
    ops_.copy(master_.data(), model_.params(), model_.parameter_count());
    refresh_working_weights();
  }
}

float* Trainer::master_params() { return has_master_copy() ? master_.data() : model_.params(); }

void Trainer::refresh_working_weights() {
  if (!has_master_copy()) return;
  ops_.copy(model_.params(), master_.data(), model_.parameter_count());
  ops_.round_to(model_.params(), model_.parameter_count(), model_.policy().weight_storage);
}

void Trainer::load_params(const std::vector<float>& values) {
  model_.upload_params(values);
  if (has_master_copy()) {
    master_.upload(values);
    refresh_working_weights();
  }
}

std::size_t Trainer::model_state_bytes() const {
  const std::size_t weights = model_.parameter_count() * sizeof(float);
  return weights * 2 + master_.bytes() + optimizer_.state_bytes();  // weights, gradients, master, moments
}

// This rank's batch: rank r of R takes batch r of every R, so R ranks see the batches one rank
// would see over R micro-batches.
TokenBatch Trainer::next_batch_of_rank(TokenSource& data) {
  const int ranks = options_.reducer ? options_.reducer->world_size() : 1;
  const int rank = options_.reducer ? options_.reducer->rank() : 0;
  TokenBatch mine;
  for (int r = 0; r < ranks; ++r) {
    TokenBatch batch = data.next_batch(options_.batch, options_.seq_len);
    if (r == rank) mine = std::move(batch);
  }
  return mine;
}

StepRecord Trainer::step(TokenSource& data) {
  const auto start = std::chrono::steady_clock::now();
  StepRecord record;
  record.step = step_;
  record.loss_scale = loss_scaling_ ? scaler_.scale : 1.0;
  GradientReducer* reducer = options_.reducer;
  // Data parallelism: `work` is this rank's alone; before the collective that follows it, every
  // rank says whether it got through (an interrupt is not a failure: it stops the step as before).
  const auto then_agree = [reducer](auto&& work) {
    if (!reducer) return work();
    std::string failure;
    try {
      work();
    } catch (const Interrupted&) {
      throw;
    } catch (const RankFailed&) {
      throw;
    } catch (const std::exception& e) {
      failure = *e.what() ? e.what() : "an error without a message";
    }
    reducer->agree_going(failure);
  };
  const int ranks = reducer ? reducer->world_size() : 1;
  // The mean over every rank's micro-batches: each rank's share of the sum is 1 / (micro * ranks).
  const int shares = options_.micro_batches * ranks;
  then_agree([&] {
    if (!test_failure_.empty()) throw BackendError(test_failure_);
    in_op_range(ops_, "zero_grad", -1, Phase::optimizer, [&] { model_.zero_grad(); });
    for (int micro = 0; micro < options_.micro_batches; ++micro) {
      if (micro > 0) stop_if_interrupted();  // a step of many micro-batches must not outlast Ctrl-C
      const TokenBatch batch = next_batch_of_rank(data);
      record.loss += model_.forward(batch.inputs.data(), batch.targets.data()) / shares;
      model_.backward(record.loss_scale / shares);
    }
  });
  const std::size_t count = model_.parameter_count();
  if (reducer) {
    then_agree([&] {
      const auto reduce_start = std::chrono::steady_clock::now();
      in_op_range(ops_, "grad_all_reduce", -1, Phase::optimizer, [&] { reducer->sum(model_.grads(), count); });
      record.communication_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - reduce_start).count();
    });
    record.loss = reducer->sum(record.loss);
  }
  double scaled_norm = 0;
  bool finite = true;
  then_agree([&] {
    in_op_range(ops_, "global_norm", -1, Phase::optimizer, [&] { scaled_norm = ops_.global_norm(model_.grads(), count); });
    record.grad_norm = scaled_norm / record.loss_scale;
    record.lr = cosine_learning_rate(step_, options_.steps, options_.warmup_steps, options_.max_lr, options_.min_lr);
    finite = std::isfinite(scaled_norm) && std::isfinite(record.loss);
  });
  // Every rank skips the same steps and keeps the same scale: the found-inf flag over the ranks.
  if (reducer) finite = reducer->max(finite ? 0.0 : 1.0) == 0.0;
  if (!finite && !loss_scaling_) {
    throw BackendError(std::string(amp::mode_name(mode_)) + " training diverged: the " +
                       (std::isfinite(record.loss) ? "gradient norm" : "loss") + " is not finite at step " +
                       std::to_string(step_) + " (loss " + std::to_string(record.loss) + ")");
  }
  if (finite) {
    const double unscale = 1.0 / record.loss_scale;
    const double factor = clip_factor(record.grad_norm, options_.grad_clip) * unscale;
    in_op_range(ops_, "adamw", -1, Phase::optimizer, [&] {
      optimizer_.step(master_params(), model_.grads(), model_.tensors(), static_cast<float>(record.lr),
                      static_cast<float>(factor));
      refresh_working_weights();
    });
  } else {
    record.skipped = true;
  }
  if (loss_scaling_) {
    scaler_.found_inf = finite ? 0 : 1;
    amp::update_scale(scaler_, options_.scaler);
  }
  ops_.synchronize();
  record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++step_;
  return record;
}

std::vector<StepRecord> train(const GptConfig& config, const TrainOptions& options, TokenSource& data,
                              TransformerOps<float>& ops, amp::Mode mode) {
  Trainer trainer(config, options, ops, mode);
  std::vector<StepRecord> curve;
  for (int step = 0; step < options.steps; ++step) curve.push_back(trainer.step(data));
  return curve;
}

}  // namespace mpbench::workloads
