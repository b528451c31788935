#pragma once
// Kernel categories from kernel names (one table of rules, first match wins) and, for mpbench's
// own generic kernels, from the op range that launched them. Tensor Core use is three-valued:
// measured by a counter, named by the kernel, or no evidence.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "profiler/activity.hpp"

namespace mpbench::profiler {

enum class Category {
  gemm_tensor_core,
  gemm_cuda_core,
  attention,
  normalization,
  elementwise,
  cast,
  reduction,
  optimizer,
  copy,
  other,
};
inline constexpr int kCategoryCount = 10;

std::string_view category_name(Category c);
std::optional<Category> parse_category(std::string_view name);
// The categories bound by memory bandwidth in training: halving the bytes at best halves their time.
bool is_memory_bound(Category c);
bool is_gemm(Category c);

enum class TensorCoreEvidence { measured, named, no_evidence };
std::string_view evidence_name(TensorCoreEvidence e);

struct NameRule {
  std::string_view pattern;  // ECMAScript regex, case-insensitive, searched anywhere in the name
  Category category;
  bool names_tensor_cores;   // the pattern itself says the kernel runs on Tensor Cores
  std::string_view why;
};

// Rules for library kernels (cuBLAS, cuBLASLt, CUTLASS, cuDNN, flash attention, PyTorch) and the
// fallback rules for mpbench's own kernels, in the order they are tried.
std::span<const NameRule> kernel_name_rules();
// Rules mapping an op range name (e.g. "layer3/ln_1", "adamw") to the category of the generic
// kernels it launches.
std::span<const NameRule> op_range_rules();

struct Classification {
  Category category = Category::other;
  TensorCoreEvidence tensor_cores = TensorCoreEvidence::no_evidence;
  std::string_view rule;  // the pattern that decided, empty for "other"
};

// mpbench's own kernels are generic (map_kernel applies any function), so the op range that
// launched them says more than their name.
bool is_mpbench_kernel(std::string_view kernel_name);

// `op_range`: the name of the range the kernel is attributed to, empty when none.
Classification classify_kernel_name(std::string_view kernel_name, std::string_view op_range = {});
// As above, and a tensor-pipe counter, when present, outranks the name: > 0 is measured Tensor
// Core use, 0 is no evidence even for a Tensor Core name.
Classification classify_kernel(const KernelRecord& kernel, std::string_view op_range = {});

}  // namespace mpbench::profiler
