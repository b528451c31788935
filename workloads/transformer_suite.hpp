#pragma once
// `mpbench run --suite transformer`: trains the GPT-2 model for a few steps in each precision mode
// on one device, same weights and same data in every mode, and turns each mode into one case of
// the result document (step-time statistics after warm-up, tokens/s, TFLOP/s, MFU, memory, the loss
// curve, the loss scale, the final loss against fp32's and against the data's entropy floor).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "amp/loss_scaler_math.hpp"
#include "amp/policy.hpp"
#include "core/backend.hpp"
#include "core/result.hpp"
#include "workloads/config.hpp"
#include "workloads/ops.hpp"
#include "workloads/step_profiler.hpp"
#include "workloads/trainer.hpp"

namespace mpbench::workloads {

// The suite's name on the command line and in result documents, and what it measures.
inline constexpr const char* kTransformerSuite = "transformer";
inline constexpr const char* kTransformerSuiteDescription =
    "GPT-2 training in each precision mode, same weights and data: step time, tokens/s, MFU, memory, final loss "
    "against fp32";

struct TransformerSuiteOptions {
  std::string config;            // empty: "small" on a CPU, "gpt2-124m" on a GPU
  int vocab_pad = 64;
  int batch = 0;                 // 0: the default for the config and device (see kQuickCpu)
  int seq_len = 0;               // 0: the config's max_seq (see kQuickCpu)
  int steps = 0;                 // 0: 30, or 10 with quick (see kQuickCpu)
  int warmup_steps = -1;         // steps left out of the timing statistics; -1: steps / 5, at least 1
  int micro_batches = 1;
  int fp8_history = kFp8DefaultHistory;  // TrainOptions::fp8_history (fp8-delayed)
  int fp8_margin = kFp8DefaultMargin;    // TrainOptions::fp8_margin (fp8-delayed, fp8-current)
  std::string mx_scale_rounding = "down";  // TrainOptions::mx_scale_rounding (mxfp8): down or up
  bool fp8_keep_forward_copies = true;     // TrainOptions::fp8_keep_forward_copies
  std::vector<amp::Mode> modes;  // empty: fp32, tf32, amp-fp16, amp-bf16, bf16
  std::string attention = "auto";     // auto, fused or unfused (AttentionKernels)
  std::string tensor_cores = "on";    // on, off or batched-off (TensorCorePolicy); a GPU counterfactual
  std::string activation_storage = "half";  // half or emulated (ActivationStorage); a counterfactual
  std::string data_file;         // uint16 tokens; empty: the synthetic Markov chain
  std::string checkpoint_in;     // start from these weights
  std::string checkpoint_out;    // write each mode's final weights into checkpoint_out/<mode>/
  std::uint64_t seed = 1;
  float max_lr = 6e-4f;          // peak learning rate (GPT-2's); the cosine decays to a tenth of it
  float loss_scale = amp::ScalerConfig{}.init_scale;  // initial dynamic loss scale (GradScaler's init_scale)
  bool quick = false;
  double max_noise = 0.005;      // the run's noise target (SamplerConfig::max_noise): see TransformerPlan
  bool profile = false;          // profile a few extra steps per mode (details.profile, breakdown)
  std::string trace_file;        // Chrome trace of each mode's profiled steps (implies profile)
  bool counters = false;         // GPU: count every kernel's tensor pipe % in one more step (implies profile)
};

// --quick on a CPU without --config or --checkpoint-in: the default model (small) at a quarter of
// its tokens per step, for fewer steps, each unless given (a quick run of small_b4_t256's 10
// steps in each of four modes took most of a quick CPU run).
struct QuickCpuDefaults {
  int batch, seq_len, steps;
};
inline constexpr QuickCpuDefaults kQuickCpu{2, 128, 6};

// Steps profiled per mode after the timed ones (when asked).
inline constexpr int kProfiledSteps = 3;

// The run after defaults are filled in and everything is checked (UsageError otherwise): what the
// suite will do, decided before any work.
struct TransformerPlan {
  GptConfig config;
  TrainOptions train;
  int timing_warmup = 1;
  // A mode whose timed steps spread (stddev/mean) within this met the run's noise target
  // (details.measurement.converged); the steps are a fixed number either way.
  double max_noise = 0.005;
  // What --quick changed from the defaults (kQuickCpu), for details.quick; empty when nothing.
  std::string quick_note;
  std::vector<amp::Mode> modes;
  std::string data_file;
  std::string checkpoint_in, checkpoint_out;
  int profile_steps = 0;   // extra steps per mode, profiled and left out of the step-time statistics
  std::string trace_file;  // empty: no trace
  bool counters = false;   // after the profiled steps, one step with hardware counters per kernel
  // Which GEMMs the ops may run on Tensor Cores; the ops are set to it by whoever makes them.
  TensorCorePolicy tensor_cores = TensorCorePolicy::on;
  // The attention kernels every mode runs; none (auto): fused where the ops have fused attention
  // for the mode's precision, unfused elsewhere (plan.train.attention is unused until then).
  std::optional<AttentionKernels> attention;
  // e.g. "small_b4_t256", with "_tc-off" or "_tc-batched-off" unless Tensor Cores are on,
  // "_att-fused" or "_att-unfused" when the attention kernels were chosen by hand, and
  // "_act-emulated" when half-type activations are asked to be emulated.
  std::string case_name() const;
};

// Where a mode's trace goes: the mode before the extension ("trace.json" -> "trace.amp-bf16.json").
std::filesystem::path trace_path_for(const std::string& trace_file, amp::Mode mode);

// Fills defaults and validates. Throws UsageError for a bad value (a Tensor Core policy other than
// on for a CPU among them), or for a batch whose training state does not fit in `device`'s memory
// (naming what it needs and the largest batch that fits).
TransformerPlan plan_transformer_run(const TransformerSuiteOptions& options, const DeviceInfo& device);

// One line per reported step, on stderr by the caller.
using TrainingProgress = std::function<void(const std::string& line)>;
// Each mode's case as soon as it is final (ok, error or skipped), before the next mode starts.
using ModeFinished = std::function<void(const CaseResult& c)>;

struct TransformerOutcome {
  std::vector<CaseResult> cases;  // one per mode, finished modes only when interrupted
  bool interrupted = false;
};

// Why `mode` cannot run on `ops` with the attention kernels the plan gives it (then a skipped case),
// or nothing.
std::optional<std::string> mode_skip_reason(const TransformerPlan& plan, TransformerOps<float>& ops, amp::Mode mode);

// Trains every mode of the plan on `ops`. A mode the ops cannot run (in the plan's attention
// kernels, when they are set) is a skipped case with the reason; one that fails (out of memory, a
// NaN loss without loss scaling) is an error case, and the next mode still runs; but a data-parallel
// mode (a reducer of several ranks) that fails on this rank throws BackendError naming the mode:
// the other ranks would wait in its next all-reduce, so the caller ends the job. Each final case
// goes to `finished` before the next mode starts. With plan.profile_steps, each mode then runs
// that many steps under the profiler `start_profiler` gives (details.profile; on a GPU
// details.breakdown too); when it cannot profile (profiler::CuptiUnavailable) the mode is marked
// unprofiled with the reason and a note goes to `progress`.
TransformerOutcome run_transformer_suite(const TransformerPlan& plan, TransformerOps<float>& ops,
                                         const DeviceInfo& device, const TrainingProgress& progress,
                                         const StartStepProfiler& start_profiler = start_step_profiler,
                                         const ModeFinished& finished = {});

// Adds, to each transformer case, its final loss against the fp32 case's (relative difference).
void compare_final_losses(std::vector<CaseResult>& cases);

}  // namespace mpbench::workloads
