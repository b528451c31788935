// mpbench run: the CLI11 front of run.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdint>

#include "backends/cpu/isa.hpp"
#include "cli/commands.hpp"
#include "cli/run.hpp"
#include "cli/suite_selection.hpp"
#include "core/error.hpp"
#include "microbench/case_profile.hpp"
#include "workloads/config.hpp"
#include "workloads/transformer_suite.hpp"

namespace mpbench::cli {

namespace {
const CLI::Validator kPositive(
    [](std::string& text) {
      double value = 0;
      return CLI::detail::lexical_cast(text, value) && value > 0 ? std::string() : "must be a number above 0, got " + text;
    },
    "POSITIVE");
const CLI::Validator kNonNegative(
    [](std::string& text) {
      double value = -1;
      return CLI::detail::lexical_cast(text, value) && value >= 0 ? std::string() : "must be a number of 0 or more, got " + text;
    },
    "NON-NEGATIVE");
// A whole number that fits 64 bits: CLI11 would take a larger one and saturate it to 2^64-1.
const CLI::Validator kUint64(
    [](std::string& text) {
      std::uint64_t value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error == std::errc::result_out_of_range) return "must be at most 2^64-1 (18446744073709551615), got " + text;
      return error == std::errc() && end == text.data() + text.size() ? std::string()
                                                                      : "must be a whole number from 0 to 2^64-1, got " + text;
    },
    "UINT64");
// Each suite's precisions, from the suites themselves; the transformer's are its modes, the fp8
// modes among them although a default run leaves them out (`list --suite transformer` lists them).
std::string precision_help() {
  std::string help = "comma-separated precisions to run (default: all the suite has; the transformer's all but the fp8 modes)";
  for (const microbench::Suite& suite : microbench::suites())
    help += fmt::format("; {}: {}", suite.name, fmt::join(suite.precisions, ", "));
  return help + fmt::format("; {} (modes): {}", workloads::kTransformerSuite, amp::mode_names());
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "run benchmark suites and write one result document");
  auto o = std::make_shared<RunOptions>();
  auto max_noise = std::make_shared<double>(0), min_time = std::make_shared<double>(0), timeout = std::make_shared<double>(0);
  cmd->add_option("--suite", o->suites,
                  fmt::format("{} or all (repeat or comma-separate)", fmt::join(suite_names(), ", ")))
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--device", o->device, "auto (GPU if usable, else CPU), cuda, cuda:N or cpu")->capture_default_str();
  cmd->add_option("--precision", o->precisions, precision_help())->delimiter(',');
  cmd->add_option("--filter", o->filter, "regular expression on the microbenchmark case ids suite/case/precision");
  cmd->add_flag("--quick", o->quick, "fewer sizes and a looser noise target (a smoke run)");
  cmd->add_option("--out", o->out, "result document to write (JSON, schema mpbench.result/1)")->capture_default_str();
  cmd->add_option("--shape", o->shapes, "extra GEMM shape MxNxK[xBATCH] for the gemm suite (repeatable)");
  cmd->add_option("--cpu-isa", o->cpu_isa,
                  fmt::format("limit oneDNN to an instruction set, as DNNL_MAX_CPU_ISA does: {}", fmt::join(cpu::isa_names(), ", ")));
  cmd->add_option("--cpu-gemm", o->cpu_gemm,
                  "how a CPU runs bf16, fp16 and fp8 GEMMs: auto (natively where it has the instructions, e.g. "
                  "AVX512-BF16 or AMX, else converted), native (only natively: an error where the CPU cannot), or "
                  "converted (operands widened to fp32, the fp32 matmul, the result rounded back); cases record "
                  "details.gemm_path")
      ->check(CLI::IsMember({"auto", "native", "converted"}))->capture_default_str();
  auto* noise = cmd->add_option("--max-noise", *max_noise, "stop sampling once stddev/mean is below this (default 0.005; --quick 0.02)")->check(kPositive);
  auto* mintime = cmd->add_option("--min-time", *min_time, "seconds of device time to accumulate per case at least (default 0.5; --quick 0.05)")->check(kPositive);
  auto* limit = cmd->add_option("--timeout", *timeout, "wall-clock seconds per case at most (default 15; --quick 0.25)")->check(kPositive);
  auto& t = o->transformer;
  const std::string training = "Transformer training";
  cmd->add_option("--config", t.config,
                  fmt::format("model config: {} (default: small on a CPU, gpt2-124m on a GPU)",
                              fmt::join(workloads::config_names(), ", ")))->group(training);
  cmd->add_option("--batch", t.batch, "sequences per micro-batch (default: 4 for tiny/small, 8 for GPT-2 sizes on a GPU, 1 on a CPU; --quick on a CPU without --config 2)")
      ->check(kPositive)->group(training);
  cmd->add_option("--seq", t.seq_len, "tokens per sequence (default: the config's context length; --quick on a CPU without --config 128)")
      ->check(kPositive)->group(training);
  cmd->add_option("--steps", t.steps, "optimizer steps per mode (default 30; --quick 10, on a CPU without --config 6)")->check(kPositive)->group(training);
  cmd->add_option("--warmup-steps", t.warmup_steps, "first steps left out of the step-time statistics (default: steps/5, at least 1)")
      ->check(kNonNegative)->group(training);
  cmd->add_option("--micro-batches", t.micro_batches, "gradient accumulation: micro-batches per optimizer step")
      ->check(kPositive)->capture_default_str()->group(training);
  cmd->add_option("--grad-reduce", o->grad_reduce,
                  "under a launcher (several ranks): what the gradients' all-reduce moves, fp32, bf16 or fp16")
      ->capture_default_str()->group(training);
  cmd->add_option("--grad-buckets", o->grad_buckets,
                  "under a launcher: MiB of fp32 gradients per all-reduce bucket (whole tensors, last layer first), "
                  "each started as soon as the backward pass has finished its gradients, overlapping the rest of "
                  "the backward (PyTorch DDP's bucket_cap_mb); 0 sums every gradient at once after the backward pass")
      ->check(kNonNegative)->capture_default_str()->group(training);
  cmd->add_option("--fp8-history", t.fp8_history,
                  "fp8-delayed: steps of amax history each tensor's scale is taken from (the max over them)")
      ->check(kPositive)->capture_default_str()->group(training);
  cmd->add_option("--fp8-margin", t.fp8_margin,
                  "fp8-delayed and fp8-current: scales divided by 2^margin (headroom against growing amax), 0 to 30")
      ->check(CLI::Range(0, 30))->capture_default_str()->group(training);
  cmd->add_option("--mx-scale-rounding", t.mx_scale_rounding,
                  "mxfp8: each 32-element block's power-of-two scale from its amax: down (the OCP MX spec, "
                  "2^(floor(log2 amax) - 8); the block's top values may saturate at 448) or up (Transformer Engine, "
                  "2^ceil(log2(amax / 448)); none saturates)")
      ->check(CLI::IsMember({"down", "up"}))->capture_default_str()->group(training);
  cmd->add_flag("--fp8-requantize-backward{false}", t.fp8_keep_forward_copies,
                "fp8-delayed and fp8-current: quantize the backward GEMMs' inputs and weights, and every "
                "micro-batch's weights, again instead of reusing the forward's fp8 copies (as Transformer Engine "
                "does); the same numbers, the cost of not keeping them")
      ->group(training);
  cmd->add_option("--vocab-pad", t.vocab_pad, "pad the vocabulary to a multiple of this (64 gives llm.c's 50304; 1 keeps 50257)")
      ->check(kPositive)->capture_default_str()->group(training);
  cmd->add_option("--attention", t.attention,
                  "attention kernels: fused (cuDNN's fused attention: CUDA, fp16/bf16 modes; other modes are skipped), "
                  "unfused (batched GEMMs + softmax, every mode), or auto (fused where it can run, else unfused; "
                  "each case records which in params.attention). fused and unfused add an _att-... suffix to the case")
      ->check(CLI::IsMember({"auto", "fused", "unfused"}))->capture_default_str()->group(training);
  cmd->add_option("--activation-storage", t.activation_storage,
                  "half: activations a mode keeps in fp16/bf16 take 2 bytes; emulated: fp32 buffers rounded to the "
                  "type after each op, the same values in twice the bytes (a counterfactual: cases get an "
                  "_act-emulated suffix). params.activation_storage records which each mode used")
      ->check(CLI::IsMember({"half", "emulated"}))->capture_default_str()->group(training);
  cmd->add_option("--tensor-cores", t.tensor_cores,
                  "counterfactual (GPU only): on; off forces every GEMM onto CUDA-core algorithms; batched-off only "
                  "attention's batched GEMMs (as fp16 batched GEMMs ran before CUDA 9.1). Cases get a _tc-off or "
                  "_tc-batched-off suffix")
      ->check(CLI::IsMember({"on", "off", "batched-off"}))->capture_default_str()->group(training);
  cmd->add_option("--data", t.data_file, "file of little-endian uint16 token ids to train on (default: a synthetic Markov chain with a known entropy floor)")
      ->group(training);
  cmd->add_option("--checkpoint-in", t.checkpoint_in, "start every mode from the weights in this checkpoint directory")->group(training);
  cmd->add_option("--checkpoint-out", t.checkpoint_out,
                  "write each mode's final weights as DIR/<mode>/ (safetensors with Hugging Face GPT-2 names, config.json, "
                  "a batch and its fp32 loss and gradients): check them with scripts/check_against_pytorch.py")
      ->group(training);
  cmd->add_option("--lr", t.max_lr, "peak learning rate after the warm-up (cosine decay to a tenth of it)")
      ->check(kPositive)->capture_default_str()->group(training);
  cmd->add_option("--loss-scale", t.loss_scale,
                  "amp-fp16's initial loss scale (dynamic loss scaling halves it on each overflow, as GradScaler's "
                  "init_scale)")
      ->check(kPositive)->capture_default_str()->group(training);
  cmd->add_option("--seed", t.seed, "seed of the weights and of the synthetic data (0 to 2^64-1)")
      ->check(kUint64)
      ->capture_default_str()
      ->group(training);
  const std::string profiling = "Profiling (after the measurements, never during them)";
  cmd->add_flag("--profile", t.profile,
                fmt::format(
                    "transformer: after each mode's timed steps, profile 3 more (CUPTI on a GPU, host-timed op ranges "
                    "on the CPU): details.profile (overhead against the timed steps), and on a GPU details.breakdown "
                    "per category, op and kernel. Microbenchmarks on a GPU: after each case's measurement, run its "
                    "operation {} more times under CUPTI: details.profile lists its top kernels (cuBLASLt's for a "
                    "GEMM) with their category and whether the name says Tensor Cores, and kernel time against the "
                    "measured median; CPU cases are unprofiled, with the reason. Where CUPTI is unavailable the run "
                    "goes on unprofiled and says why",
                    microbench::kProfiledIterations))
      ->group(profiling);
  cmd->add_flag("--counters", t.counters,
                "transformer on a GPU: after the profiled steps, one more step with every kernel's tensor pipe % read "
                "by CUPTI's range profiler (kernel replay: slow, never timed); the breakdown's Tensor Core evidence "
                "becomes measured, details.profile.counters says how it went. Needs counter permission (root or "
                "NVreg_RestrictProfilingToAdminUsers=0); without it the run goes on and says why. Implies --profile")
      ->group(profiling);
  cmd->add_option("--trace", t.trace_file,
                  "transformer suite only: write each mode's profiled steps as a Chrome trace (Perfetto UI, "
                  "chrome://tracing) to FILE with the mode before the extension, e.g. trace.amp-bf16.json; implies "
                  "--profile")
      ->option_text("FILE")
      ->group(profiling);
  cmd->allow_extras();
  cmd->footer(
      "Options starting with --benchmark_ go to Google Benchmark, the harness (e.g. --benchmark_filter, "
      "--benchmark_repetitions=N whose samples are pooled, --benchmark_out=FILE --benchmark_out_format=json). "
      "--benchmark_min_time has no effect: each case runs mpbench's own sampler, set by --max-noise, --min-time and --timeout.\n"
      "Exit status: 0 every case ok or skipped, 1 a case failed or the document could not be written (it is then "
      "kept in the temporary folder, as the error says), 2 bad input, 128 + the signal when Ctrl-C, SIGTERM or "
      "SIGHUP interrupted it (130 for Ctrl-C; the finished cases are kept).");
  cmd->callback([cmd, o, noise, mintime, limit, max_noise, min_time, timeout, &exit_code] {
    for (const auto& extra : cmd->remaining())
      if (extra.rfind("--benchmark_", 0) == 0) o->benchmark_args.push_back(extra);
      else throw UsageError(fmt::format("run: unknown option or argument '{}': see mpbench run --help", extra));
    if (*noise) o->max_noise = *max_noise;
    if (*mintime) o->min_time = *min_time;
    if (*limit) o->timeout = *timeout;
    exit_code = run_benchmarks(*o);
  });
}

}  // namespace mpbench::cli
