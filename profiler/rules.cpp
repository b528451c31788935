#include "profiler/rules.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "profiler/against.hpp"

namespace mpbench::profiler {

namespace {

// In the order `explain` applies them: the verdict, per case (GEMM records, the ratio, the
// breakdown, training), the whole document, then --peer and --against.
constexpr Rule kRules[] = {
    // The verdict (profiler/verdict.cpp).
    {"verdict", "details.gemm_path, env.cpu.flags, env.backend.onednn, env.device.name", 0, "-",
     "{device} runs its {precisions} GEMMs {natively|converted to fp32} ({reason}); measured here: {speedups}",
     "hardware with the instructions the reason names (AVX512-BF16, AMX, Tensor Cores); --cpu-gemm auto; --cpu-isa all"},
    {"verdict_mode", "the explanation: each mode's speedups and their intervals, its warnings, its decomposition",
     0.05, "pays | is on par | does not pay: the speedups' 99% intervals above, within or below time ±5%",
     "{mode} pays here | is on par here | does not pay here: {median}x over {baseline} ({interval}); limited by "
     "{rule} ({message}); what would change that: {fix}",
     "-"},
    {"verdict_training", "speedups of transformer cases, details.breakdown", 0, "-",
     "{mode} trains at {speedup}x {baseline}'s speed per step: its GEMMs {x}x, everything else {y}x", "-"},
    {"verdict_gemm", "speedups of gemm cases, details.gemm_path", 0, "-",
     "{precision} GEMMs: {median}x over {baseline} (median of {n} shapes)", "-"},
    {"verdict_memory_bound", "speedups of bandwidth cases", 0, "-",
     "memory-bound kernels in {precision}: {median}x over {baseline} (half the bytes allow 2x)", "-"},
    {"verdict_casts", "rates.pct_of_copy of cast cases", 0, "-",
     "a conversion runs at {pct}% of a copy: each cast costs about {n} copies", "-"},
    // A case's GEMM records.
    {"gemm_not_on_tensor_cores",
     "details.algorithm.tensor_cores, params.m/n/k; with breakdowns the gemm_cuda_core share of a non-fp32 step", 0.01,
     "any CUDA-core GEMM record; with breakdowns >= 1% of the step",
     "{precision} GEMM did not run on Tensor Cores; likely reason: {misaligned dims | the heuristic's choice}",
     "pad m, n and k to multiples of 8 (4 for tf32, 16 for fp8)"},
    {"misaligned_dimension", "params.m/n/k with details.algorithm.tensor_cores true", 0, "not a multiple of 8 (tf32 4, fp8 16)",
     "{dims} not a multiple of {align}: Tensor Cores were still used, but such shapes often get slower kernels",
     "pad the dimension to a multiple of 8"},
    {"converted_gemm", "details.gemm_path.path == converted", 0, "-",
     "{precision} ran converted: {reason}; it costs fp32's matmul plus the conversions",
     "hardware with native instructions for the precision, or --cpu-gemm auto"},
    {"no_bf16_hardware_path", "details.algorithm.implementation, run.cpu_isa, env.onednn.effective_isa", 0, "-",
     "oneDNN ran bf16 through '{impl}', which has no bf16 instructions ({cause})",
     "a CPU with AVX512-BF16 or AMX, or lift --cpu-isa"},
    {"no_fp16_hardware_path", "details.algorithm.implementation, run.cpu_isa, env.onednn.effective_isa", 0, "-",
     "oneDNN ran fp16 through '{impl}', which has no fp16 instructions ({cause})",
     "a CPU with AVX512-FP16 or AMX-FP16, or lift --cpu-isa"},
    {"memory_bound", "params.flops/bytes against the document's ridge; speedups of bandwidth cases", 0, "-",
     "{intensity} FLOP/byte below the measured ridge of {ridge} | {speedup}x of the 2x halving the bytes allows",
     "-"},
    {"gemm_algorithms_off_tensor_cores", "details.gemm_algorithms[].tensor_cores, params.tensor_cores, m/n/k", 0,
     "any record without a Tensor Core op type",
     "{n} of {total} cuBLASLt algorithms of {precision} have no Tensor Core op type: {gemms}; {why}",
     "--tensor-cores on; pad misaligned dimensions (--vocab-pad 64)"},
    {"misaligned_vocabulary", "params.config.padded_vocab of transformer cases in tf32/amp-fp16/amp-bf16/bf16", 0,
     "not a multiple of 8 (tf32 4)",
     "the vocabulary, padded to {vocab}, is not a multiple of {align}: a dimension of the LM head's GEMMs",
     "pad the vocabulary to a multiple of 64 (--vocab-pad 64)"},
    // The ratio.
    {"too_noisy", "metrics.seconds values of both cases (Student's t on ln times, as compare)", 0.05,
     "the 99% interval reaches across an edge of time ±5% (a share: across the rule's threshold)",
     "{speedup}x over {baseline} ({interval}): across an edge of the ±5% band, no cause named",
     "training: more --steps or several runs and mpbench compare; microbenchmarks: a longer --timeout and "
     "--min-time, or several runs and mpbench compare"},
    {"slower_than_baseline", "the speedup", 1, "speedup < 1", "{speedup}x: slower than {baseline}", "-"},
    {"below_datasheet_ratio", "details.peak.tflops of both cases", 0.5, "speedup < 0.5 x the peaks' ratio",
     "{speedup}x over {baseline} where the datasheet peaks allow {ratio}x", "-"},
    {"conversion_bound", "speedups of 16-bit bandwidth cases", 0.9, "speedup < 0.9",
     "{speedup}x: the per-element conversions to and from fp32 cost more than the halved bytes save",
     "keep the data in 16 bits between kernels (fewer casts)"},
    {"cache_effect", "speedups of 16-bit bandwidth cases", 2.2, "speedup > 2.2",
     "{speedup}x is more than the 2x that halving the bytes allows: a faster cache level", "-"},
    // The breakdown (--profile).
    {"cast_overhead", "details.breakdown cast share of the mode's step", 0.05, "cast >= 5% of the step",
     "precision casts take {share} of the step ({ms})", "keep weights and activations in 16 bits between ops"},
    {"optimizer_share", "details.breakdown optimizer share of the mode's step", 0.10, "optimizer >= 10% of the step",
     "optimizer ops take {share} of the step ({ms})", "a fused (multi-tensor) optimizer"},
    {"memory_bound_share", "details.breakdown memory-bound categories' share", 0.30, ">= 30% of the step",
     "memory-bound kernels take {share} of the step: 16-bit storage at best halves them", "fuse elementwise kernels"},
    {"launch_gaps", "details.breakdown.gaps_s / region_s", 0.10, "gaps >= 10% of the region",
     "the GPU idles {share} of the region between kernels ({ms}): the input wait | host syncs | launch-bound",
     "fewer, fused kernels or CUDA graphs"},
    {"unattributed_time", "details.breakdown.unattributed_s", 0.01, ">= 1% of the step",
     "{share} of the time could not be attributed to an op", "-"},
    {"loss_scale_overflows", "details.loss_scale", 0, "any drop", "the loss scale dropped {n} time(s)", "-"},
    {"attention_kernels_differ", "params.attention of the case and its baseline", 0, "-",
     "attention ran {mine} in {precision} but {theirs} in the baseline: part of the speedup is the attention",
     "--attention unfused to compare precisions alone"},
    {"memory_saved", "details.memory.allocated_peak_bytes, activation_bytes, params.activation_storage", 0, "-",
     "peak memory {peak} against {base}: saves|costs {pct}", "--activation-storage half shows what the mode saves"},
    // Root causes of one case (profiler/causes.cpp).
    {"small_batch_casts", "params.batch, details.breakdown cast share of the mode's step", 8,
     "batch <= 8 with casts >= cast_overhead's share",
     "casts take {share} of the {mode} step at batch {batch}: the weights are cast once a step whatever the batch",
     "raise the batch (or accumulate micro-batches)"},
    {"tensor_core_share_small", "details.breakdown of the baseline: its GEMM share", 0.5,
     "GEMMs < 50% of the baseline's step (bound < 2x)",
     "GEMMs are {share} of the {baseline} step: with them infinitely fast the step gains at most {bound}x (Amdahl)",
     "speed up or fuse the non-GEMM work (the largest other category); mixed precision cannot"},
    {"pseudo_fp16_sgemm", "kernel names (details.profile.kernels, details.breakdown.top_kernels), details.algorithm",
     0, "an sgemm kernel, or fp16 inputs with CUBLAS_COMPUTE_32F off Tensor Cores",
     "{mode} GEMMs ran as fp32 sgemm on fp16 storage ({kernels}): pseudo-fp16",
     "true fp16 GEMMs: hgemm or Tensor Core math (cublasGemmEx with CUBLAS_COMPUTE_16F or a Tensor Core algorithm)"},
    {"baseline_not_pedantic", "details.algorithm / details.gemm_algorithms compute_type and tensor_cores of the baseline",
     0, "any record of TF32, fp16 or bf16 math or Tensor Cores",
     "the fp32 baseline is not pedantic fp32: {n} of its {total} GEMM records ran {math} (compute type {type})",
     "compare against the math it used (--baseline tf32), or a pedantic fp32 baseline (PyTorch: "
     "torch.backends.cuda.matmul.allow_tf32 = False)"},
    {"fp32_gradient_reduce",
     "params.world_size, params.grad_reduce (else details.communication.dtype), details.communication", 0,
     "grad_reduce fp32 under a 16-bit mode, world_size > 1",
     "gradients travel in fp32 under {mode} across {n} ranks ({library}); {s} of communication per step, {e} exposed",
     "reduce gradients in the mode's 16-bit type (grad_reduce bf16 or fp16)"},
    {"exposed_communication", "details.communication.exposed_seconds_per_step against the step's median", 0.10,
     "exposed >= 10% of the step",
     "the {mode} step waits {share} of its time for the gradient reduction: it does not get faster with the precision",
     "overlap the reduction with the backward pass (bucketed all-reduce), reduce in 16 bits, or a faster interconnect"},
    {"fp8_quantization_share", "details.fp8.per_step[].quantize_seconds of the timed steps, the step's median", 0.10,
     "quantization >= 10% of the step (below: info)",
     "{mode} spends {share} of its step quantizing ({ms} per step: amax, scales, the casts to fp8 and back)",
     "fuse the casts into the producing kernels (cast-transpose-amax in one pass), keep fp8 weight copies across "
     "micro-batches; on small GEMMs stay in bf16"},
    {"fp8_saturation", "details.fp8.per_step[].by_operand.{saturated,elements} summed over the steps", 1e-4,
     ">= 0.01% of an operand kind's values clamped",
     "{mode} clamped {n} of {m} {operand} values ({share}, {format}) to the format's largest finite value",
     "a margin (--fp8-margin), scales from each tensor's own amax (fp8-current) or per block (mxfp8)"},
    {"fp8_loss_drift",
     "details.final_loss of an fp8 mode and of its amp-bf16 (else bf16) twin; with explain --noise, that twin's in "
     "the second run",
     0.03, "|fp8 - bf16| beyond the two bf16 runs' difference (without --noise: 3% of bf16's loss; below: info)",
     "{mode}'s final loss {loss} is {drift} ({pct}) from {bf16}'s {loss}: beyond the noise of two bf16 runs ({noise})",
     "a margin (--fp8-margin), a shorter amax history or current scaling, per-block scales (mxfp8); keep the "
     "sensitive GEMMs (the LM head) in bf16"},
    {"fp8_gemm_below_crossover",
     "details.quantize.end_to_end_seconds of fp8-e4m3 gemm cases, seconds.median of the same shape's bf16 case, "
     "the square_N cases of the document",
     0, "fp8 end to end slower than bf16",
     "{name}: fp8-e4m3 end to end (the casts from bf16, then the GEMM) takes {ms} against bf16's {ms}; the casts are "
     "{share} of it. Crossover (the smallest square size from which on fp8 end to end beats bf16 in this document): "
     "square_{n} or none measured",
     "stay in bf16 below the crossover size, or fuse the casts into the kernels that produce the operands "
     "(cast-transpose-amax in one pass) and keep fp8 weight copies across micro-batches"},
    {"input_wait", "details.host.input_wait_s_per_step (data_s_per_step + staging_s_per_step), details.host.step_s",
     0.10, "input wait >= 10% of the profiled step",
     "the {mode} step waits {share} of its time for its input ({data} reading, {staging} staging)",
     "prefetch batches on another thread, pin the host buffers and stage them asynchronously"},
    {"host_syncs", "details.host.host_syncs_per_step, kernel_s_per_step, step_s", 1,
     ">= 1 sync per step while the GPU is busy < host_bound_step's share of it",
     "{n} host-device synchronisations per step while the GPU is busy only {share} of it",
     "avoid the per-step sync: keep the loss scale and the loss on the device, read them every N steps"},
    {"host_bound_step", "kernel time per step (details.host.kernel_s_per_step, else a GPU breakdown) of both cases, "
     "the measured speedup", 0.8, "step speedup < 0.8 x the kernels' speedup",
     "the {mode} kernels ran {k}x faster than {baseline}'s but the step only {s}x: {host} is host time; its largest "
     "part is the input wait | host syncs | launch gaps",
     "CUDA graphs or fewer, fused kernels; fewer host syncs; a faster input pipeline"},
    // Root causes of the whole document (profiler/causes.cpp).
    {"no_tensor_cores", "run.device, env.device.compute_capability, env.device.name", 7.0,
     "compute capability < 7.0, or a GeForce GTX 16 (7.5 without Tensor Cores)",
     "{gpu} is compute capability {cc}: no Tensor Cores, so no mixed-precision mode will pay through its GEMMs",
     "hardware: a GPU of compute capability 7.0 or later (V100, T4, RTX 20xx and later; 8.0 or later for bf16)"},
    {"library_too_old", "env.cuda.runtime, env.cuda.cudnn against the table of fixes (library_fixes()), the cases' "
     "suite/name and precision", 0, "a version below the one that fixed an op the run has",
     "{library} {version} predates the releases that run these on Tensor Cores: {ops}; upgrade to {version}",
     "upgrade the library to the version named (a wheel bundles its own: pick one built with it)"},
    {"no_bf16_instructions", "env.cpu.flags, env.backend.onednn.effective_isa, bf16 cases' status and message", 0,
     "neither avx512_bf16 nor amx_bf16",
     "{cpu} has no bf16 instructions: env.cpu.flags has {flags}, oneDNN ran ISA {isa}; skipped: {reasons}",
     "hardware with bf16 instructions: AVX512-BF16 (AMD Zen 4, Intel Cooper Lake and later) or AMX (Sapphire Rapids "
     "and later)"},
    // The whole document.
    {"cast_slower_than_copy", "rates.pct_of_copy of cast cases", 50, "pct_of_copy < 50",
     "{cast} runs at {pct}% of a copy of the same elements: each cast costs {n}x a copy", "-"},
    // --peer (profiler/peer.cpp).
    {"peer_comparison", "both documents' median times per suite and precision", 0, "-",
     "mpbench against PyTorch: {ratio} (median of {n}); over {baseline}: mpbench {x}x, PyTorch {y}x", "-"},
    {"peer_bf16_fallback", "PyTorch's and mpbench's speedups, env.cpu.flags", 0.5,
     "PyTorch's speedup < 1 and < 0.5 x mpbench's",
     "PyTorch falls back to a slow path for bf16 on CPUs without bf16 instructions",
     "a CPU with AVX512-BF16 or AMX"},
    {"peer_fp16_fallback", "PyTorch's and mpbench's speedups, env.cpu.flags", 0.5,
     "PyTorch's speedup < 1 and < 0.5 x mpbench's",
     "PyTorch falls back to a slow path for fp16 on CPUs without fp16 instructions",
     "a CPU with AVX512-FP16 or AMX-FP16"},
    {"peer_slow_low_precision", "PyTorch's and mpbench's speedups", 0.5, "PyTorch's speedup < 1 and < 0.5 x mpbench's",
     "PyTorch's {precision} is {x}x slower than mpbench's run shows the hardware allows", "-"},
    {"peer_other_machine", "env.cpu.model of both documents", 0, "-", "PyTorch's document measured another machine",
     "run both on the same machine"},
    // --against (profiler/against.cpp).
    {"library_versions", "env.cuda, env.onednn, env.gpus of both documents", 0, "-",
     "library versions, the other document -> this one: {versions}", "-"},
    {"algorithm_changed", "speedups and GEMM algorithm records of both documents", kAgainstSpeedupChange,
     "speedup moved >= 10%", "{speedup}x here against {other}x in the other document: {n} GEMM algorithms changed",
     "keep the library versions that chose the faster algorithms"},
};

}  // namespace

std::span<const Rule> explain_rules() { return kRules; }

const Rule* find_explain_rule(std::string_view name) {
  for (const Rule& r : kRules)
    if (r.name == name) return &r;
  return nullptr;
}

const Rule& explain_rule(std::string_view name) {
  if (const Rule* r = find_explain_rule(name)) return *r;
  throw std::logic_error(fmt::format("explain has no rule named '{}'", name));
}

std::string rules_text() {
  std::string out;
  for (const Rule& r : kRules)
    out += fmt::format("{}\n    reads:     {}\n    threshold: {}\n    fix:       {}\n", r.name, r.reads,
                       r.threshold_text, r.fix);
  return out;
}

}  // namespace mpbench::profiler
