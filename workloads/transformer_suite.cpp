#include "workloads/transformer_suite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "amp/memory.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/peaks.hpp"
#include "core/progress.hpp"
#include "core/stats.hpp"
#include "profiler/attribute.hpp"
#include "profiler/breakdown.hpp"
#include "profiler/cupti_collector.hpp"
#include "profiler/host_evidence.hpp"
#include "profiler/kernel_counters.hpp"
#include "profiler/trace_export.hpp"
#include "workloads/checkpoint.hpp"
#include "workloads/data.hpp"
#include "workloads/model.hpp"

namespace mpbench::workloads {
namespace {

constexpr int kMarkovSuccessors = 4;  // successors per token of the synthetic chain
// Bounds that keep every size product of a plan far inside 64 bits and every run finite.
constexpr int kMaxBatch = 1 << 20;
constexpr int kMaxMicroBatches = 1 << 16;
constexpr int kMaxSteps = 1 << 20;
constexpr double kMemoryHeadroom = 0.9;  // leave a tenth of the device to the ops' workspace and others

bool on_cpu(const DeviceInfo& device) { return device.backend != "cuda"; }

int default_batch(const GptConfig& config, const DeviceInfo& device) {
  if (config.name == "tiny" || config.name == "small") return 4;
  return on_cpu(device) ? 1 : 8;
}

std::vector<amp::Mode> default_modes() {
  return {amp::Mode::fp32, amp::Mode::tf32, amp::Mode::amp_fp16, amp::Mode::amp_bf16, amp::Mode::bf16};
}

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }

// The CPU and CUDA ops both hold activations in half storage.
constexpr bool kHalfStorageOps = true;

std::size_t training_bytes(const TransformerPlan& plan, const TrainOptions& options, amp::Mode mode) {
  return training_bytes_estimate(plan.config, options, mode, kHalfStorageOps);
}

// The attention kernels a mode's memory is estimated with before the ops exist: the ones asked for,
// else those --attention auto picks where it can (cuDNN's fused attention, for fp16 and bf16 GEMMs
// on a GPU). Should the fused kernels be unavailable there, the mode runs unfused, and a shortfall
// is that mode's out-of-memory error rather than a refusal of the whole run.
TrainOptions estimated_options(const TransformerPlan& plan, const DeviceInfo& device, amp::Mode mode, int batch) {
  TrainOptions options = plan.train;
  options.batch = batch;
  const bool fused_possible = device.backend == "cuda" && fused_attention_takes(gemm_precision(mode));
  options.attention = plan.attention.value_or(fused_possible ? AttentionKernels::fused : AttentionKernels::unfused);
  return options;
}

// What the plan's most demanding mode needs at `batch`, and that mode.
std::pair<std::size_t, amp::Mode> largest_need(const TransformerPlan& plan, const DeviceInfo& device, int batch) {
  std::pair<std::size_t, amp::Mode> largest{0, plan.modes.front()};
  for (amp::Mode mode : plan.modes) {
    const std::pair<std::size_t, amp::Mode> need{training_bytes(plan, estimated_options(plan, device, mode, batch), mode),
                                                 mode};
    largest = std::max(largest, need);
  }
  return largest;
}

void check_memory(const TransformerPlan& plan, const DeviceInfo& device) {
  if (device.memory_bytes == 0 || plan.modes.empty()) return;
  const double available = kMemoryHeadroom * static_cast<double>(device.memory_bytes);
  const auto [need, mode] = largest_need(plan, device, plan.train.batch);
  if (static_cast<double>(need) <= available) return;
  // The need grows with the batch: the largest batch that fits, by bisection over [0, batch).
  int fits = 0, too_large = plan.train.batch;
  while (too_large - fits > 1) {
    const int middle = fits + (too_large - fits) / 2;
    (static_cast<double>(largest_need(plan, device, middle).first) <= available ? fits : too_large) = middle;
  }
  const TrainOptions options = estimated_options(plan, device, mode, plan.train.batch);
  const std::size_t activations =
      activation_bytes_estimate(plan.config, options.batch, options.seq_len, options.attention, mode,
                                activation_storage_for(options.activation_storage, kHalfStorageOps, mode));
  throw UsageError(fmt::format(
      "config {} with --batch {} --seq {} needs {} in {} with {} attention ({} of activations, {} of weights, "
      "gradients, master and optimizer state) but {} has {} ({} usable): {}",
      plan.config.name, plan.train.batch, plan.train.seq_len, gib(double(need)), amp::mode_name(mode),
      attention_kernels_name(options.attention), gib(double(activations)), gib(double(need - activations)),
      device.name, gib(double(device.memory_bytes)), gib(available),
      fits > 0 ? fmt::format("--batch {} fits (use --micro-batches to keep the tokens per step)", fits)
               : "not even --batch 1 fits: use a shorter --seq or a smaller --config"));
}

struct AttentionChoice {
  AttentionKernels kernels = AttentionKernels::unfused;
  std::string note;  // why auto chose unfused kernels, when it did
};

AttentionDims attention_dims(const TransformerPlan& plan) {
  return {plan.config.head_size(), plan.train.seq_len};
}

// The plan's kernels; with auto, fused where the ops have them for the mode's GEMM precision (the
// fused kernels take fp16/bf16 operands), unfused elsewhere.
AttentionChoice choose_attention(const TransformerPlan& plan, const TransformerOps<float>& ops, amp::Mode mode) {
  if (plan.attention) return {*plan.attention, ""};
  if (const auto reason = ops.attention_unsupported(AttentionKernels::fused, gemm_precision(mode), attention_dims(plan)))
    return {AttentionKernels::unfused, "--attention auto runs unfused attention here: " + *reason};
  return {AttentionKernels::fused, ""};
}

std::unique_ptr<TokenSource> make_data(const TransformerPlan& plan, const std::optional<MarkovChain>& chain) {
  if (!plan.data_file.empty()) return std::make_unique<FileTokenSource>(plan.data_file, plan.config.vocab);
  return std::make_unique<MarkovTokenStream>(*chain, plan.train.seed + 1);
}

nlohmann::json config_json(const GptConfig& c) {
  return {{"name", c.name},         {"vocab", c.vocab},     {"vocab_pad", c.vocab_pad},
          {"padded_vocab", c.padded_vocab()}, {"max_seq", c.max_seq}, {"layers", c.layers},
          {"heads", c.heads},       {"channels", c.channels}, {"parameters", parameter_count(c)}};
}

// Mean loss of the last fifth of the non-skipped steps (at least one, at most five steps).
double final_loss(const std::vector<StepRecord>& records) {
  std::vector<double> losses;
  for (const StepRecord& r : records)
    if (!r.skipped) losses.push_back(r.loss);
  if (losses.empty()) return NAN;
  const std::size_t count = std::clamp<std::size_t>(losses.size() / 5, 1, 5);
  double sum = 0;
  for (std::size_t i = losses.size() - count; i < losses.size(); ++i) sum += losses[i];
  return sum / static_cast<double>(count);
}

// The extra steps a mode runs under the profiler, after its timed steps.
struct ProfiledSteps {
  std::vector<double> step_seconds;
  profiler::Trace trace;
  bool gpu_activity = false;
  std::string source;
  std::string unprofiled_reason;  // set when the profiler could not record (CUPTI unavailable)
  nlohmann::json counters;        // --counters: how the counted step went (null without)
  double data_seconds = 0;        // the token source's time over the profiled steps
};

struct ModeRun {
  std::vector<StepRecord> records;
  std::optional<ProfiledSteps> profiled;
  OpTimes op_times;  // host-timed ops of the timed steps (ops that run on the host only)
  std::size_t peak_bytes = 0, activation_bytes = 0, model_state_bytes = 0;
  ActivationStorage activation_storage = ActivationStorage::emulated;
  bool interrupted = false;
  std::vector<float> final_weights;  // fp32 weights after the last step, when a checkpoint is wanted
};

// Where the training stands: the mode among those that will run, and the clock of all of them (the
// time left assumes the later modes' steps take as long as the steps so far).
struct TrainingPace {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int mode_number = 0;         // 1-based, of the modes that run
  int modes = 0;               // that run (skipped ones left out)
  std::size_t steps_done = 0;  // by the earlier modes
  std::size_t steps_total = 0;
};

std::string progress_line(const TransformerPlan& plan, amp::Mode mode, const StepRecord& r, const TrainingPace& pace) {
  const double tokens = double(plan.train.batch) * plan.train.seq_len * plan.train.micro_batches;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - pace.start).count();
  std::string line = fmt::format("[mode {}/{} {}] transformer {} {}: step {}/{} loss {:.4f} {:.0f} tok/s",
                                 pace.mode_number, pace.modes,
                                 elapsed_and_left(elapsed, pace.steps_done + r.step + 1, pace.steps_total),
                                 plan.case_name(), amp::mode_name(mode), r.step + 1, plan.train.steps, r.loss,
                                 tokens / r.seconds);
  if (amp::policy(mode).loss_scaling == amp::LossScaling::dynamic) line += fmt::format(" scale {:g}", r.loss_scale);
  if (r.skipped) line += " (skipped: non-finite gradients)";
  return line;
}

// The ops tell `listener` of every op range while this lives (also when a step throws).
class Listening {
 public:
  Listening(TransformerOps<float>& ops, OpRangeListener& listener) : ops_(ops) { ops_.listen_to_ops(&listener); }
  ~Listening() { ops_.listen_to_ops(nullptr); }
  Listening(const Listening&) = delete;
  Listening& operator=(const Listening&) = delete;

 private:
  TransformerOps<float>& ops_;
};

// Enough auto ranges for one training step of the largest configs (each kernel is one).
constexpr std::size_t kMaxCountedKernels = 1 << 16;

// details.profile.counters of a counted step.
nlohmann::json counted_json(const std::string& metric, std::size_t counted_kernels, const profiler::Trace& profiled,
                            std::size_t with_counts, const std::string& source) {
  return {{"status", "counted"},
          {"metric", metric},
          {"counted_kernels", counted_kernels},
          {"profiled_kernels", profiled.kernels.size()},
          {"profiled_kernels_with_counts", with_counts},
          {"source", source}};
}

// --counters: one more step with every kernel counted (kernel replay makes it slow, so it is
// neither timed nor profiled), its tensor pipe % carried to the same kernels of the profiled
// steps, whose breakdown then has measured Tensor Core evidence. First with the activity records
// of the counted step (exact: the kernels' names and ops); should CUPTI refuse the range profiler
// beside activity tracing, a step counted on its own, matched to each of the `profiled_steps` by
// launch order. What happened, for details.
nlohmann::json count_step(Trainer& trainer, TransformerOps<float>& ops, TokenSource& data, profiler::Trace& profiled,
                          std::size_t profiled_steps) {
  std::string beside_activity;
  try {
    const auto counter = counting_step_profiler(ops, kMaxCountedKernels);
    {
      const Listening listening(ops, *counter);
      trainer.step(data);
    }
    const profiler::Trace counted = counter->finish();
    const std::size_t carried = profiler::carry_tensor_pipe_counters(counted, profiled);
    return counted_json(counter->counted_metric().value_or(""), counted.kernels.size(), profiled, carried,
                        counter->source());
  } catch (const profiler::CuptiUnavailable& e) {
    beside_activity = e.what();
  }
  try {
    profiler::KernelCounterCollector counter(profiler::tensor_pipe_metric_candidates(), kMaxCountedKernels);
    trainer.step(data);
    ops.synchronize();
    const std::vector<double> counts = counter.stop();
    if (counter.dropped_kernels() > 0 || !profiler::attach_tensor_pipe_counters(profiled, counts, profiled_steps))
      throw profiler::CuptiUnavailable(fmt::format(
          "a step counted on its own launched {} kernels ({} dropped); the {} profiled steps hold {}", counts.size(),
          counter.dropped_kernels(), profiled_steps, profiled.kernels.size()));
    nlohmann::json out = counted_json(counter.metric(), counts.size(), profiled, profiled.kernels.size(),
                                      "CUPTI's range profiler (auto range, kernel replay) in a step of its own, "
                                      "matched to each profiled step by launch order");
    out["beside_activity_records"] = beside_activity;
    return out;
  } catch (const profiler::CuptiUnavailable& e) {
    return {{"status", "unavailable"}, {"reason", e.what()}, {"beside_activity_records", beside_activity}};
  }
}

// Runs plan.profile_steps more steps with the profiler listening to every op range. Host timing
// of ops is off: the profiled steps are not part of the timed steps' breakdown.
ProfiledSteps profile_steps(const TransformerPlan& plan, Trainer& trainer, TransformerOps<float>& ops,
                            TokenSource& data, const DeviceInfo& device, const StartStepProfiler& start_profiler,
                            bool& interrupted) {
  ProfiledSteps out;
  ops.time_ops_on_host(nullptr);
  try {
    const auto recorder = start_profiler(device, ops);
    {
      const Listening listening(ops, *recorder);
      TimedTokenSource timed(data);
      for (int s = 0; s < plan.profile_steps && !interrupted; ++s) {
        out.step_seconds.push_back(trainer.step(timed).seconds);
        interrupted = interrupt_requested();
      }
      out.data_seconds = timed.seconds();
    }
    out.trace = recorder->finish();
    out.gpu_activity = recorder->records_gpu_activity();
    out.source = recorder->source();
    if (plan.counters && out.gpu_activity && !interrupted) {
      try {
        out.counters = count_step(trainer, ops, data, out.trace, out.step_seconds.size());
      } catch (const BackendError& e) {  // a step failing under kernel replay costs the counts, not the profile
        out.counters = {{"status", "unavailable"}, {"reason", fmt::format("the counted step failed: {}", e.what())}};
      }
    }
  } catch (const profiler::CuptiUnavailable& e) {
    out = ProfiledSteps{};
    out.unprofiled_reason = e.what();
  } catch (const Interrupted&) {
    out = ProfiledSteps{};
    out.unprofiled_reason = "interrupted during the profiled steps";
    interrupted = true;
  }
  return out;
}

ModeRun train_mode(const TransformerPlan& plan, amp::Mode mode, TransformerOps<float>& ops, TokenSource& data,
                   const std::vector<float>* initial, bool time_ops, const DeviceInfo& device,
                   const StartStepProfiler& start_profiler, const TrainingProgress& progress, const TrainingPace& pace) {
  ModeRun run;
  struct StopTiming {
    TransformerOps<float>& ops;
    ~StopTiming() { ops.time_ops_on_host(nullptr); }
  } stop_timing{ops};
  ops.release_scratch();  // else this mode's peak would leave out the scratch earlier modes grew
  const std::size_t live_before = ops.live_bytes();
  ops.reset_peak();
  Trainer trainer(plan.config, plan.train, ops, mode);
  if (initial) trainer.load_params(*initial);
  const int every = std::max(1, plan.train.steps / 20);
  for (int s = 0; s < plan.train.steps; ++s) {
    if (time_ops && s == plan.timing_warmup) ops.time_ops_on_host(&run.op_times);
    try {
      run.records.push_back(trainer.step(data));
    } catch (const Interrupted&) {
      run.interrupted = true;
      return run;
    }
    if (s % every == 0 || s + 1 == plan.train.steps) progress(progress_line(plan, mode, run.records.back(), pace));
    if (interrupt_requested()) {
      run.interrupted = true;
      return run;
    }
  }
  run.peak_bytes = ops.peak_bytes() - live_before;
  run.activation_bytes = trainer.model().activation_bytes();
  run.activation_storage = trainer.model().activation_storage();
  run.model_state_bytes = trainer.model_state_bytes();
  if (!plan.checkpoint_out.empty()) {
    run.final_weights.resize(trainer.model().parameter_count());
    ops.copy_to_host(run.final_weights.data(), trainer.master_params(), run.final_weights.size() * sizeof(float));
  }
  if (plan.profile_steps > 0) run.profiled = profile_steps(plan, trainer, ops, data, device, start_profiler, run.interrupted);
  return run;
}

// The cuBLASLt algorithms (or another library's) of the mode's GEMM precision, as the ops report
// them: where each GEMM ran, whatever its kernel's name suggests. The ops keep their choices across
// modes, so a mode also lists those an earlier mode of the same GEMM precision made (amp-bf16 and
// bf16 share bf16's), or an earlier mode's checkpoint evaluation (fp32).
nlohmann::json gemm_algorithms_json(const TransformerOps<float>& ops, amp::Mode mode) {
  nlohmann::json out = nlohmann::json::array();
  for (const GemmAlgorithm& a : ops.gemm_algorithms()) {
    if (a.precision != gemm_precision(mode)) continue;
    out.push_back({{"gemm", a.gemm},
                   {"problem", a.problem},
                   {"batched", a.batched},
                   {"tensor_cores", a.tensor_cores},
                   {"numerical_impl_flags", fmt::format("{:#x}", a.numerical_impl_flags)},
                   {"compute_type", a.compute_type},
                   {"m", a.m},
                   {"n", a.n},
                   {"k", a.k}});
    out.back().update(a.configuration);
  }
  return out;
}

// The checkpoint holds the fp32 weights (the master copy) and their loss and gradient on the next
// batch computed in fp32, which PyTorch can check whatever mode trained them; for the fp8 modes also
// that batch's loss and gradient in the mode (loss_in_mode, grads_in_mode.safetensors).
void write_mode_checkpoint(const TransformerPlan& plan, amp::Mode mode, const ModeRun& run,
                           TransformerOps<float>& ops, TokenSource& data, CaseResult& result) {
  const auto dir = std::filesystem::path(plan.checkpoint_out) / std::string(amp::mode_name(mode));
  Gpt2Model<float> model(plan.config, plan.train.batch, plan.train.seq_len, ops, amp::Mode::fp32);
  model.upload_params(run.final_weights);
  const TokenBatch tokens = data.next_batch(plan.train.batch, plan.train.seq_len);
  CheckpointBatch batch = evaluate_batch(model, tokens);
  // The fp8 modes also evaluate that batch in the mode itself, as the trainer's first step would
  // on these weights: the working copy rounded to the mode's weight storage, a fresh quantizer
  // (fp8-delayed: every scale 1), the backward's gradients before clipping and the optimizer, for
  // the independent check of the recipe (tests/python/test_fp8_first_step.py).
  if (fp8_recipe(mode) != Fp8Recipe::none) {
    Gpt2Model<float> in_mode(plan.config, plan.train.batch, plan.train.seq_len, ops, mode);
    ops.fp8().configure(fp8_recipe(mode), plan.train.fp8_history, plan.train.fp8_margin, plan.train.mx_scale_rounding,
                        plan.train.fp8_keep_forward_copies);
    in_mode.upload_params(run.final_weights);
    ops.round_to(in_mode.params(), in_mode.parameter_count(), in_mode.policy().weight_storage);
    const CheckpointBatch evaluated = evaluate_batch(in_mode, tokens);
    ops.fp8().take_step_details();  // not a training step's counts
    batch.in_mode = amp::mode_name(mode);
    batch.loss_in_mode = evaluated.loss;
    batch.grads_in_mode = evaluated.grads;
  }
  const nlohmann::json info = {{"trained_mode", amp::mode_name(mode)},
                               {"steps", plan.train.steps},
                               {"seed", plan.train.seed},
                               {"final_loss_in_mode", result.details["final_loss"]}};
  write_checkpoint(dir, plan.config, model.tensors(), run.final_weights, batch, info);
  result.details["checkpoint"] = {{"dir", dir.string()}, {"fp32_batch_loss", batch.loss}};
  if (!batch.in_mode.empty()) result.details["checkpoint"]["batch_loss_in_mode"] = batch.loss_in_mode;
}

// The category of an op of the model, for the breakdown of a CPU run (explain folds GPU GEMM
// categories into "gemm" too).
std::string cpu_category(std::string_view op) {
  for (std::string_view gemm : {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj", "lm_head"})
    if (op == gemm) return "gemm";
  if (op == "attention") return "attention";
  if (op.starts_with("ln_")) return "normalization";
  if (op == "cross_entropy" || op == "global_norm") return "reduction";
  if (op == "adamw") return "optimizer";
  if (op == "grad_all_reduce") return "communication";
  if (op == "inputs" || op == "loss" || op.starts_with("zero_")) return "copy";  // uploads, downloads, zeroing
  return "elementwise";  // embedding, gelu, residual adds
}

// Seconds per step in each category and op, from the host-timed ranges of the timed steps.
nlohmann::json host_breakdown(const ModeRun& run, const Statistics& steps) {
  const double n = static_cast<double>(steps.values.size());
  nlohmann::json categories = nlohmann::json::object(), ops = nlohmann::json::object();
  double attributed = 0;
  for (const auto& [key, seconds] : run.op_times.seconds()) {
    const std::string op = key.substr(0, key.rfind(' '));
    const std::string category = cpu_category(op);
    categories[category] = categories.value(category, 0.0) + seconds / n;
    ops[key] = seconds / n;
    attributed += seconds / n;
  }
  return {{"categories", categories},
          {"ops", ops},
          {"kernel_count", static_cast<double>(run.op_times.ranges()) / n},
          {"region_s", steps.mean},
          {"unattributed_s", std::max(0.0, steps.mean - attributed)},
          {"source", "host clock around each op of the timed steps (CPU ops run synchronously), per step"}};
}

// Seconds per step in each category and op (ops summed over layers), kernel count, top kernels,
// gaps and unattributed time, from the CUPTI records of the profiled steps.
nlohmann::json gpu_breakdown(const ProfiledSteps& p) {
  const double n = static_cast<double>(p.step_seconds.size());
  profiler::Breakdown b = profiler::compute_breakdown(p.trace);
  for (auto& [category, seconds] : b.categories) seconds /= n;
  std::map<std::string, double> ops;
  for (const auto& [range, seconds] : b.ops) ops[op_key_of_range(range)] += seconds / n;
  b.ops = std::move(ops);
  for (auto& k : b.top_kernels) k.total_s /= n;
  b.gaps_s /= n;
  b.region_s /= n;
  b.unattributed_s /= n;
  nlohmann::json j = b.to_json();
  j["kernel_count"] = static_cast<double>(b.kernel_count) / n;
  for (auto& k : j["top_kernels"]) k["count"] = k["count"].get<double>() / n;
  j["unattributed_kernels"] = static_cast<double>(profiler::attribute_kernels(p.trace).unattributed) / n;
  j["source"] = fmt::format("{} over {} profiled steps, per step", p.source, p.step_seconds.size());
  return j;
}

// details.profile (and on a GPU details.breakdown) from the profiled steps; writes the trace.
void fill_profile(const TransformerPlan& plan, amp::Mode mode, const ProfiledSteps& p, CaseResult& c) {
  if (!p.unprofiled_reason.empty()) {
    c.details["profile"] = {{"status", "unprofiled"}, {"reason", p.unprofiled_reason}};
    return;
  }
  const double profiled = Statistics::of(p.step_seconds).median;
  const double unprofiled = c.seconds->median;
  nlohmann::json profile = {{"status", "profiled"},
                            {"steps", p.step_seconds.size()},
                            {"source", p.source},
                            {"ranges_per_step", static_cast<double>(p.trace.ranges.size()) / static_cast<double>(p.step_seconds.size())},
                            {"profiled_step_median_s", profiled},
                            {"unprofiled_step_median_s", unprofiled},
                            {"overhead", profiled / unprofiled - 1.0}};
  if (p.gpu_activity) {
    profile["kernels"] = p.trace.kernels.size();
    profile["nvtx_ranges_per_step"] =
        static_cast<double>(p.trace.nvtx_ranges.size()) / static_cast<double>(p.step_seconds.size());
    c.details["breakdown"] = gpu_breakdown(p);
  }
  c.details["host"] = profiler::host_evidence(p.trace, p.step_seconds.size(), p.data_seconds, profiled, p.gpu_activity)
                          .to_json();
  if (!p.counters.is_null()) profile["counters"] = p.counters;
  if (!plan.trace_file.empty()) {
    const auto path = trace_path_for(plan.trace_file, mode);
    try {  // a trace that cannot be written costs the trace, not the mode
      profiler::write_chrome_trace(path, p.trace);
      profile["trace"] = path.string();
    } catch (const UsageError& e) {
      profile["trace_error"] = e.what();
    }
  }
  c.details["profile"] = std::move(profile);
}

// A mode trains a fixed number of steps, noisy or not; whether its timed steps spread within the
// run's noise target is recorded as the sampler records it (compare and explain read it alike).
// The warm-up is kept even when one step is left to time (--steps 2): the first steps pay for
// first-touch allocation and are many times slower. One timed step has no spread.
nlohmann::json step_measurement(const TransformerPlan& plan, const Statistics& steps) {
  if (steps.values.size() < 2)
    return {{"converged", false},
            {"stop_reason", fmt::format("one timed step after {} warm-up step(s): no spread; use --steps {} or more",
                                        plan.timing_warmup, plan.timing_warmup + 2)}};
  const double noise = steps.relative_spread();
  const bool met = noise <= plan.max_noise;
  return {{"converged", met},
          {"stop_reason", fmt::format("{} timed steps after {} warm-up step(s), a fixed count: noise {:.2f}% {} {:.2f}%",
                                      steps.values.size(), plan.timing_warmup, 100 * noise, met ? "<=" : ">",
                                      100 * plan.max_noise)}};
}

// Data parallelism: the gradient all-reduce's median time per step past the timing warm-up (over
// every step where a mode was interrupted within it), the median exposed part (what the optimizer
// waited for after the backward pass: all of it with --grad-buckets 0) and, bucketed, each bucket's
// tensors and median time; each step's two times too.
void record_communication(const TransformerPlan& plan, const ModeRun& run, CaseResult& c) {
  const GradientReducer* reducer = plan.train.reducer;
  if (!reducer || run.records.empty()) return;
  const auto warmup = static_cast<std::size_t>(plan.timing_warmup);
  const std::size_t first = run.records.size() > warmup ? warmup : 0;
  std::vector<double> communication, exposed, overlapped;
  for (std::size_t i = first; i < run.records.size(); ++i) {
    const StepRecord& r = run.records[i];
    communication.push_back(r.communication_seconds);
    exposed.push_back(r.exposed_communication_seconds);
    overlapped.push_back(std::max(0.0, r.communication_seconds - r.exposed_communication_seconds));
  }
  nlohmann::json per_step = {{"seconds", nlohmann::json::array()}, {"exposed_seconds", nlohmann::json::array()}};
  for (const StepRecord& r : run.records) {
    per_step["seconds"].push_back(r.communication_seconds);
    per_step["exposed_seconds"].push_back(r.exposed_communication_seconds);
  }
  const double median = median_of(communication);
  // The exposed part is at most the whole: medians of each need not be ordered so on their own.
  const double exposed_median = std::min(median, median_of(exposed));
  nlohmann::json& out = c.details["communication"];
  out = {{"library", reducer->library()}, {"dtype", reducer->dtype()}, {"seconds_per_step", median},
         {"exposed_seconds_per_step", exposed_median}, {"overlapped_seconds_per_step", median_of(overlapped)},
         {"bucket_mib", plan.train.grad_bucket_mib}, {"per_step", per_step}};
  const std::vector<StepRecord::Bucket>& last = run.records.back().buckets;
  if (last.empty()) return;
  const std::vector<ParameterTensor> tensors = parameter_layout(plan.config);
  nlohmann::json buckets = nlohmann::json::array();
  for (std::size_t b = 0; b < last.size(); ++b) {
    std::vector<double> seconds;
    for (std::size_t i = first; i < run.records.size(); ++i)
      if (b < run.records[i].buckets.size())
        seconds.push_back(run.records[i].buckets[b].done - run.records[i].buckets[b].started);
    const StepRecord::Bucket& k = last[b];
    buckets.push_back({{"first_tensor", tensors.at(k.first_tensor).name},
                       {"last_tensor", tensors.at(k.first_tensor + k.tensors - 1).name},
                       {"tensors", k.tensors},
                       {"elements", k.elements},
                       {"seconds_per_step", seconds.empty() ? 0.0 : median_of(seconds)}});
  }
  out["buckets"] = std::move(buckets);
}

// fp8-delayed's amax histories and scales, for the tensors its steps scaled (the quantizer's
// count, not a formula of the model); 0 for the other modes, which keep no state between steps.
std::uint64_t delayed_scaling_bytes(const TransformerPlan& plan, amp::Mode mode, const ModeRun& run) {
  if (fp8_recipe(mode) != Fp8Recipe::delayed) return 0;
  std::uint64_t tensors = 0;
  for (const StepRecord& r : run.records)
    if (r.fp8.contains("scaled_tensors")) tensors = std::max(tensors, r.fp8["scaled_tensors"].get<std::uint64_t>());
  return amp::delayed_scaling_bytes(tensors, plan.train.fp8_history);
}

// The per-tensor recipes' fp8 copies of the forward's inputs and weights, which the backward
// dequantizes instead of quantizing again (Fp8GemmQuantizer): whether they were kept, how many the
// steps reused and the most bytes they took (codes and scales, host memory outside the ops'
// allocations and so outside allocated_peak_bytes).
nlohmann::json forward_copies(const TransformerPlan& plan, const ModeRun& run) {
  std::uint64_t reused = 0, bytes = 0;
  for (const StepRecord& r : run.records) {
    if (!r.fp8.contains("forward_copies")) continue;
    reused += r.fp8["forward_copies"]["reused"].get<std::uint64_t>();
    bytes = std::max(bytes, r.fp8["forward_copies"]["bytes"].get<std::uint64_t>());
  }
  return {{"kept", plan.train.fp8_keep_forward_copies}, {"reused_total", reused}, {"bytes", bytes}};
}

void fill_metrics(const TransformerPlan& plan, amp::Mode mode, const ModeRun& run, const DeviceInfo& device,
                  std::optional<double> entropy_floor, CaseResult& c) {
  std::vector<double> step_seconds;
  for (std::size_t i = plan.timing_warmup; i < run.records.size(); ++i) step_seconds.push_back(run.records[i].seconds);
  c.seconds = Statistics::of(step_seconds);
  c.details["measurement"] = step_measurement(plan, *c.seconds);
  const double tokens_per_step = double(plan.train.batch) * plan.train.seq_len * plan.train.micro_batches;
  const double flops_per_token = flops_per_token_llmc(plan.config, plan.train.seq_len);
  const double tflops = flops_per_token * tokens_per_step / c.seconds->median / 1e12;
  c.rates["tokens_per_s"] = tokens_per_step / c.seconds->median;
  c.rates["tflops"] = tflops;
  c.rates["peak_memory_bytes"] = run.peak_bytes;
  c.details["flops"] = {{"per_token", flops_per_token},
                        {"formula", "6N + 6LCT per token (llm.c; N every parameter, padded vocabulary included)"},
                        {"per_token_palm", flops_per_token_palm(plan.config, plan.train.seq_len)},
                        {"parameters", parameter_count(plan.config)}};
  const GemmPrecision gemm = gemm_precision(mode);
  if (const auto row = on_cpu(device) ? std::nullopt : find_datasheet(device.name); row && peak_tflops(*row, gemm) > 0) {
    c.rates["mfu"] = tflops / peak_tflops(*row, gemm);
    c.details["peak"] = {{"gpu", row->gpu}, {"gemm_precision", gemm_precision_info(gemm).name},
                         {"tflops", peak_tflops(*row, gemm)}, {"source", row->source}};
  } else {
    c.details["peak"] = {{"note", on_cpu(device) ? "no datasheet peak for CPUs: MFU is not reported"
                                                 : "no datasheet row for this GPU: MFU is not reported"}};
  }
  nlohmann::json loss = nlohmann::json::array(), scale = nlohmann::json::array(), norms = nlohmann::json::array(),
                 lrs = nlohmann::json::array(), skipped = nlohmann::json::array();
  record_communication(plan, run, c);
  for (const StepRecord& r : run.records) {
    loss.push_back(r.loss);
    scale.push_back(r.loss_scale);
    norms.push_back(std::isfinite(r.grad_norm) ? nlohmann::json(r.grad_norm) : nlohmann::json(nullptr));
    lrs.push_back(r.lr);
    if (r.skipped) skipped.push_back(r.step);
  }
  c.details["loss"] = loss;
  c.details["grad_norm"] = norms;
  c.details["lr"] = lrs;
  if (amp::policy(mode).loss_scaling == amp::LossScaling::dynamic) c.details["loss_scale"] = scale;
  c.details["skipped_steps"] = skipped;
  if (fp8_recipe(mode) != Fp8Recipe::none) {
    // Per step: saturated and underflowed elements per operand kind, and (delayed) the scales that
    // changed at the step's end. The totals over the run beside them.
    nlohmann::json steps = nlohmann::json::array();
    std::uint64_t saturated = 0, underflowed = 0, changes = 0;
    double quantize_seconds = 0, step_seconds = 0;  // over every step, the warm-up included
    for (const StepRecord& r : run.records) {
      steps.push_back(r.fp8);
      if (r.fp8.is_null()) continue;
      quantize_seconds += r.fp8["quantize_seconds"].get<double>();
      step_seconds += r.seconds;
      saturated += r.fp8["total"]["saturated"].get<std::uint64_t>();
      underflowed += r.fp8["total"]["underflowed"].get<std::uint64_t>();
      if (r.fp8.contains("scale_changes")) changes += r.fp8["scale_changes"].get<std::uint64_t>();
    }
    const bool blocked = fp8_recipe(mode) == Fp8Recipe::mxfp8;
    c.details["fp8"] = {{"recipe", std::string(fp8_recipe_name(fp8_recipe(mode)))},
                        {"gemm_path", "converted"},
                        {"note", blocked ? "each linear GEMM operand quantized to e4m3 in 32-element blocks along K "
                                           "with e8m0 scales and dequantized to fp32, the fp32 matmul; attention's "
                                           "batched GEMMs in bf16"
                                         : "each linear GEMM operand quantized with its per-tensor scale (e4m3 inputs "
                                           "and weights, e5m2 output gradients) and dequantized to fp32, the fp32 "
                                           "matmul (the backward's inputs and weights from the forward's fp8 copies "
                                           "unless forward_copies.kept is false); attention's batched GEMMs in bf16"},
                        {"saturated_total", saturated},
                        {"underflowed_total", underflowed},
                        {"quantize_seconds_total", quantize_seconds},
                        {"quantize_share", step_seconds > 0 ? quantize_seconds / step_seconds : 0.0},
                        {"per_step", steps}};
    const GemmFlopsPerToken gemm_flops = gemm_flops_per_token(plan.config, plan.train.seq_len);
    c.details["fp8"]["gemm_flops"] = {
        {"fp8_per_step", gemm_flops.linear * tokens_per_step},
        {"bf16_per_step", gemm_flops.attention * tokens_per_step},
        {"fp8_share", gemm_flops.linear / (gemm_flops.linear + gemm_flops.attention)},
        {"note", "from the GEMM shapes: the linear layers and the LM head in fp8 (forward and both backward GEMMs), "
                 "attention's batched GEMMs in bf16 (the whole T x T scores, as the unfused path computes them)"}};
    if (fp8_recipe(mode) == Fp8Recipe::delayed) {
      c.details["fp8"]["scale_changes_total"] = changes;
      c.details["fp8"]["history_length"] = plan.train.fp8_history;
    }
    if (blocked) {
      c.details["fp8"]["scale_rounding"] = amp::mx_scale_rounding_name(plan.train.mx_scale_rounding);
    } else {
      c.details["fp8"]["margin"] = plan.train.fp8_margin;
      c.details["fp8"]["forward_copies"] = forward_copies(plan, run);
    }
  }
  if (run.op_times.ranges() > 0) c.details["breakdown"] = host_breakdown(run, *c.seconds);
  if (run.profiled) fill_profile(plan, mode, *run.profiled, c);
  c.details["final_loss"] = final_loss(run.records);
  if (entropy_floor) {
    c.details["entropy_floor"] = *entropy_floor;
    c.details["final_loss_above_floor"] = final_loss(run.records) - *entropy_floor;
  }
  const auto account = amp::model_state_memory(mode, static_cast<std::uint64_t>(parameter_count(plan.config)),
                                               amp::OptimizerKind::adamw, delayed_scaling_bytes(plan, mode, run));
  c.details["memory"] = {
      {"allocated_peak_bytes", run.peak_bytes},
      {"activation_bytes", run.activation_bytes},
      {"model_state_bytes", run.model_state_bytes},
      {"estimate_bytes", training_bytes(plan, plan.train, mode)},
      {"activation_storage", activation_storage_name(run.activation_storage)},
      {"account", {{"persistent_bytes", account.persistent_bytes()},
                   {"peak_bytes", account.peak_bytes()},
                   {"per_parameter", {{"weights", account.per_parameter.weights},
                                      {"working_copy", account.per_parameter.working_copy},
                                      {"master", account.per_parameter.master},
                                      {"gradients", account.per_parameter.gradients},
                                      {"optimizer_state", account.per_parameter.optimizer_state}}},
                   {"scaling_state_bytes", account.scaling_state_bytes}}},
      {"note", run.activation_storage == ActivationStorage::half
                   ? "activations the mode keeps in fp16/bf16 take 2 bytes each; the account is the model state "
                     "the mode's types need"
                   : "activations live in fp32 buffers holding values rounded to the mode's storage type (emulated "
                     "storage), so their bytes do not shrink in low precision; the account is the model state the "
                     "mode's types need"}};
}

// A mode interrupted before its last step: an error case that keeps the steps it finished (their
// loss, time and loss scale), so that the run's document says how far it got.
void keep_interrupted_steps(const TransformerPlan& plan, const ModeRun& run, CaseResult& c) {
  nlohmann::json loss = nlohmann::json::array(), seconds = nlohmann::json::array(), scale = nlohmann::json::array();
  record_communication(plan, run, c);
  for (const StepRecord& r : run.records) {
    loss.push_back(r.loss);
    seconds.push_back(r.seconds);
    scale.push_back(r.loss_scale);
  }
  c.status = CaseStatus::error;
  c.message = fmt::format("interrupted after {} of {} steps: no step-time statistics; the finished steps are in "
                          "details",
                          run.records.size(), plan.train.steps);
  c.details["loss"] = loss;
  c.details["step_seconds"] = seconds;
  c.details["loss_scale"] = scale;
  c.details["interrupted_after_steps"] = run.records.size();
}

}  // namespace

std::string TransformerPlan::case_name() const {
  std::string name = fmt::format("{}_b{}_t{}", config.name, train.batch, train.seq_len);
  if (train.micro_batches > 1) name += fmt::format("_x{}", train.micro_batches);
  if (config.vocab_pad != 64) name += fmt::format("_pad{}", config.vocab_pad);
  if (tensor_cores != TensorCorePolicy::on) name += fmt::format("_tc-{}", tensor_core_policy_name(tensor_cores));
  if (attention) name += fmt::format("_att-{}", attention_kernels_name(*attention));
  if (train.activation_storage == ActivationStorage::emulated) name += "_act-emulated";
  return name;
}

TransformerPlan plan_transformer_run(const TransformerSuiteOptions& options, const DeviceInfo& device) {
  TransformerPlan plan;
  std::optional<Checkpoint> start;
  if (!options.checkpoint_in.empty()) start = read_checkpoint(options.checkpoint_in);
  const std::string name = !options.config.empty() ? options.config
                           : start                 ? start->config.name
                           : on_cpu(device)        ? "small"
                                                   : "gpt2-124m";
  plan.config = config_by_name(name, options.vocab_pad);
  if (start && (start->config.layers != plan.config.layers || start->config.channels != plan.config.channels ||
                start->config.heads != plan.config.heads || start->config.vocab != plan.config.vocab ||
                start->config.max_seq != plan.config.max_seq)) {
    throw UsageError(fmt::format("--checkpoint-in {} holds a {} model, not {}: drop --config or pick {}",
                                 options.checkpoint_in, start->config.name, plan.config.name, start->config.name));
  }
  const bool quick_cpu = options.quick && on_cpu(device) && options.config.empty() && !start;
  plan.train.batch = options.batch > 0 ? options.batch : quick_cpu ? kQuickCpu.batch : default_batch(plan.config, device);
  plan.train.seq_len = options.seq_len > 0 ? options.seq_len
                       : quick_cpu         ? std::min(kQuickCpu.seq_len, plan.config.max_seq)
                                           : plan.config.max_seq;
  plan.train.steps = options.steps > 0 ? options.steps : quick_cpu ? kQuickCpu.steps : (options.quick ? 10 : 30);
  if (quick_cpu)
    plan.quick_note = fmt::format("--quick on a CPU: batch {}, {} tokens, {} steps (a standard run's defaults: {}, {}, 30)",
                                  plan.train.batch, plan.train.seq_len, plan.train.steps,
                                  default_batch(plan.config, device), plan.config.max_seq);
  if (!(options.max_noise > 0))
    throw UsageError(fmt::format("the noise target must be positive, got {}", options.max_noise));
  plan.max_noise = options.max_noise;
  plan.train.micro_batches = options.micro_batches;
  if (options.fp8_history < 1 || options.fp8_margin < 0 || options.fp8_margin > 30)
    throw UsageError(fmt::format("--fp8-history {} --fp8-margin {}: the history needs at least 1 step, the margin 0 to 30",
                                 options.fp8_history, options.fp8_margin));
  plan.train.fp8_history = options.fp8_history;
  plan.train.fp8_margin = options.fp8_margin;
  plan.train.mx_scale_rounding = parse_mx_scale_rounding(options.mx_scale_rounding);
  plan.train.fp8_keep_forward_copies = options.fp8_keep_forward_copies;
  plan.train.warmup_steps = std::max(1, plan.train.steps / 10);  // learning-rate warm-up
  plan.train.seed = options.seed;
  if (!(options.max_lr > 0) || !std::isfinite(options.max_lr))
    throw UsageError(fmt::format("--lr must be a positive number, got {}", options.max_lr));
  plan.train.max_lr = options.max_lr;
  // A bound far past any scale fp16 gradients survive (apex caps at 2^24) and far inside fp32's
  // range (2^128), where the scaled loss gradient is computed: a finite scale, not a typo.
  if (!(options.loss_scale > 0) || !(options.loss_scale <= 0x1p64f))
    throw UsageError(fmt::format("--loss-scale must be positive and at most 2^64, got {}", options.loss_scale));
  plan.train.scaler.init_scale = options.loss_scale;
  plan.train.min_lr = options.max_lr / 10;
  plan.timing_warmup = options.warmup_steps >= 0 ? options.warmup_steps : std::max(1, plan.train.steps / 5);
  if (options.batch < 0 || options.seq_len < 0 || options.steps < 0 || options.micro_batches < 1) {
    throw UsageError("--batch, --seq and --steps must be positive and --micro-batches at least 1");
  }
  for (const auto& [option, value, most] : {std::tuple{"--batch", options.batch, kMaxBatch},
                                            std::tuple{"--micro-batches", options.micro_batches, kMaxMicroBatches},
                                            std::tuple{"--steps", options.steps, kMaxSteps}})
    if (value > most) throw UsageError(fmt::format("{} {} is more than the {} mpbench runs", option, value, most));
  if (plan.train.seq_len > plan.config.max_seq) {
    throw UsageError(fmt::format("--seq {} is longer than config {}'s {} positions", plan.train.seq_len,
                                 plan.config.name, plan.config.max_seq));
  }
  if (plan.timing_warmup >= plan.train.steps) {
    throw UsageError(fmt::format("--steps {} leaves no step to time after {} warm-up steps: use more steps",
                                 plan.train.steps, plan.timing_warmup));
  }
  plan.modes = options.modes.empty() ? default_modes() : options.modes;
  plan.data_file = options.data_file;
  if (!plan.data_file.empty()) FileTokenSource(plan.data_file, plan.config.vocab).require_batch(plan.train.batch, plan.train.seq_len);
  plan.checkpoint_in = options.checkpoint_in;
  plan.checkpoint_out = options.checkpoint_out;
  plan.trace_file = options.trace_file;
  plan.counters = options.counters;
  if (plan.counters && on_cpu(device))
    throw UsageError(fmt::format("--counters on {}: it reads GPU hardware counters (CUPTI's range profiler)", device.name));
  plan.profile_steps = options.profile || options.counters || !options.trace_file.empty() ? kProfiledSteps : 0;
  plan.tensor_cores = parse_tensor_core_policy(options.tensor_cores);
  if (plan.tensor_cores != TensorCorePolicy::on && on_cpu(device)) {
    throw UsageError(fmt::format("--tensor-cores {} on {}: Tensor Cores are a GPU feature: use --cpu-isa for the "
                                 "CPU counterfactual",
                                 options.tensor_cores, device.name));
  }
  plan.train.activation_storage = parse_activation_storage(options.activation_storage);
  if (options.attention != "auto") plan.attention = parse_attention_kernels(options.attention);
  if (plan.attention == AttentionKernels::fused && on_cpu(device)) {
    throw UsageError(fmt::format("--attention fused on {}: fused attention is cuDNN's, on CUDA GPUs only: use "
                                 "--attention unfused or auto",
                                 device.name));
  }
  check_memory(plan, device);
  return plan;
}

std::filesystem::path trace_path_for(const std::string& trace_file, amp::Mode mode) {
  std::filesystem::path path(trace_file);
  const auto extension = path.extension();
  path.replace_extension();
  path += "." + std::string(amp::mode_name(mode));
  path += extension;
  return path;
}

std::optional<std::string> mode_skip_reason(const TransformerPlan& plan, TransformerOps<float>& ops, amp::Mode mode) {
  if (auto reason = unsupported_mode(ops, mode)) return reason;
  return ops.attention_unsupported(choose_attention(plan, ops, mode).kernels, gemm_precision(mode), attention_dims(plan));
}

TransformerOutcome run_transformer_suite(const TransformerPlan& plan, TransformerOps<float>& ops,
                                         const DeviceInfo& device, const TrainingProgress& progress,
                                         const StartStepProfiler& start_profiler, const ModeFinished& finished) {
  TransformerOutcome outcome;
  const auto keep = [&](CaseResult&& c) {
    if (finished) finished(c);
    outcome.cases.push_back(std::move(c));
  };
  std::optional<MarkovChain> chain;
  std::optional<double> floor;
  if (plan.data_file.empty()) {
    chain = MarkovChain::random(plan.config.vocab, kMarkovSuccessors, plan.train.seed);
    floor = chain->entropy_rate();
  }
  std::optional<std::vector<float>> initial;
  if (!plan.checkpoint_in.empty()) initial = params_for(read_checkpoint(plan.checkpoint_in), plan.config);

  bool noted_unprofiled = false;
  TrainingPace pace;
  for (amp::Mode mode : plan.modes) pace.modes += !mode_skip_reason(plan, ops, mode);
  pace.steps_total = static_cast<std::size_t>(pace.modes) * plan.train.steps;
  for (amp::Mode mode : plan.modes) {
    CaseResult c;
    c.suite = kTransformerSuite;
    c.name = plan.case_name();
    c.backend = device.backend;
    c.precision = std::string(amp::mode_name(mode));
    c.params = {{"config", config_json(plan.config)},   {"batch", plan.train.batch},
                {"seq_len", plan.train.seq_len},         {"micro_batches", plan.train.micro_batches},
                {"steps", plan.train.steps},             {"timing_warmup_steps", plan.timing_warmup},
                {"max_lr", plan.train.max_lr},           {"lr_warmup_steps", plan.train.warmup_steps},
                {"tokens_per_step", plan.train.batch * plan.train.seq_len * plan.train.micro_batches},
                {"data", plan.data_file.empty() ? nlohmann::json{{"kind", "markov"}, {"successors", kMarkovSuccessors}}
                                                : nlohmann::json{{"kind", "file"}, {"path", plan.data_file}}},
                {"tensor_cores", tensor_core_policy_name(plan.tensor_cores)}};
    if (!plan.checkpoint_in.empty()) c.params["checkpoint_in"] = plan.checkpoint_in;
    if (amp::policy(mode).loss_scaling == amp::LossScaling::dynamic) c.params["loss_scale_init"] = plan.train.scaler.init_scale;
    if (!plan.quick_note.empty()) c.details["quick"] = plan.quick_note;
    // Data parallelism: tokens_per_step and the rates are one rank's (per GPU); the job's are
    // world_size times as many.
    const GradientReducer* reducer = plan.train.reducer;
    c.params["world_size"] = reducer ? reducer->world_size() : 1;
    c.params["grad_reduce"] = reducer ? nlohmann::json(reducer->dtype()) : nlohmann::json(nullptr);
    c.details["implementation"] = ops.implementation();
    c.details["policy"] = std::string(amp::policy(mode).summary);
    c.details["gemm_path"] = gemm_path_json(ops.gemm_capability(gemm_precision(mode)));
    const AttentionChoice attention = choose_attention(plan, ops, mode);
    c.params["attention"] = attention_kernels_name(attention.kernels);
    c.params["activation_storage"] = activation_storage_name(
        activation_storage_for(plan.train.activation_storage, ops.has_half_storage(), mode));
    if (!attention.note.empty()) c.details["attention_note"] = attention.note;
    if (const auto reason = mode_skip_reason(plan, ops, mode)) {
      c.status = CaseStatus::skipped;
      c.message = *reason;
      progress(fmt::format("transformer {} {}: skipped: {}", c.name, c.precision, *reason));
      keep(std::move(c));
      continue;
    }
    TransformerPlan mode_plan = plan;
    mode_plan.train.attention = attention.kernels;
    try {
      auto data = make_data(plan, chain);
      ++pace.mode_number;
      const ModeRun run = train_mode(mode_plan, mode, ops, *data, initial ? &*initial : nullptr, on_cpu(device),
                                     device, start_profiler, progress, pace);
      pace.steps_done += run.records.size();
      outcome.interrupted = run.interrupted;
      if (run.interrupted && run.records.size() < static_cast<std::size_t>(plan.train.steps)) {
        keep_interrupted_steps(mode_plan, run, c);
        keep(std::move(c));
        return outcome;
      }
      if (run.profiled && !run.profiled->unprofiled_reason.empty() && !run.interrupted &&
          !std::exchange(noted_unprofiled, true))
        progress(fmt::format("mpbench: note: --profile: cannot profile ({}); the run goes on unprofiled "
                             "(details.profile.status is \"unprofiled\")",
                             run.profiled->unprofiled_reason));
      fill_metrics(mode_plan, mode, run, device, floor, c);
      if (c.seconds->values.size() < 2)
        progress(fmt::format("transformer {} {}: note: {}", c.name, c.precision,
                             c.details["measurement"]["stop_reason"].get<std::string>()));
      if (const auto profile = c.details.find("profile"); profile != c.details.end() && profile->contains("trace_error"))
        progress(fmt::format("transformer {} {}: error: the trace was not written: {}", c.name, c.precision,
                             (*profile)["trace_error"].get<std::string>()));
      c.details["implementation"] = ops.implementation();  // now naming what the mode's run loaded
      // Before this mode's checkpoint, whose fp32 evaluation adds fp32 plans.
      if (auto algorithms = gemm_algorithms_json(ops, mode); !algorithms.empty())
        c.details["gemm_algorithms"] = std::move(algorithms);
      if (!plan.checkpoint_out.empty()) {
        try {  // a checkpoint that cannot be written costs the checkpoint, not the mode
          write_mode_checkpoint(plan, mode, run, ops, *data, c);
        } catch (const UsageError& e) {
          c.details["checkpoint"] = {{"error", e.what()}};
          progress(fmt::format("transformer {} {}: error: the checkpoint was not written: {}", c.name, c.precision,
                               e.what()));
        }
      }
    } catch (const OutOfMemoryError& e) {
      c.status = CaseStatus::error;
      c.message = fmt::format("out of memory: {} (the estimate was {}): use a smaller --batch or --seq", e.what(),
                              gib(double(training_bytes(mode_plan, mode_plan.train, mode))));
    } catch (const BackendError& e) {
      c.status = CaseStatus::error;
      c.message = e.what();
    } catch (const RankFailed& e) {
      // Every rank agreed on it within the same step: each ends its run here, in step, and rank 0
      // keeps this mode as an error case after the finished ones; the modes after it do not run.
      c.status = CaseStatus::error;
      c.message = fmt::format("{}; the job ends: the modes after this one did not run", e.what());
      c.details["failed_rank"] = {{"rank", e.rank()}, {"reason", e.reason()}};
      progress(fmt::format("transformer {} {}: error: {}", c.name, c.precision, c.message));
      keep(std::move(c));
      return outcome;
    }
    if (c.status == CaseStatus::error) {
      if (plan.train.reducer && plan.train.reducer->world_size() > 1)
        throw BackendError(fmt::format("transformer {} {}: {}", c.name, c.precision, c.message));
      progress(fmt::format("transformer {} {}: error: {}", c.name, c.precision, c.message));
    }
    keep(std::move(c));
    if (outcome.interrupted) return outcome;  // during its profiled steps: its timed steps are kept
  }
  return outcome;
}

void compare_final_losses(std::vector<CaseResult>& cases) {
  for (CaseResult& c : cases) {
    if (c.suite != kTransformerSuite || c.status != CaseStatus::ok || c.precision == "fp32") continue;
    const auto fp32 = std::find_if(cases.begin(), cases.end(), [&](const CaseResult& b) {
      return b.suite == c.suite && b.name == c.name && b.backend == c.backend && b.precision == "fp32" &&
             b.status == CaseStatus::ok;
    });
    if (fp32 == cases.end() || !fp32->details["final_loss"].is_number() || !c.details["final_loss"].is_number()) continue;
    const double base = fp32->details["final_loss"].get<double>();
    c.details["final_loss_vs_fp32"] = (c.details["final_loss"].get<double>() - base) / base;
  }
}

}  // namespace mpbench::workloads
