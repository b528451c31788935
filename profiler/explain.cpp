#include "profiler/explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/figure_text.hpp"
#include "profiler/against.hpp"
#include "profiler/breakdown.hpp"
#include "profiler/causes.hpp"
#include "profiler/classify.hpp"
#include "profiler/evidence.hpp"
#include "profiler/fp8_rules.hpp"
#include "profiler/mode_verdict.hpp"
#include "profiler/noise_gate.hpp"
#include "profiler/rules.hpp"
#include "profiler/verdict.hpp"

namespace mpbench::profiler {

namespace {

using nlohmann::json;

// A rule's threshold, from its entry in the table (profiler/rules.cpp).
double threshold(std::string_view rule) { return explain_rule(rule).threshold; }

double sum(const std::map<std::string, double>& m) {
  double s = 0;
  for (const auto& [k, v] : m) s += v;
  return s;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

std::string ms(double s) { return fmt::format("{:.3g} ms", s * 1e3); }
std::string pct(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

}  // namespace

// The rule's name must be in the table: explain_rule throws where a rule's code misspelt it.
Finding finding(std::string rule, std::string severity, std::string message, nlohmann::json evidence) {
  return {std::string(explain_rule(rule).name), std::move(severity), std::move(message), std::move(evidence)};
}

Decomposition decompose(const std::map<std::string, double>& baseline, const std::map<std::string, double>& mode) {
  Decomposition d;
  d.baseline_s = sum(baseline);
  d.mode_s = sum(mode);
  d.speedup = ratio(d.baseline_s, d.mode_s);
  std::set<std::string> names;
  for (const auto& [k, v] : baseline) names.insert(k);
  for (const auto& [k, v] : mode) names.insert(k);
  for (const auto& name : names) {
    CategoryShare c;
    c.category = name;
    c.baseline_s = baseline.contains(name) ? baseline.at(name) : 0.0;
    c.mode_s = mode.contains(name) ? mode.at(name) : 0.0;
    c.share_of_baseline = ratio(c.baseline_s, d.baseline_s);
    c.share_of_mode = ratio(c.mode_s, d.mode_s);
    if (c.mode_s > 0) c.speedup = c.baseline_s / c.mode_s;
    c.contribution = ratio(c.baseline_s - c.mode_s, d.baseline_s);
    c.speedup_if_only_this = ratio(d.baseline_s, d.baseline_s - c.baseline_s + c.mode_s);
    d.categories.push_back(c);
  }
  std::stable_sort(d.categories.begin(), d.categories.end(),
                   [](const CategoryShare& a, const CategoryShare& b) { return a.baseline_s > b.baseline_s; });
  const auto limiting = std::max_element(d.categories.begin(), d.categories.end(),
                                         [](const CategoryShare& a, const CategoryShare& b) { return a.mode_s < b.mode_s; });
  if (limiting != d.categories.end() && limiting->mode_s > 0) {
    d.limiting_category = limiting->category;
    d.ceiling = d.baseline_s / limiting->mode_s;
  }
  return d;
}

namespace {

using CaseKey = std::tuple<std::string, std::string, std::string>;  // suite, name, backend
CaseKey key_of(const CaseResult& c) { return {c.suite, c.name, c.backend}; }

bool is_low_precision_gemm(const std::string& precision) { return precision != "fp32" && precision != "fp64"; }

// Elements per 16 bytes: the row alignment Tensor Core kernels need (cuBLAS's tensorop restrictions).
int alignment_elements(const std::string& precision) {
  if (precision == "tf32" || precision == "fp32") return 4;
  if (precision.rfind("fp8", 0) == 0) return 16;
  return 8;
}

// The m, n and k of `problem` (a case's params, a cuBLASLt problem record) that are not a
// multiple of `align` elements, e.g. "n = 50257".
std::vector<std::string> misaligned_dims(const json& problem, int align) {
  std::vector<std::string> out;
  for (const char* dim : {"m", "n", "k"})
    if (problem.contains(dim) && problem[dim].is_number_integer() && problem[dim].get<long long>() % align != 0)
      out.push_back(fmt::format("{} = {}", dim, problem[dim].get<long long>()));
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep = ", ") {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}


// cuBLASLt's record of the chosen algorithm says whether it used Tensor Cores.
void gpu_gemm_rules(const ResultDocument& doc, const CaseResult& c, std::vector<Finding>& out) {
  const json& algo = member_or_null(c.details, "algorithm");
  if (!algo.contains("tensor_cores") || !algo["tensor_cores"].is_boolean()) return;
  const bool tensor_cores = algo["tensor_cores"].get<bool>();
  const auto misaligned = misaligned_dims(c.params, alignment_elements(c.precision));
  json evidence = {{"tensor_cores", tensor_cores}, {"m", member_or_null(c.params, "m")},
                   {"n", member_or_null(c.params, "n")}, {"k", member_or_null(c.params, "k")}};
  for (const char* field : {"algo_id", "tile", "math"})
    if (algo.contains(field)) evidence[field] = algo[field];
  if (!tensor_cores && c.precision == "fp32") {
    out.push_back(finding("gemm_not_on_tensor_cores", "info",
                          "fp32 GEMM on CUDA cores: mpbench's fp32 uses the pedantic math mode "
                          "(CUBLAS_COMPUTE_32F_PEDANTIC), which keeps Tensor Cores and TF32 off by design",
                          evidence));
  } else if (!tensor_cores) {
    const std::string reason =
        !has_tensor_cores(doc).value_or(true)
            ? fmt::format("{} has no Tensor Cores (compute capability {:.1f})",
                          string_or(member_or_null(doc.env, "device"), "name", "the GPU"), compute_capability(doc))
        : misaligned.empty()
            ? fmt::format("cuBLASLt's heuristic chose a CUDA-core algorithm for {} at this shape", c.precision)
            : fmt::format("{} not a multiple of {} ({} rows must be 16-byte aligned): pad the dimension, e.g. "
                          "vocabulary 50257 to 50304",
                          join(misaligned), alignment_elements(c.precision), c.precision);
    evidence["misaligned"] = misaligned;
    // On a GPU without Tensor Cores this is context: no_tensor_cores names the cause.
    out.push_back(finding("gemm_not_on_tensor_cores", has_tensor_cores(doc).value_or(true) ? "warning" : "info",
                          fmt::format("{} GEMM did not run on Tensor Cores; likely reason: {}", c.precision, reason),
                          evidence));
  } else if (!misaligned.empty() && is_low_precision_gemm(c.precision)) {
    evidence["misaligned"] = misaligned;
    out.push_back(finding("misaligned_dimension", "info",
                          fmt::format("{} not a multiple of {}: Tensor Cores were still used, but such shapes "
                                      "often get slower kernels than their padded neighbours",
                                      join(misaligned), alignment_elements(c.precision)),
                          evidence));
  }
}

// A GEMM the CPU ran converted (details.gemm_path): fp32's matmul plus the conversions.
void converted_gemm_rule(const CaseResult& c, std::vector<Finding>& out) {
  const json& path = member_or_null(c.details, "gemm_path");
  if (string_or(path, "path", "") != "converted") return;
  out.push_back(finding("converted_gemm", "warning",
                        fmt::format("{} ran converted: {}; it costs fp32's matmul plus the conversions", c.precision,
                                    string_or(path, "reason", "no reason recorded")),
                        {{"gemm_path", path}}));
}

// Documents without details.gemm_path: oneDNN names the ISA of the implementation it picked, and
// bf16 without "bf16" in it has no bf16 hardware path (e.g. --cpu-isa avx512_core, or a CPU without
// AVX512-BF16/AMX).
void cpu_gemm_rules(const CaseResult& c, const ResultDocument& doc, std::vector<Finding>& out) {
  if (c.details.contains("gemm_path")) return converted_gemm_rule(c, out);
  const json& algo = member_or_null(c.details, "algorithm");
  if (!algo.contains("implementation") || !algo["implementation"].is_string()) return;
  const auto impl = algo["implementation"].get<std::string>();
  const bool bf16 = c.precision == "bf16", fp16 = c.precision == "fp16";
  if (!bf16 && !fp16) return;
  const bool native = bf16 ? impl.find("bf16") != std::string::npos
                           : impl.find("fp16") != std::string::npos || impl.find("f16") != std::string::npos;
  if (native) return;
  json evidence = {{"implementation", impl}};
  const std::string capped = string_or(doc.run, "cpu_isa", "");
  if (!capped.empty()) evidence["cpu_isa"] = capped;
  if (doc.env.contains("onednn") && doc.env["onednn"].contains("effective_isa"))
    evidence["effective_isa"] = doc.env["onednn"]["effective_isa"];
  const std::string cause = capped.empty() ? "the CPU lacks the instructions oneDNN needs for it (AVX512-BF16/AVX512-FP16/AMX)"
                                           : fmt::format("--cpu-isa {} caps oneDNN below them", capped);
  out.push_back(finding(fmt::format("no_{}_hardware_path", c.precision), "warning",
                        fmt::format("oneDNN ran {} through '{}', which has no {} instructions ({}): the matmul only "
                                    "adds conversions",
                                    c.precision, impl, c.precision, cause),
                        evidence));
}

// The datasheet's peak ratio between the two precisions bounds what a compute-bound GEMM can gain.
void datasheet_rule(const CaseResult& c, const CaseResult& base, double speedup, std::vector<Finding>& out) {
  const auto peak = number_at(c.details, {"peak", "tflops"});
  const auto base_peak = number_at(base.details, {"peak", "tflops"});
  if (!peak || !base_peak || *base_peak <= 0) return;
  const double allowed = *peak / *base_peak;
  if (speedup >= threshold("below_datasheet_ratio") * allowed) return;
  out.push_back(finding("below_datasheet_ratio", "warning",
                        fmt::format("{:.2f}x over {} where the datasheet peaks allow {:.2f}x ({} of it)", speedup,
                                    base.precision, allowed, pct(speedup / allowed)),
                        {{"speedup", speedup}, {"datasheet_ratio", allowed}, {"peak_tflops", *peak},
                         {"baseline_peak_tflops", *base_peak}, {"pct_of_peak", member_or_null(c.rates, "pct_of_peak")}}));
}

using CaseIdentity = std::tuple<std::string, std::string, std::string, std::string>;  // suite, name, backend, precision

// What rules read from the whole document, gathered once: a scan of the document per case would
// make explain quadratic in the number of cases.
struct DocumentFacts {
  std::map<CaseIdentity, double> recorded_speedups;   // the document's, over the baseline
  std::map<std::string, double> ridge_flop_per_byte;  // per precision: best GEMM rate over best bandwidth
  std::map<CaseKey, const CaseResult*> fp32_cases;     // the ok fp32 case of each suite, name and backend
};

DocumentFacts gather_facts(const ResultDocument& doc, const std::string& baseline) {
  DocumentFacts facts;
  for (const auto& s : doc.speedups)
    if (s.baseline == baseline) facts.recorded_speedups[{s.suite, s.name, s.backend, s.precision}] = s.value;
  std::map<std::string, double> best_tflops;
  double best_gbps = 0;
  for (const auto& c : doc.cases) {
    if (c.status != CaseStatus::ok) continue;
    if (c.precision == "fp32") facts.fp32_cases[key_of(c)] = &c;
    if (c.suite == "gemm")
      best_tflops[c.precision] = std::max(best_tflops[c.precision], number_at(c.rates, {"tflops"}).value_or(0.0));
    const auto kernel = string_or(c.params, "kernel", "");
    if (c.suite == "bandwidth" && kernel.find("pinned") == std::string::npos)
      best_gbps = std::max(best_gbps, number_at(c.rates, {"gbps"}).value_or(0.0));
  }
  for (const auto& [precision, tflops] : best_tflops)
    if (tflops > 0 && best_gbps > 0) facts.ridge_flop_per_byte[precision] = tflops * 1e12 / (best_gbps * 1e9);
  return facts;
}

// The ridge point of the measured roofline: below it, a GEMM is memory bound.
void memory_bound_gemm_rule(const CaseResult& c, const DocumentFacts& facts, std::vector<Finding>& out) {
  const auto flops = number_at(c.params, {"flops"});
  const auto bytes = number_at(c.params, {"bytes"});
  const auto found = facts.ridge_flop_per_byte.find(c.precision);
  if (!flops || !bytes || *bytes <= 0 || found == facts.ridge_flop_per_byte.end()) return;
  const double ridge = found->second;
  const double intensity = *flops / *bytes;
  if (intensity >= ridge) return;
  out.push_back(finding("memory_bound", "info",
                        fmt::format("{:.1f} FLOP/byte is below the measured ridge of {:.1f} FLOP/byte (best GEMM rate "
                                    "over best bandwidth in this document): memory bound, where a 16-bit type at best "
                                    "halves the time",
                                    intensity, ridge),
                        {{"flop_per_byte", intensity}, {"ridge_flop_per_byte", ridge}}));
}

// Stream kernels move bytes: 16-bit arrays halve them, so 2x is the bound a memory-bound kernel
// can reach, unless the smaller arrays fit a faster cache level.
void bandwidth_rule(const CaseResult& c, double speedup, std::vector<Finding>& out) {
  constexpr double kBytesRatio = 2.0;
  if (c.precision != "fp16" && c.precision != "bf16") return;
  const json evidence = {{"speedup", speedup}, {"bytes_ratio", kBytesRatio}};
  if (speedup < threshold("conversion_bound"))
    out.push_back(finding("conversion_bound", "warning",
                          fmt::format("{:.2f}x: the per-element conversions to and from fp32 cost more than the "
                                      "halved bytes save",
                                      speedup),
                          evidence));
  else if (speedup > threshold("cache_effect"))
    out.push_back(finding("cache_effect", "info",
                          fmt::format("{:.2f}x is more than the {:.0f}x that halving the bytes allows: the 16-bit "
                                      "arrays fit a faster cache level than the fp32 ones",
                                      speedup, kBytesRatio),
                          evidence));
  else
    out.push_back(finding("memory_bound", "info",
                          fmt::format("{:.2f}x of the {:.0f}x that halving the bytes allows", speedup, kBytesRatio),
                          evidence));
}

std::map<std::string, double> checked_categories(const CaseResult& c) {
  const json& b = member_or_null(c.details, "breakdown");
  const json& source = b.is_object() && b.contains("categories") ? b["categories"] : b;
  if (!source.is_object())
    throw UsageError(fmt::format("case {}: details.breakdown must be an object of seconds per category", c.full_id()));
  for (const auto& [name, value] : source.items())
    if (!value.is_number() || value.get<double>() < 0)
      throw UsageError(fmt::format("case {}: details.breakdown category '{}' must be a number of seconds >= 0",
                                   c.full_id(), name));
  return breakdown_categories(b);
}

// fp32 GEMMs run on CUDA cores and low-precision ones on Tensor Cores: the decomposition compares
// GEMM time with GEMM time.
std::map<std::string, double> fold_gemms(const std::map<std::string, double>& categories) {
  std::map<std::string, double> out;
  for (const auto& [name, s] : categories) {
    const auto c = parse_category(name);
    out[c && is_gemm(*c) ? "gemm" : name] += s;
  }
  return out;
}

double category_seconds(const std::map<std::string, double>& m, Category c) {
  auto it = m.find(std::string(category_name(c)));
  return it == m.end() ? 0.0 : it->second;
}

void share_rule(const std::map<std::string, double>& mode, double total, Category c, const std::string& rule,
                const std::string& what, std::vector<Finding>& out) {
  const double s = category_seconds(mode, c);
  if (total <= 0 || s / total < threshold(rule)) return;
  out.push_back(finding(rule, "warning", fmt::format("{} take {} of the step ({})", what, pct(s / total), ms(s)),
                        {{"category", category_name(c)}, {"seconds", s}, {"share", s / total}}));
}

int overflow_steps(const json& details) {
  if (!details.contains("loss_scale") || !details["loss_scale"].is_array()) return 0;
  int drops = 0;
  const auto& scale = details["loss_scale"];
  for (std::size_t i = 1; i < scale.size(); ++i)
    if (scale[i].is_number() && scale[i - 1].is_number() && scale[i].get<double>() < scale[i - 1].get<double>()) ++drops;
  return drops;
}

// What the GPU's gaps between kernels are: the wait for the input or host syncs where those are the
// larger part of the host time (host_part_of), else launches.
std::string why_the_gpu_idles(const CaseResult& c) {
  const auto part = host_part_of(c);
  if (part && part->name == "input_wait")
    return fmt::format("the step waits {} for its input meanwhile, the larger part: faster input, not fewer "
                       "launches, would help",
                       ms(part->seconds));
  if (part && part->name == "host_syncs")
    return fmt::format("{:.1f} host syncs per step drain the queue: sync-bound, not held by launches; keep the loss "
                       "scale and the loss on the device",
                       number_at(member_or_null(c.details, "host"), {"host_syncs_per_step"}).value_or(0));
  return "launch-bound; fewer, fused kernels or CUDA graphs would help";
}

std::string host_part_name(const CaseResult& c) {
  const auto part = host_part_of(c);
  return part ? part->name : "launch_gaps";
}

void breakdown_rules(const CaseResult& c, const std::map<std::string, double>& mode, std::vector<Finding>& out) {
  const double total = sum(mode);
  if (c.precision != "fp32")
    share_rule(mode, total, Category::gemm_cuda_core, "gemm_not_on_tensor_cores",
               "GEMMs without Tensor Core evidence", out);
  share_rule(mode, total, Category::cast, "cast_overhead", "precision casts", out);
  share_rule(mode, total, Category::optimizer, "optimizer_share", "optimizer ops (AdamW, clipping, zeroing, loss scaling)", out);
  double memory_bound = 0;
  for (const auto& [name, s] : mode)
    if (auto cat = parse_category(name); cat && is_memory_bound(*cat)) memory_bound += s;
  if (total > 0 && memory_bound / total >= threshold("memory_bound_share"))
    out.push_back(finding("memory_bound_share", "warning",
                          fmt::format("memory-bound kernels (elementwise, normalization, cast, reduction, copy, "
                                      "optimizer) take {} of the step: 16-bit storage at best halves them",
                                      pct(memory_bound / total)),
                          {{"seconds", memory_bound}, {"share", memory_bound / total}}));
  const json& b = member_or_null(c.details, "breakdown");
  const auto gaps = number_at(b, {"gaps_s"}), region = number_at(b, {"region_s"});
  if (gaps && region && *region > 0 && *gaps / *region >= threshold("launch_gaps"))
    out.push_back(finding("launch_gaps", "warning",
                          fmt::format("the GPU idles {} of the region between kernels ({}): {}", pct(*gaps / *region),
                                      ms(*gaps), why_the_gpu_idles(c)),
                          {{"gaps_s", *gaps}, {"region_s", *region}, {"largest_part", host_part_name(c)}}));
  const auto unattributed = number_at(b, {"unattributed_s"});
  if (unattributed && total > 0 && *unattributed / total >= threshold("unattributed_time"))
    out.push_back(finding("unattributed_time", "info",
                          fmt::format("{} of the {} time could not be attributed to an op", pct(*unattributed / total),
                                      c.backend == "cuda" ? "GPU" : "step's"),
                          {{"unattributed_s", *unattributed}}));
  if (const int drops = overflow_steps(c.details); drops > 0)
    out.push_back(finding("loss_scale_overflows", "info",
                          fmt::format("the loss scale dropped {} time(s): those steps were skipped", drops),
                          {{"overflow_steps", drops}}));
}

std::optional<std::string> attention_kernels(const CaseResult& c) {
  const json& a = member_or_null(c.params, "attention");
  return a.is_string() ? std::optional<std::string>(a.get<std::string>()) : std::nullopt;
}

// Fused (flash) attention exists only for 16-bit operands, so by default fp32 runs unfused and the
// AMP modes fused: the speedup then mixes two changes, the precision and the attention kernels.
void attention_kernels_rule(const CaseResult& c, const CaseResult& base, const CaseExplanation& e,
                            std::vector<Finding>& out) {
  const auto mine = attention_kernels(c), theirs = attention_kernels(base);
  if (!mine || !theirs || *mine == *theirs) return;
  json evidence = {{"baseline_attention", *theirs}, {"attention", *mine}};
  std::string alone;
  if (e.decomposition)
    for (const auto& cat : e.decomposition->categories) {
      if (cat.category != category_name(Category::attention)) continue;
      evidence["attention_speedup"] = cat.speedup ? json(*cat.speedup) : json();
      evidence["attention_contribution"] = cat.contribution;
      alone = cat.speedup ? fmt::format(" (the attention category alone: {:.2f}x, saving {} of the baseline time)",
                                        *cat.speedup, pct(cat.contribution))
                          : " (the attention category took no time in this mode)";
    }
  const std::string of = e.speedup ? fmt::format("{:.2f}x", *e.speedup) : "speedup";
  out.push_back(finding("attention_kernels_differ", "info",
                        fmt::format("attention ran {} in {} but {} in the {} baseline: part of the {} is the {} "
                                    "attention{}, not the precision; run with --attention unfused to compare "
                                    "precisions alone",
                                    *mine, c.precision, *theirs, base.precision, of, *mine, alone),
                        evidence));
}

std::string mib(double bytes) { return fmt::format("{:.0f} MiB", bytes / 1048576.0); }

// What the mode's peak memory is against the baseline's (details.memory of a transformer case), and
// where its fp16/bf16 activations were emulated in fp32 buffers (params.activation_storage), that
// they saved nothing there.
void memory_rule(const CaseResult& c, const CaseResult& base, std::vector<Finding>& out) {
  const auto peak = number_at(c.details, {"memory", "allocated_peak_bytes"});
  const auto base_peak = number_at(base.details, {"memory", "allocated_peak_bytes"});
  if (!peak || !base_peak || *base_peak <= 0) return;
  const auto activations = number_at(c.details, {"memory", "activation_bytes"});
  const auto base_activations = number_at(base.details, {"memory", "activation_bytes"});
  const json& storage = member_or_null(c.params, "activation_storage");
  const double saved = 1.0 - *peak / *base_peak;
  json evidence = {{"peak_bytes", *peak}, {"baseline_peak_bytes", *base_peak}, {"saved_fraction", saved}};
  std::string message = fmt::format("peak memory {} against {} in {}: {} {}", mib(*peak), mib(*base_peak),
                                    base.precision, saved >= 0 ? "saves" : "costs", pct(std::abs(saved)));
  if (activations && base_activations) {
    evidence["activation_bytes"] = *activations;
    evidence["baseline_activation_bytes"] = *base_activations;
    message += fmt::format(" (activations {} against {})", mib(*activations), mib(*base_activations));
  }
  if (storage.is_string()) {
    evidence["activation_storage"] = storage;
    if (storage == "emulated" && c.precision != "fp32" && c.precision != "tf32")
      message += "; its fp16/bf16 activations were emulated in fp32 buffers (--activation-storage emulated), so "
                 "they saved nothing: half storage is what shows the memory the mode saves";
  }
  out.push_back(finding("memory_saved", "info", message, std::move(evidence)));
}

// Modes whose GEMMs read tf32, fp16 or bf16, which cuBLASLt runs on Tensor Cores unless told not
// to; fp32 is pedantic (CUDA cores by design).
bool gemms_should_use_tensor_cores(const std::string& mode) {
  return mode == "tf32" || mode == "amp-fp16" || mode == "amp-bf16" || mode == "bf16";
}

// The ops' own record of the algorithm each distinct GEMM problem ran (details.gemm_algorithms,
// from cuBLASLt's numerical implementation flags): exact where kernel names only suggest, and
// there without --profile. What --tensor-cores (params.tensor_cores) kept off Tensor Cores is the
// counterfactual asked for; the rest is the heuristic's choice.
void gemm_algorithms_rule(const CaseResult& c, std::vector<Finding>& out) {
  const json& algorithms = member_or_null(c.details, "gemm_algorithms");
  if (algorithms.is_null() || !gemms_should_use_tensor_cores(c.precision)) return;
  const auto malformed = [&] {
    return UsageError(fmt::format("case {}: details.gemm_algorithms must be an array of objects with a boolean "
                                  "tensor_cores",
                                  c.full_id()));
  };
  if (!algorithms.is_array()) throw malformed();
  const std::string policy = string_or(c.params, "tensor_cores", "on");
  const int align = alignment_elements(c.precision);
  json off = json::array();
  std::vector<std::string> named, misaligned;  // misaligned: those the heuristic chose, by their dims
  std::size_t asked = 0;
  for (const json& a : algorithms) {
    if (!a.is_object() || !a.contains("tensor_cores") || !a["tensor_cores"].is_boolean()) throw malformed();
    if (a["tensor_cores"].get<bool>()) continue;
    const json& batched = member_or_null(a, "batched");
    const std::string gemm = string_or(a, "gemm", "an unnamed GEMM");
    if (policy == "off" || (policy == "batched-off" && batched.is_boolean() && batched.get<bool>())) ++asked;
    else if (const auto dims = misaligned_dims(a, align); !dims.empty())
      misaligned.push_back(fmt::format("{} has {}", gemm, join(dims)));
    named.push_back(fmt::format("{} ({})", gemm, string_or(a, "problem", "?")));
    off.push_back(a);
  }
  if (off.empty()) return;
  std::vector<std::string> why;
  if (asked > 0) {
    const std::string kept = policy == "off" ? "every GEMM off Tensor Cores"
                                             : "attention's batched GEMMs off Tensor Cores, as fp16 batched GEMMs "
                                               "ran before CUDA 9.1";
    why.push_back(fmt::format("the policy asked for {}: --tensor-cores {} keeps {}",
                              asked == off.size() ? std::string("it") : fmt::format("{} of them", asked), policy,
                              kept));
  }
  if (asked < off.size()) {
    const std::string chosen = asked > 0 ? fmt::format("the other {}", off.size() - asked) : std::string("them");
    why.push_back(misaligned.empty()
                      ? fmt::format("cuBLASLt's heuristic chose {} (m, n or k not a multiple of {} is the usual cause)",
                                    chosen, align)
                      : fmt::format("cuBLASLt's heuristic chose {}: {}, not a multiple of {}; pad such dimensions "
                                    "(the vocabulary: --vocab-pad 64)",
                                    chosen, join(misaligned, "; "), align));
  }
  json evidence = {{"algorithms", algorithms.size()}, {"off_tensor_cores", off}, {"asked_by_policy", asked}};
  if (!misaligned.empty()) evidence["misaligned"] = misaligned;
  if (member_or_null(c.params, "tensor_cores").is_string()) evidence["tensor_cores_policy"] = policy;
  out.push_back(finding("gemm_algorithms_off_tensor_cores", "warning",
                        fmt::format("{} of {} cuBLASLt algorithms of {} have no Tensor Core op type: {}; {}",
                                    off.size(), algorithms.size(), c.precision, join(named), join(why, "; ")),
                        std::move(evidence)));
}

std::optional<double> measured_speedup(const DocumentFacts& facts, const CaseResult& c, const CaseResult* base) {
  if (const auto found = facts.recorded_speedups.find({c.suite, c.name, c.backend, c.precision});
      found != facts.recorded_speedups.end())
    return found->second;
  if (base && base->seconds && c.seconds && c.seconds->median > 0) return base->seconds->median / c.seconds->median;
  return std::nullopt;
}

// A vocabulary left unpadded (--vocab-pad 1 keeps GPT-2's 50257) is a dimension of the LM head's
// GEMMs, the step's largest; on a GPU, Tensor Core kernels want 16-byte rows. From the case's
// config, so it speaks on every backend and without --profile.
void vocabulary_rule(const CaseResult& c, std::vector<Finding>& out) {
  if (c.suite != "transformer" || !gemms_should_use_tensor_cores(c.precision)) return;
  const json& config = member_or_null(c.params, "config");
  const json& padded = member_or_null(config, "padded_vocab");
  if (!padded.is_number_integer()) return;
  const long long vocab = padded.get<long long>();
  const int align = alignment_elements(c.precision);
  if (vocab % align == 0) return;
  const long long suggested = (vocab + 63) / 64 * 64;
  const bool gpu = c.backend == "cuda";
  out.push_back(finding(
      "misaligned_vocabulary", gpu ? "warning" : "info",
      fmt::format("the vocabulary, padded to {}, is not a multiple of {}: it is a dimension of the LM head's GEMMs, "
                  "the step's largest{}; --vocab-pad 64 pads it to {}",
                  vocab, align,
                  gpu ? ", and Tensor Core kernels want 16-byte rows, so cuBLASLt may choose slower or CUDA-core "
                        "kernels for them"
                      : "",
                  suggested),
      {{"padded_vocab", vocab}, {"vocab_pad", member_or_null(config, "vocab_pad")}, {"alignment", align},
       {"suggested_padded_vocab", suggested}}));
}

// "1.35x over fp32 (99% interval 1.31x-1.39x, 24 and 24 samples)", or without samples the ratio alone.
std::string speedup_text(double speedup, const std::string& baseline, const std::optional<RatioInterval>& interval) {
  if (!interval) return fmt::format("{} over {}", printed_speedup(speedup), baseline);
  return fmt::format("{} over {} ({}, {} and {} samples)", printed_speedup(speedup), baseline, interval->interval_text(),
                     interval->samples_a, interval->samples_b);
}

// The causes read into the speedup, unless its interval reaches across an edge of the no-change
// band: then only that, and how to rerun.
void speedup_rules(const CaseResult& c, const CaseResult& base, double speedup,
                   const std::optional<RatioInterval>& interval, const std::string& baseline, std::vector<Finding>& out) {
  if (interval && !interval->decided()) {
    out.push_back(finding("too_noisy", "warning",
                          fmt::format("{}: the interval reaches across an edge of the ±{:.0f}% no-change band, so "
                                      "whether it pays is not known; no cause is named. {}",
                                      speedup_text(speedup, baseline, interval), 100 * no_change_threshold(),
                                      rerun_advice(c)),
                          {{"speedup", speedup}, {"low", interval->low}, {"high", interval->high},
                           {"confidence", interval_confidence()}, {"band", no_change_threshold()},
                           {"advice", rerun_advice(c)}}));
    return;
  }
  if (speedup < 1 && (!interval || interval->reading == Reading::does_not_pay))
    out.push_back(finding("slower_than_baseline", "warning", fmt::format("{:.2f}x: slower than {}", speedup, baseline),
                          {{"speedup", speedup}}));
  datasheet_rule(c, base, speedup, out);
  if (c.suite == "bandwidth") bandwidth_rule(c, speedup, out);
  host_bound_rule(c, base, speedup, out);
}

CaseExplanation explain_case(const ResultDocument& doc, const DocumentFacts& facts, const CaseResult& c,
                             const CaseResult* base, const std::string& baseline, const ResultDocument* bf16_noise) {
  CaseExplanation e{c.full_id(), c.precision, measured_speedup(facts, c, base), std::nullopt, std::nullopt,
                    std::nullopt, {}};
  if (string_or(c.params, "kernel", "") != "copy") e.pct_of_copy = number_at(c.rates, {"pct_of_copy"});
  if (c.suite == "gemm") {
    gpu_gemm_rules(doc, c, e.findings);
    cpu_gemm_rules(c, doc, e.findings);
    memory_bound_gemm_rule(c, facts, e.findings);
    fp8_gemm_rules(doc, c, e.findings);
  }
  if (c.suite == "transformer") fp8_loss_drift_rule(doc, c, bf16_noise, e.findings);
  if (base && e.speedup) {
    e.interval = ratio_interval(c, *base, *e.speedup);
    speedup_rules(c, *base, *e.speedup, e.interval, baseline, e.findings);
  }
  if (base && c.details.contains("breakdown") && base->details.contains("breakdown")) {
    const auto mode = checked_categories(c);
    e.decomposition = decompose(fold_gemms(checked_categories(*base)), fold_gemms(mode));
    breakdown_rules(c, mode, e.findings);
  }
  if (base) {
    attention_kernels_rule(c, *base, e, e.findings);
    memory_rule(c, *base, e.findings);
  }
  gemm_algorithms_rule(c, e.findings);
  vocabulary_rule(c, e.findings);
  const auto fp32 = facts.fp32_cases.find(key_of(c));
  case_causes(c, base, baseline, fp32 == facts.fp32_cases.end() ? nullptr : fp32->second, e.findings);
  return e;
}

// A cast reads and writes the same elements as a copy; anything slower is conversion cost.
std::vector<Finding> cast_rules(const ResultDocument& doc, const CopyIndex& copies) {
  std::vector<Finding> out;
  for (const auto& c : doc.cases) {
    if (c.suite != "cast" || c.status != CaseStatus::ok || string_or(c.params, "kernel", "") == "copy") continue;
    const auto of_copy = number_at(c.rates, {"pct_of_copy"});
    if (!of_copy || *of_copy >= threshold("cast_slower_than_copy")) continue;
    const CaseResult* copy = copies.copy_of(c);
    const auto interval = copy ? ratio_interval(c, *copy, *of_copy) : std::nullopt;
    if (interval && !decides_against(*interval, threshold("cast_slower_than_copy"))) {
      out.push_back(finding("too_noisy", "warning",
                            fmt::format("{} at {} of a copy ({}): the interval reaches across the rule's {:.0f}%, "
                                        "so whether it is slower is not known. {}",
                                        c.name, printed_share(*of_copy), interval->percent_interval_text(),
                                        threshold("cast_slower_than_copy"), rerun_advice(c)),
                            {{"case", c.full_id()}, {"pct_of_copy", *of_copy}, {"low", interval->low},
                             {"high", interval->high}, {"advice", rerun_advice(c)}}));
      continue;
    }
    out.push_back(finding("cast_slower_than_copy", "warning",
                          fmt::format("{} runs at {} of a copy of the same elements: each cast in a mixed-"
                                      "precision step costs {:.1f}x a copy",
                                      c.name, printed_share(*of_copy), 100.0 / *of_copy),
                          {{"case", c.full_id()}, {"pct_of_copy", *of_copy}, {"gbps", member_or_null(c.rates, "gbps")}}));
  }
  return out;
}

// The fix the rule's table entry names, empty for a rule of context only or a finding whose fix
// does not apply (Tensor Core advice on a GPU without them).
std::string fix_of(const Finding& f) {
  if (member_or_null(f.evidence, "device_has_no_tensor_cores").is_boolean()) return "";
  const Rule* r = find_explain_rule(f.rule);
  return r && r->fix != "-" ? std::string(r->fix) : std::string();
}

json finding_json(const Finding& f) {
  json j = {{"rule", f.rule}, {"severity", f.severity}, {"message", f.message}, {"evidence", f.evidence}};
  if (const std::string fix = fix_of(f); !fix.empty()) j["fix"] = fix;
  return j;
}

json decomposition_json(const Decomposition& d) {
  json categories = json::array();
  for (const auto& c : d.categories)
    categories.push_back({{"category", c.category},
                          {"baseline_s", c.baseline_s},
                          {"mode_s", c.mode_s},
                          {"share_of_baseline", c.share_of_baseline},
                          {"share_of_mode", c.share_of_mode},
                          {"speedup", c.speedup ? json(*c.speedup) : json()},
                          {"contribution", c.contribution},
                          {"speedup_if_only_this", c.speedup_if_only_this}});
  return {{"baseline_s", d.baseline_s}, {"mode_s", d.mode_s},         {"speedup", d.speedup},
          {"categories", categories},   {"limiting_category", d.limiting_category}, {"ceiling", d.ceiling}};
}

void append_findings(std::string& out, const std::vector<Finding>& findings, std::string_view indent) {
  for (const auto& f : findings) {
    out += fmt::format("{}[{}] {}: {}\n", indent, f.severity, f.rule, f.message);
    if (const std::string fix = fix_of(f); !fix.empty() && f.severity == "warning")
      out += fmt::format("{}    fix: {}\n", indent, fix);
  }
}

void append_decomposition(std::string& out, const Decomposition& d) {
  out += fmt::format("    profiled: {} -> {} ({:.2f}x)\n", ms(d.baseline_s), ms(d.mode_s), d.speedup);
  out += fmt::format("    {:<18} {:>10} {:>10} {:>9} {:>9} {:>13}\n", "category", "baseline", "mode", "share",
                     "speedup", "contribution");
  for (const auto& c : d.categories)
    out += fmt::format("    {:<18} {:>10} {:>10} {:>9} {:>9} {:>13}\n", c.category, ms(c.baseline_s), ms(c.mode_s),
                       pct(c.share_of_baseline), c.speedup ? fmt::format("{:.2f}x", *c.speedup) : "-",
                       pct(c.contribution));
  for (const auto& c : d.categories)
    if (c.category == d.limiting_category)
      out += fmt::format("    limiting: {} ({} of the mode's time; the speedup cannot exceed {:.2f}x unless it "
                         "gets faster)\n",
                         c.category, pct(c.share_of_mode), d.ceiling);
}

// On a GPU without Tensor Cores no_tensor_cores names the cause: advice to reach them (pad the
// dimensions for them, turn them on) cannot apply. Which GEMMs missed them stays, as context.
void drop_tensor_core_advice(Explanation& e) {
  for (CaseExplanation& c : e.cases) {
    std::erase_if(c.findings, [](const Finding& f) {
      return f.rule == "gemm_algorithms_off_tensor_cores" || f.rule == "misaligned_dimension" ||
             f.rule == "misaligned_vocabulary";
    });
    for (Finding& f : c.findings)
      if (f.rule == "gemm_not_on_tensor_cores") {
        f.severity = "info";
        f.evidence["device_has_no_tensor_cores"] = true;
      }
  }
}

}  // namespace

Explanation explain(const ResultDocument& doc, const std::string& baseline, const ResultDocument* bf16_noise) {
  std::map<CaseKey, const CaseResult*> baseline_cases;
  for (const auto& c : doc.cases)
    if (c.status == CaseStatus::ok && c.precision == baseline) baseline_cases[key_of(c)] = &c;
  if (baseline_cases.empty())
    throw UsageError(fmt::format("no case ran in the baseline precision '{}': pick one that ran with --baseline",
                                 baseline));
  Explanation out{baseline, {}, verdict(doc, baseline), {}, document_causes(doc), {}, {}, {}, {}};
  for (Finding& f : cast_rules(doc, CopyIndex(doc))) out.findings.push_back(std::move(f));
  const DocumentFacts facts = gather_facts(doc, baseline);
  for (const auto& c : doc.cases) {
    if (c.status != CaseStatus::ok) continue;
    if (c.precision == baseline) {
      // A baseline case is listed only when a rule explains something about it (e.g. pedantic fp32).
      auto own = explain_case(doc, facts, c, nullptr, baseline, bf16_noise);
      if (!own.findings.empty()) out.cases.push_back(std::move(own));
      continue;
    }
    auto it = baseline_cases.find(key_of(c));
    out.cases.push_back(
        explain_case(doc, facts, c, it == baseline_cases.end() ? nullptr : it->second, baseline, bf16_noise));
  }
  if (has_tensor_cores(doc) == false) drop_tensor_core_advice(out);
  out.modes = mode_verdicts(out);
  return out;
}

json Explanation::to_json() const {
  json j = {{"baseline", baseline}, {"modes", json::array()}, {"verdict", json::array()}, {"cases", json::array()},
            {"findings", json::array()}};
  for (const auto& f : modes) j["modes"].push_back(finding_json(f));
  for (const auto& f : verdict) j["verdict"].push_back(finding_json(f));
  for (const auto& c : cases) {
    json jc = {{"id", c.id}, {"precision", c.precision}, {"speedup", c.speedup ? json(*c.speedup) : json()},
               {"findings", json::array()}};
    if (c.pct_of_copy) jc["pct_of_copy"] = *c.pct_of_copy;
    if (c.interval)
      jc["interval"] = {{"low", c.interval->low},
                        {"high", c.interval->high},
                        {"confidence", interval_confidence()},
                        {"band", no_change_threshold()},
                        {"reading", reading_name(c.interval->reading)},
                        {"samples", {c.interval->samples_a, c.interval->samples_b}}};
    if (c.decomposition) jc["decomposition"] = decomposition_json(*c.decomposition);
    for (const auto& f : c.findings) jc["findings"].push_back(finding_json(f));
    j["cases"].push_back(jc);
  }
  for (const auto& f : findings) j["findings"].push_back(finding_json(f));
  if (!peer_label.empty()) {
    j["peer"] = {{"label", peer_label}, {"findings", json::array()}};
    for (const auto& f : peer) j["peer"]["findings"].push_back(finding_json(f));
  }
  if (!against_label.empty()) {
    j["against"] = {{"label", against_label}, {"findings", json::array()}};
    for (const auto& f : against) j["against"]["findings"].push_back(finding_json(f));
  }
  return j;
}

std::string Explanation::to_text() const {
  std::string out = fmt::format("mpbench explain: speedups over {}\n\n", baseline);
  if (!modes.empty()) {
    out += "per mode:\n";
    for (const auto& f : modes) out += fmt::format("    {}\n", f.message);
    out += "\n";
  }
  if (!verdict.empty()) {
    out += "verdict:\n";
    append_findings(out, verdict, "    ");
    out += "\n";
  }
  for (const auto& c : cases) {
    const std::string headline = c.precision == baseline ? "the baseline"
                                 : c.speedup       ? speedup_text(*c.speedup, baseline, c.interval)
                                 : c.pct_of_copy   ? fmt::format("{} of a copy", printed_share(*c.pct_of_copy))
                                                   : fmt::format("no {} case to compare with", baseline);
    if (c.findings.empty() && !c.decomposition) {
      out += fmt::format("{}: {}; no rule fired\n", c.id, headline);
      continue;
    }
    out += fmt::format("{}: {}\n", c.id, headline);
    if (c.decomposition) append_decomposition(out, *c.decomposition);
    append_findings(out, c.findings, "    ");
  }
  if (!findings.empty()) {
    out += "\nwhole document:\n";
    append_findings(out, findings, "    ");
  }
  if (!peer_label.empty()) {
    out += fmt::format("\nagainst {}; ratios above 1: mpbench faster:\n", peer_label);
    if (peer.empty()) out += "    no ok case pairs with one of PyTorch's by suite, name and precision\n";
    append_findings(out, peer, "    ");
  }
  if (!against_label.empty()) {
    out += fmt::format("\nagainst {} (the same cases under its library versions):\n", against_label);
    if (against.empty())
      out += fmt::format("    same library versions, and no speedup moved by {:.0f}% with a changed GEMM algorithm\n",
                         100 * kAgainstSpeedupChange);
    else if (std::none_of(against.begin(), against.end(), [](const Finding& f) { return f.rule == "algorithm_changed"; }))
      out += fmt::format("    no speedup moved by {:.0f}% with a changed GEMM algorithm\n", 100 * kAgainstSpeedupChange);
    append_findings(out, against, "    ");
  }
  return out;
}

}  // namespace mpbench::profiler
