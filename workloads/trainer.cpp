#include "workloads/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
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
  if (!(options.grad_bucket_mib >= 0) || !std::isfinite(options.grad_bucket_mib))
    throw UsageError("gradient buckets need a size of 0 MiB (one reduction after the backward pass) or more");
}

// Whole tensors from the last to the first (the order the backward pass finishes them), each bucket
// holding at most `mib` MiB of fp32 gradients, or one larger tensor alone. Offsets decrease from
// bucket to bucket. wte and wpe (tensors 0 and 1) are final only at the end of the backward (wte's
// gradient takes the LM head's and the embedding's contributions), so they never share a bucket
// with a block's tensors: they are the last bucket (or two, when both exceed the size).
template <typename Plan>
std::vector<Plan> plan_buckets(const std::vector<ParameterTensor>& tensors, double mib) {
  const double cap = mib * 1024.0 * 1024.0;
  std::vector<Plan> buckets;
  for (std::size_t i = tensors.size(); i-- > 0;) {
    const ParameterTensor& t = tensors[i];
    const bool embeddings_start = i == 1 && tensors.size() > 2;
    if (!buckets.empty() && !embeddings_start && double(buckets.back().elements + t.size) * sizeof(float) <= cap &&
        buckets.back().offset == t.offset + t.size) {
      Plan& b = buckets.back();
      b.first_tensor = i, b.tensors += 1, b.offset = t.offset, b.elements += t.size;
    } else {
      buckets.push_back({i, 1, t.offset, t.size});
    }
  }
  return buckets;
}

// Seconds during which at least one of the buckets was in flight (their [started, done] merged).
double in_flight_seconds(std::vector<StepRecord::Bucket> buckets) {
  std::sort(buckets.begin(), buckets.end(), [](const auto& a, const auto& b) { return a.started < b.started; });
  double total = 0, from = 0, to = -1;
  for (const auto& b : buckets) {
    if (b.started > to) {
      if (to > from) total += to - from;
      from = b.started, to = b.done;
    } else {
      to = std::max(to, b.done);
    }
  }
  if (to > from) total += to - from;
  return total;
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

// The test hook of a rank whose gradients overflow alone (docs/testing.md): with
// MPBENCH_TEST_INF_GRAD_RANK=R and MPBENCH_TEST_INF_GRAD_STEP=S, rank R's gradient norm is infinite
// at step S, as an overflow in its own backward would make it. The step, or -1 where not set for
// this rank.
int test_overflow_step(const TrainOptions& options) {
  const char* rank = std::getenv("MPBENCH_TEST_INF_GRAD_RANK");
  const char* step = std::getenv("MPBENCH_TEST_INF_GRAD_STEP");
  const int mine = options.reducer ? options.reducer->rank() : 0;
  if (!rank || !step || std::string(rank) != std::to_string(mine)) return -1;
  return std::atoi(step);
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
      test_failure_(test_failure(options, mode)),
      test_overflow_step_(test_overflow_step(options)) {
  // A fresh run: no scaler, no count from an earlier one (UsageError for a bad history or margin).
  try {
    ops_.fp8().configure(fp8_recipe(mode), options.fp8_history, options.fp8_margin, options.mx_scale_rounding,
                         options.fp8_keep_forward_copies);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--fp8-history " + std::to_string(options.fp8_history) + " --fp8-margin " +
                     std::to_string(options.fp8_margin) + ": " + e.what());
  }
  model_.init(options.seed);
  if (options.reducer && options.grad_bucket_mib > 0)
    buckets_ = plan_buckets<BucketPlan>(model_.tensors(), options.grad_bucket_mib);
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
  ops_.fp8().weights_changed();
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

void Trainer::backward_reducing_buckets(double loss_weight, StepRecord& record,
                                        std::chrono::steady_clock::time_point step_start) {
  GradientReducer& reducer = *options_.reducer;
  const auto now = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count(); };
  record.buckets.assign(buckets_.size(), {});
  std::vector<bool> done(buckets_.size(), false);
  std::size_t started = 0;
  const auto poll = [&] {
    for (std::size_t b = 0; b < started; ++b)
      if (!done[b] && reducer.test(b)) done[b] = true, record.buckets[b].done = now();
  };
  // Called between the backward's ops: every bucket whose gradients are all final starts now. The
  // time in here is the communication's, not the backward's: exposed (MPI progresses a CPU's
  // all-reduces inside these calls).
  double in_calls = 0;
  const auto start_final = [&](std::size_t final_from) {
    const double entered = now();
    while (started < buckets_.size() && buckets_[started].offset >= final_from) {
      const BucketPlan& plan = buckets_[started];
      StepRecord::Bucket& bucket = record.buckets[started];
      bucket.first_tensor = plan.first_tensor, bucket.tensors = plan.tensors, bucket.elements = plan.elements;
      bucket.started = now();
      const std::size_t number = reducer.start_sum(model_.grads() + plan.offset, plan.elements);
      if (number != started) throw std::logic_error("the reducer numbered a bucket out of order");
      ++started;
    }
    poll();
    in_calls += now() - entered;
  };
  try {
    model_.backward(loss_weight, start_final);
  } catch (...) {
    // Every rank starts the same buckets: those this rank's failed backward did not start are
    // started anyway (their sums are never read: the step fails on every rank, agree_going), so
    // that no other rank waits in one of them.
    try {
      start_final(0);
      for (std::size_t b = 0; b < started; ++b) reducer.wait(b);
    } catch (...) {
    }
    reducer.forget_sums();
    throw;
  }
  // On a GPU the backward's queued work first: the wait below is then the communication's alone.
  ops_.synchronize();
  const auto wait_start = std::chrono::steady_clock::now();
  in_op_range(ops_, "grad_all_reduce", -1, Phase::optimizer, [&] {
    for (std::size_t b = 0; b < started; ++b)
      if (!done[b]) reducer.wait(b), done[b] = true, record.buckets[b].done = now();
  });
  record.exposed_communication_seconds =
      in_calls + std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  reducer.forget_sums();
  record.communication_seconds = std::max(in_flight_seconds(record.buckets), record.exposed_communication_seconds);
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
  // Buckets: the last micro-batch's backward starts their sums (after the ranks agree that every
  // forward went through: the buckets are collectives); earlier micro-batches only accumulate.
  const bool bucketed = reducer && !buckets_.empty();
  then_agree([&] {
    if (!test_failure_.empty()) throw BackendError(test_failure_);
    in_op_range(ops_, "zero_grad", -1, Phase::optimizer, [&] { model_.zero_grad(); });
    ops_.fp8().hold_weights();  // no weight changes before end_step: quantized once for every micro-batch
    for (int micro = 0; micro < options_.micro_batches; ++micro) {
      if (micro > 0) stop_if_interrupted();  // a step of many micro-batches must not outlast Ctrl-C
      const TokenBatch batch = next_batch_of_rank(data);
      record.loss += model_.forward(batch.inputs.data(), batch.targets.data()) / shares;
      if (!bucketed || micro + 1 < options_.micro_batches) model_.backward(record.loss_scale / shares);
    }
  });
  const std::size_t count = model_.parameter_count();
  if (bucketed) {
    then_agree([&] { backward_reducing_buckets(record.loss_scale / shares, record, start); });
    record.loss = reducer->sum(record.loss);
  } else if (reducer) {
    then_agree([&] {
      ops_.synchronize();  // on a GPU: the backward's queued work is not the all-reduce's time
      const auto reduce_start = std::chrono::steady_clock::now();
      in_op_range(ops_, "grad_all_reduce", -1, Phase::optimizer, [&] { reducer->sum(model_.grads(), count); });
      record.communication_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - reduce_start).count();
      record.exposed_communication_seconds = record.communication_seconds;
    });
    record.loss = reducer->sum(record.loss);
  }
  double scaled_norm = 0;
  bool finite = true;
  then_agree([&] {
    in_op_range(ops_, "global_norm", -1, Phase::optimizer, [&] { scaled_norm = ops_.global_norm(model_.grads(), count); });
    if (step_ == test_overflow_step_) scaled_norm = std::numeric_limits<double>::infinity();
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
  if (ops_.fp8().active()) {
    ops_.fp8().end_step();  // delayed scalers: the next step's scales from the amax history
    record.fp8 = ops_.fp8().take_step_details();
  }
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
