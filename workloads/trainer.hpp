#pragma once
// Training on TransformerOps in any precision mode: AdamW (decoupled weight decay on matrices only),
// a cosine learning-rate schedule with linear warm-up, clipping by global gradient norm, gradient
// accumulation over micro-batches, and what the mode adds: fp32 master weights where the model
// reads bf16 weights, dynamic loss scaling (GradScaler semantics) in amp-fp16.
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "amp/loss_scaler_math.hpp"
#include "amp/policy.hpp"
#include "workloads/config.hpp"
#include "workloads/data.hpp"
#include "workloads/model.hpp"
#include "workloads/ops.hpp"

namespace mpbench::workloads {

// Data parallelism: what a trainer needs of the job's other ranks, each training the same model on
// its own batches (cli/ makes one on the run's backend and communicator).
class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string library() const = 0;
  virtual std::string dtype() const = 0;  // what the gradients travel in: fp32, bf16 or fp16
  // grads[0, count) (fp32, in the ops' memory) summed over the ranks, in place; done when it returns.
  virtual void sum(float* grads, std::size_t count) = 0;
  // A bucket of the overlapped reduction (TrainOptions::grad_bucket_mib): starts summing
  // grads[0, count) over the ranks in place and returns at once, with the bucket's number (0, 1,
  // ... in the order of the step's start_sum calls; every rank starts the same buckets in the same
  // order). The bucket's gradients must be left alone until test(number) has said true or
  // wait(number) has returned; forget_sums() after every bucket of the step is done numbers the
  // next step's from 0 again. The defaults sum at once (sum above): nothing overlaps.
  virtual std::size_t start_sum(float* grads, std::size_t count) {
    sum(grads, count);
    return started_++;
  }
  // Lets the started sums progress (MPI_Test); true once bucket `number` is summed.
  virtual bool test(std::size_t /*number*/) { return true; }
  virtual void wait(std::size_t /*number*/) {}
  virtual void forget_sums() { started_ = 0; }
  // A host value summed over the ranks (the step's loss), and the largest of the ranks' values (the
  // loss scaler's found-inf flag).
  virtual double sum(double value) = 0;
  virtual double max(double value) = 0;
  // Collective, made by every rank before each collective of a step: this rank's word on whether it
  // can go on (`failure` empty) or not (why). Returns when every rank can; otherwise throws
  // RankFailed on every rank alike, naming the lowest rank that cannot and its reason. A rank that
  // fails alone must not leave the others waiting in the step's next collective.
  virtual void agree_going(const std::string& failure) = 0;

 private:
  std::size_t started_ = 0;
};

// A rank of a data-parallel job could not go on, as every rank agreed (GradientReducer::agree_going):
// the job ends on every rank, not only the mode.
class RankFailed : public std::runtime_error {
 public:
  RankFailed(int rank, const std::string& reason)
      : std::runtime_error("rank " + std::to_string(rank) + " failed: " + reason), rank_(rank), reason_(reason) {}
  int rank() const { return rank_; }
  const std::string& reason() const { return reason_; }

 private:
  int rank_;
  std::string reason_;
};

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
  amp::ScalerConfig scaler;  // used by modes with dynamic loss scaling
  AttentionKernels attention = AttentionKernels::unfused;
  ActivationStorage activation_storage = ActivationStorage::half;  // asked for; see Gpt2Model
  // Several ranks: rank r takes batch r of every `world size` batches, and each step's gradients
  // are summed over the ranks. nullptr: one process.
  GradientReducer* reducer = nullptr;
  // With a reducer: the gradients are summed in buckets of whole parameter tensors of at most this
  // many MiB of fp32 gradients each (a larger tensor is a bucket of its own), made in the order the
  // backward pass finishes them (last layer first), each started as soon as the last micro-batch's
  // backward has finished its tensors, while the backward goes on (PyTorch DDP's bucket_cap_mb,
  // 25 by default); wte and wpe, final only at the backward's end, are the last bucket, never
  // shared with a block's tensors. The optimizer waits for all of them. 0: one sum of every gradient after the
  // backward pass.
  double grad_bucket_mib = 25;
  // fp8-delayed: the amax history's length in steps and the margin (scale / 2^margin) of every
  // tensor's DelayedScaler; fp8-current takes the margin too. Transformer Engine's defaults.
  int fp8_history = kFp8DefaultHistory;
  int fp8_margin = kFp8DefaultMargin;
  // mxfp8: how the block scales round (Fp8GemmQuantizer::configure).
  amp::MxScaleRounding mx_scale_rounding = amp::MxScaleRounding::down;
  // fp8-delayed, fp8-current: the backward reuses the forward's fp8 inputs and weights (false:
  // quantizes them again; Fp8GemmQuantizer::configure).
  bool fp8_keep_forward_copies = true;
};

// Linear warm-up to max_lr over the first warmup_steps steps (step 0 gets max_lr / warmup_steps),
// then cosine decay from max_lr to min_lr, reached at the last step (total_steps - 1).
float cosine_learning_rate(int step, int total_steps, int warmup_steps, float max_lr, float min_lr);

// The factor that brings a gradient of global norm `norm` down to max_norm (1 when it is below).
double clip_factor(double norm, double max_norm);

// AdamW over a parameter buffer in the ops' memory, one (m, v) pair per parameter, in fp32.
class AdamW {
 public:
  AdamW(const TrainOptions& options, TransformerOps<float>& ops, std::size_t parameters);
  // One update of every tensor; weight decay only on tensors marked is_matrix. Each gradient is
  // multiplied by grad_scale first (clipping, loss-scale removal).
  void step(float* params, const float* grads, const std::vector<ParameterTensor>& tensors, float lr,
            float grad_scale);
  int steps_taken() const { return t_; }
  std::size_t state_bytes() const { return m_.bytes() + v_.bytes(); }

 private:
  TrainOptions options_;
  TransformerOps<float>& ops_;
  OpsArray<float> m_, v_;
  int t_ = 0;
};

struct StepRecord {
  int step = 0;
  double loss = 0;         // mean over the step's micro-batches
  double grad_norm = 0;    // before clipping, after removing the loss scale; inf on a skipped step
  double lr = 0;
  double loss_scale = 1;   // the scale this step's backward used (1 without loss scaling)
  bool skipped = false;    // non-finite gradients: the optimizer step was skipped
  double seconds = 0;      // wall time of the step, device work included
  // Data parallelism: how long the gradients' all-reduce took (from the first bucket's start to the
  // last one's end, less the gaps with none in flight), and the part of it not hidden by compute
  // (exposed): the time this rank spent in the reducer's calls during the backward pass (starting
  // and testing buckets) and the optimizer's wait for them after it. The single reduction after the
  // backward pass is all exposed.
  double communication_seconds = 0;
  double exposed_communication_seconds = 0;
  struct Bucket {
    std::size_t first_tensor = 0, tensors = 0;  // model().tensors()[first_tensor, first_tensor + tensors)
    std::size_t elements = 0;
    // Seconds from the step's start: when its sum was started, and when this rank saw it done (a
    // test() between two ops of the backward, or the optimizer's wait).
    double started = 0, done = 0;
  };
  std::vector<Bucket> buckets;  // of the overlapped reduction, in start order; empty with one sum
  // The fp8 modes: this step's quantization counts per operand kind (saturated, underflowed) and,
  // delayed, the scale changes at the step's end (Fp8GemmQuantizer::take_step_details); else null.
  nlohmann::json fp8;
};

// Bytes a Trainer allocates through the ops: weights, gradients, the fp32 master copy where the
// mode keeps one, AdamW's two moments, and the model's activations (activation_bytes_estimate) on
// ops with or without half storage. The ops' own workspace (GEMM scratch) comes on top.
std::size_t training_bytes_estimate(const GptConfig& config, const TrainOptions& options, amp::Mode mode,
                                    bool ops_have_half_storage);

// Why the Transformer cannot train in `mode` on a device with capability table `table` (the
// workload's own rule for the mode's GEMM precision first, e.g. no fp8 path), or nothing when it can.
std::optional<std::string> unsupported_mode(const CapabilityTable& table, amp::Mode mode);
// The same for the device `ops` run on.
std::optional<std::string> unsupported_mode(TransformerOps<float>& ops, amp::Mode mode);

class Trainer {
 public:
  // Throws UsageError for bad options, or a mode or attention kernels the ops cannot run.
  Trainer(const GptConfig& config, const TrainOptions& options, TransformerOps<float>& ops, amp::Mode mode);

  // One optimizer step over options.micro_batches batches from `data`. Throws BackendError when the
  // loss becomes NaN or inf in a mode without loss scaling, and Interrupted (core/error.hpp)
  // when an interrupt comes between two micro-batches (the step is then dropped, not taken). With
  // a reducer, whatever else fails on this rank is first agreed with the other ranks before the
  // step's next collective: RankFailed then, on every rank.
  StepRecord step(TokenSource& data);

  Gpt2Model<float>& model() { return model_; }
  // Where the fp32 weights the optimizer updates live: the master copy, or the model's own weights.
  float* master_params();
  bool has_master_copy() const { return master_.size() > 0; }
  // Replaces the weights (e.g. from a checkpoint); the model's copy is refreshed from them.
  void load_params(const std::vector<float>& values);
  const amp::ScalerState& scaler() const { return scaler_; }
  bool loss_scaling() const { return loss_scaling_; }
  // Bytes of weights, master, gradients and optimizer moments allocated.
  std::size_t model_state_bytes() const;

 private:
  void refresh_working_weights();
  TokenBatch next_batch_of_rank(TokenSource& data);
  // The last micro-batch's backward pass with the buckets' sums started as their gradients are
  // final, then the wait for all of them; fills the record's communication.
  void backward_reducing_buckets(double loss_weight, StepRecord& record,
                                 std::chrono::steady_clock::time_point step_start);

  struct BucketPlan {
    std::size_t first_tensor, tensors, offset, elements;
  };

  TrainOptions options_;
  TransformerOps<float>& ops_;
  amp::Mode mode_;
  Gpt2Model<float> model_;
  OpsArray<float> master_;
  AdamW optimizer_;
  bool loss_scaling_;
  amp::ScalerState scaler_;
  std::vector<BucketPlan> buckets_;  // in the order the backward finishes them; empty: one sum
  int step_ = 0;
  std::string test_failure_;  // MPBENCH_TEST_FAIL_RANK/MODE's failure for this rank and mode, or empty
  int test_overflow_step_;    // MPBENCH_TEST_INF_GRAD_RANK/STEP's step for this rank, or -1
};

// Trains config from options.seed on batches from `data`; returns one record per step.
std::vector<StepRecord> train(const GptConfig& config, const TrainOptions& options, TokenSource& data,
                              TransformerOps<float>& ops, amp::Mode mode = amp::Mode::fp32);

}  // namespace mpbench::workloads
