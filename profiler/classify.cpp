#include "profiler/classify.hpp"

#include <array>
#include <regex>
#include <vector>

namespace mpbench::profiler {

namespace {

constexpr std::array<std::string_view, kCategoryCount> kCategoryNames = {
    "gemm_tensor_core", "gemm_cuda_core", "attention", "normalization", "elementwise",
    "cast",             "reduction",      "optimizer", "copy",          "other"};

using C = Category;

// Order matters: attention before GEMM (flash kernels contain "gemm" tokens), CUDA-core fallbacks
// and SIMT sgemm before the generic GEMM rule, Tensor Core tokens before plain "gemm".
constexpr NameRule kKernelRules[] = {
    {"flash_fwd|flash_bwd|flash_attn|fmha|sdpa|scaled_dot_product|mha_fwd|mha_bwd", C::attention, true,
     "fused (flash) attention"},
    {"attention|attn_", C::attention, false, "attention kernel"},
    {"gemmSN_|gemv|magma_sgemm", C::gemm_cuda_core, false, "cuBLAS CUDA-core fallback for small or odd shapes"},
    {"fp16_sgemm|sgemm_fp16", C::gemm_cuda_core, false,
     "fp16-storage SIMT sgemm (cublasSgemmEx: fp32 math on CUDA cores, pseudo-fp16)"},
    {"nvjet", C::gemm_tensor_core, true, "cuBLAS Hopper+ GEMM (nvjet)"},
    {"xmma_gemm|xmma_.*gemm|sm(80|90|100|120)_xmma", C::gemm_tensor_core, true, "cuBLAS/cuDNN xmma GEMM"},
    {"tensorop|hmma|wgmma|mma_sync|16816|1688|884gemm|i8816|s161616|c1688", C::gemm_tensor_core, true,
     "Tensor Core instruction shape in the name"},
    {"_h[a-z0-9]*gemm|hgemm|bf16.*gemm|gemm.*bf16|fp16.*gemm|gemm.*fp16", C::gemm_tensor_core, true,
     "half-precision GEMM"},
    {"sgemm|dgemm|cgemm|zgemm", C::gemm_cuda_core, false, "single/double precision SIMT GEMM"},
    {"cutlass.*(sm80|sm90|sm100)", C::gemm_tensor_core, true, "CUTLASS kernel for an architecture with Tensor Cores"},
    {"gemm|matmul|cutlass|cublas", C::gemm_cuda_core, false, "GEMM without Tensor Core evidence in the name"},
    {"layer_?norm|rms_?norm|batch_?norm|group_?norm|bn_fw|bn_bw|softmax", C::normalization, false,
     "normalization or softmax"},
    {"adam|sgd|lamb_|multi_tensor|optimizer|unscale_kernel|update_kernel", C::optimizer, false,
     "optimizer or loss-scaler step"},
    {"scaled_?e4m3|stochasticbf16|cast|convert|float2half|half2float|to_fp16|to_bf16|quantize", C::cast, false,
     "precision conversion"},
    {"splitkreduce|reduce|reduction|dot_kernel|amax|sum_kernel|norm_kernel", C::reduction, false, "reduction"},
    {"memcpy|memset|copy|transpose|permute|concat|catarray", C::copy, false, "data movement"},
    {"elementwise|map_kernel|zip_kernel|generate_kernel|gelu|relu|silu|dropout|add_kernel|mul_kernel|fill",
     C::elementwise, false, "elementwise"},
};

constexpr NameRule kOpRangeRules[] = {
    {"attn|attention|softmax_qk", C::attention, false, "attention op"},
    {"ln|layer_?norm|rms_?norm|softmax", C::normalization, false, "normalization op"},
    {"adam|optim|sgd|scaler|unscale|master", C::optimizer, false, "optimizer or loss-scaler op"},
    {"cast|convert|to_fp16|to_bf16|quantize", C::cast, false, "cast op"},
    {"loss|cross_entropy|reduce|amax|grad_norm", C::reduction, false, "reduction op"},
    {"copy|memcpy|transpose|permute|embedding_lookup", C::copy, false, "copy op"},
    {"gelu|relu|residual|bias|dropout|add|mul|fill|init", C::elementwise, false, "elementwise op"},
};

struct CompiledRule {
  const NameRule* rule;
  std::regex regex;
};

std::vector<CompiledRule> compile(std::span<const NameRule> rules) {
  std::vector<CompiledRule> out;
  for (const auto& r : rules)
    out.push_back({&r, std::regex(std::string(r.pattern), std::regex::ECMAScript | std::regex::icase)});
  return out;
}

const NameRule* first_match(const std::vector<CompiledRule>& rules, std::string_view text) {
  const std::string s(text);
  for (const auto& r : rules)
    if (std::regex_search(s, r.regex)) return r.rule;
  return nullptr;
}

const std::vector<CompiledRule>& compiled_kernel_rules() {
  static const auto rules = compile(kKernelRules);
  return rules;
}

const std::vector<CompiledRule>& compiled_op_rules() {
  static const auto rules = compile(kOpRangeRules);
  return rules;
}

Classification from_rule(const NameRule* rule) {
  if (!rule) return {};
  return {rule->category, rule->names_tensor_cores ? TensorCoreEvidence::named : TensorCoreEvidence::no_evidence,
          rule->pattern};
}

}  // namespace

std::string_view category_name(Category c) { return kCategoryNames[static_cast<int>(c)]; }

std::optional<Category> parse_category(std::string_view name) {
  for (int i = 0; i < kCategoryCount; ++i)
    if (kCategoryNames[i] == name) return static_cast<Category>(i);
  return std::nullopt;
}

bool is_memory_bound(Category c) {
  return c == C::elementwise || c == C::normalization || c == C::cast || c == C::reduction || c == C::copy ||
         c == C::optimizer;
}

bool is_gemm(Category c) { return c == C::gemm_tensor_core || c == C::gemm_cuda_core; }

std::string_view evidence_name(TensorCoreEvidence e) {
  switch (e) {
    case TensorCoreEvidence::measured: return "measured";
    case TensorCoreEvidence::named: return "named";
    case TensorCoreEvidence::no_evidence: break;
  }
  return "no_evidence";
}

std::span<const NameRule> kernel_name_rules() { return kKernelRules; }
std::span<const NameRule> op_range_rules() { return kOpRangeRules; }

bool is_mpbench_kernel(std::string_view kernel_name) {
  // Mangled names carry the namespace as "7mpbench", demangled ones as "mpbench::".
  return kernel_name.find("mpbench") != std::string_view::npos;
}

Classification classify_kernel_name(std::string_view kernel_name, std::string_view op_range) {
  if (is_mpbench_kernel(kernel_name) && !op_range.empty())
    if (const NameRule* by_op = first_match(compiled_op_rules(), op_range)) return from_rule(by_op);
  return from_rule(first_match(compiled_kernel_rules(), kernel_name));
}

Classification classify_kernel(const KernelRecord& kernel, std::string_view op_range) {
  Classification c = classify_kernel_name(kernel.name, op_range);
  if (!kernel.tensor_pipe_pct) return c;
  const bool used = *kernel.tensor_pipe_pct > 0;
  c.tensor_cores = used ? TensorCoreEvidence::measured : TensorCoreEvidence::no_evidence;
  if (is_gemm(c.category)) c.category = used ? C::gemm_tensor_core : C::gemm_cuda_core;
  return c;
}

}  // namespace mpbench::profiler
