#pragma once
// Precision modes as data: for every op category the Transformer uses, which dtype its inputs are
// cast to, which dtype it computes in and which it produces. Modelled on PyTorch autocast's CUDA
// op lists (ops run in the lower precision, ops kept in fp32, ops run at their widest input's
// type): one binary runs every mode side by side.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amp/format_info.hpp"

namespace mpbench::amp {

using num::Format;

// fp8 is the fp8-delayed mode (named "fp8-delayed"; "fp8" parses to it, the name it had before
// fp8-current existed); fp8_current is "fp8-current". Both: Transformer Engine's hybrid recipe.
// mxfp8: e4m3 GEMM operands in 32-element blocks with e8m0 scales (OCP MX).
enum class Mode { fp32, tf32, amp_fp16, amp_bf16, bf16, fp8, fp8_current, mxfp8 };

enum class OpCategory {
  matmul,         // linear, mm, addmm, bmm, matmul
  attention,      // scaled_dot_product_attention
  layernorm,      // layer_norm, rms_norm
  softmax,        // softmax, log_softmax
  cross_entropy,  // log_softmax + nll_loss
  reduction,      // sum, mean, cumsum, prod
  exp_log,        // exp, log, pow, rsqrt, reciprocal
  norm,           // vector norms (gradient clipping)
  add_concat,     // add, residual, cat, stack
  gelu,           // activation functions not on any autocast list
  embedding,      // token and position embedding lookup
  optimizer,      // AdamW update of the parameters
};
constexpr std::size_t kOpCategoryCount = 12;

// How a mode treats an op's floating-point inputs (PyTorch's CastPolicy, plus the fp8 quantize).
enum class CastRule {
  lower_precision,  // cast inputs to the mode's low-precision type (autocast lower_precision_fp)
  fp32,             // cast inputs to fp32 with a separate cast (autocast fp32)
  fp32_in_kernel,   // kernel reads low precision, computes and writes fp32: no cast kernel
                    // (autocast fp32_set_opt_dtype / fp32_append_dtype)
  promote,          // cast every input to the widest input type (autocast promote)
  input_dtype,      // not on any list: runs in whatever type its inputs have
  fp8_scaled,       // quantize inputs to fp8 with a per-tensor scale (Transformer Engine)
};

struct OpPolicy {
  OpCategory op;
  CastRule rule;
  Format input;    // dtype the inputs are cast to; for promote/input_dtype: the mode's usual type
  Format compute;  // precision of the math inside the kernel (accumulation for GEMMs)
  Format output;
  std::string_view note;
};

enum class LossScaling { none, dynamic };

struct ModePolicy {
  Mode mode;
  std::string_view name;
  std::string_view summary;
  Format weight_storage;  // the weights the forward pass reads
  Format activations;     // dtype of activations between ops, as the policy leaves them
  Format low_precision;   // the type lower_precision casts to (fp32 where the mode has none)
  bool master_weights;    // fp32 master copy kept separately from the weights the model reads
  LossScaling loss_scaling;
  std::array<OpPolicy, kOpCategoryCount> ops;

  const OpPolicy& op(OpCategory c) const { return ops[static_cast<std::size_t>(c)]; }
};

std::span<const ModePolicy> all_policies();
const ModePolicy& policy(Mode mode);
std::optional<Mode> parse_mode(std::string_view text);  // canonical names, case-insensitive; "fp8" = fp8-delayed
std::string mode_names();                               // "fp32, tf32, amp-fp16, ..."
std::string_view mode_name(Mode mode);
std::string_view op_name(OpCategory op);
std::string_view rule_name(CastRule rule);
std::string_view torch_ops(OpCategory op);  // the PyTorch ops the category stands for

// The dtype an op's inputs end up in under the policy, given the dtypes they arrive in.
Format resolve_input_dtype(const ModePolicy& p, OpCategory op, std::span<const Format> inputs);

// ---- cast accounting ---------------------------------------------------------------------

struct TensorArg {
  Format dtype;
  uint64_t elements;
  // Non-negative for a parameter: autocast caches a parameter's cast for the whole forward pass,
  // so each parameter is cast once per step however many ops read it.
  int64_t parameter_id = -1;
};

struct CastCount {
  uint64_t casts = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;

  uint64_t bytes() const { return bytes_read + bytes_written; }
  CastCount& operator+=(const CastCount& other);
};

// Bytes one element of `f` occupies in memory.
uint64_t storage_bytes(Format f);

// Counts the cast kernels a policy launches over a step. The backward pass mirrors the forward:
// the gradient of each cast is a cast back (fp16 grad -> fp32 for an fp32 weight), so a step's
// casts are twice the forward's, with read and written bytes swapped.
class CastCounter {
 public:
  explicit CastCounter(const ModePolicy& policy) : policy_(&policy) {}

  // Records one forward call of `op` with these inputs; returns the casts it adds.
  CastCount add_op(OpCategory op, std::span<const TensorArg> inputs);

  const CastCount& forward() const { return forward_; }
  CastCount backward() const;
  CastCount step() const;
  const CastCount& forward_by_op(OpCategory op) const { return by_op_[static_cast<std::size_t>(op)]; }
  void new_step();  // clears the counts and the parameter-cast cache

 private:
  const ModePolicy* policy_;
  CastCount forward_;
  std::array<CastCount, kOpCategoryCount> by_op_{};
  std::vector<std::pair<int64_t, Format>> cached_parameter_casts_;
};

}  // namespace mpbench::amp
