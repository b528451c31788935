#include "amp/policy.hpp"

#include <algorithm>
#include <cctype>

namespace mpbench::amp {
namespace {

using enum OpCategory;
using enum CastRule;
using F = Format;

constexpr std::array<std::string_view, kOpCategoryCount> kOpNames = {
    "matmul", "attention", "layernorm", "softmax", "cross-entropy", "reduction",
    "exp-log", "norm", "add-concat", "gelu", "embedding", "optimizer"};

constexpr std::array<std::string_view, kOpCategoryCount> kTorchOps = {
    "linear, mm, addmm, bmm, baddbmm, matmul",
    "scaled_dot_product_attention",
    "layer_norm, rms_norm, group_norm",
    "softmax, log_softmax",
    "cross_entropy (log_softmax + nll_loss)",
    "sum, cumsum, prod",
    "exp, log, pow, rsqrt, reciprocal",
    "norm, linalg_vector_norm",
    "add, cat, stack, addcmul",
    "gelu, relu, dropout",
    "embedding",
    "AdamW step"};

// Plain fp32 modes: nothing is cast; only the GEMM math differs between fp32 and tf32.
std::array<OpPolicy, kOpCategoryCount> fp32_ops(F gemm_math, std::string_view gemm_note) {
  const std::string_view fp32_note = "fp32 throughout";
  return {{
      {matmul, input_dtype, F::fp32, gemm_math, F::fp32, gemm_note},
      {attention, input_dtype, F::fp32, gemm_math, F::fp32, gemm_note},
      {layernorm, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {softmax, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {cross_entropy, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {reduction, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {exp_log, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {norm, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {add_concat, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {gelu, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {embedding, input_dtype, F::fp32, F::fp32, F::fp32, fp32_note},
      {optimizer, input_dtype, F::fp32, F::fp32, F::fp32, "fp32 AdamW on the weights themselves"},
  }};
}

// PyTorch autocast on CUDA: the same lists serve fp16 and bf16.
std::array<OpPolicy, kOpCategoryCount> autocast_ops(F low) {
  return {{
      {matmul, lower_precision, low, F::fp32, low, "autocast lower_precision_fp list; fp32 accumulate"},
      {attention, lower_precision, low, F::fp32, low,
       "lower_precision_fp (scaled_dot_product_attention); its softmax runs in fp32 inside"},
      {layernorm, fp32, F::fp32, F::fp32, F::fp32, "autocast fp32 list: a cast kernel to fp32 first"},
      {softmax, fp32_in_kernel, low, F::fp32, F::fp32,
       "fp32_set_opt_dtype: dtype=float32 passed, reads low precision, no cast kernel"},
      {cross_entropy, fp32_in_kernel, low, F::fp32, F::fp32,
       "log_softmax with dtype=float32, then nll_loss (fp32 list) on fp32 input"},
      {reduction, fp32_in_kernel, low, F::fp32, F::fp32, "fp32_set_opt_dtype (sum, cumsum, prod)"},
      {exp_log, fp32, F::fp32, F::fp32, F::fp32, "autocast fp32 list"},
      {norm, fp32_in_kernel, low, F::fp32, F::fp32, "fp32_append_dtype / fp32_set_opt_dtype"},
      {add_concat, promote, F::fp32, F::fp32, F::fp32,
       "widest input type: a low-precision branch added to the fp32 residual stream gives fp32"},
      {gelu, input_dtype, low, F::fp32, low, "on no autocast list: runs in its input's dtype (after a linear)"},
      {embedding, input_dtype, F::fp32, F::fp32, F::fp32, "on no list: reads the fp32 weights, gives fp32"},
      {optimizer, fp32, F::fp32, F::fp32, F::fp32,
       "fp32 AdamW on the fp32 weights after GradScaler unscaled the fp32 grads"},
  }};
}

// Pure low-precision storage with fp32 math inside each kernel (llm.c's bf16 mode); fp8 differs
// only in its GEMM inputs.
std::array<OpPolicy, kOpCategoryCount> low_storage_ops(const OpPolicy& gemm) {
  const F b = F::bf16;
  const std::string_view inside = "bf16 storage, fp32 math inside the kernel";
  return {{
      gemm,
      {attention, input_dtype, b, F::fp32, b, "bf16 attention GEMMs, fp32 softmax inside"},
      {layernorm, input_dtype, b, F::fp32, b, inside},
      {softmax, input_dtype, b, F::fp32, b, inside},
      {cross_entropy, input_dtype, b, F::fp32, F::fp32, "bf16 logits, fp32 math and loss"},
      {reduction, input_dtype, b, F::fp32, b, inside},
      {exp_log, input_dtype, b, F::fp32, b, inside},
      {norm, input_dtype, b, F::fp32, F::fp32, "bf16 grads, fp32 norm"},
      {add_concat, input_dtype, b, F::fp32, b, inside},
      {gelu, input_dtype, b, F::fp32, b, inside},
      {embedding, input_dtype, b, b, b, "bf16 table"},
      {optimizer, input_dtype, b, F::fp32, b,
       "reads bf16 grads, updates fp32 master and moments, writes the bf16 weights"},
  }};
}

const std::array<ModePolicy, 8>& table() {
  static const std::array<ModePolicy, 8> policies = {{
      {Mode::fp32, "fp32", "fp32 everywhere, Tensor Cores off", F::fp32, F::fp32, F::fp32, false,
       LossScaling::none, fp32_ops(F::fp32, "pedantic fp32 GEMM: Tensor Cores off")},
      {Mode::tf32, "tf32", "fp32 storage, TF32 Tensor Core GEMMs", F::fp32, F::fp32, F::fp32, false,
       LossScaling::none,
       fp32_ops(F::tf32, "TF32 Tensor Cores round the fp32 inputs inside the GEMM: no cast kernel")},
      {Mode::amp_fp16, "amp-fp16",
       "autocast fp16: fp32 weights cast per step, fp16 GEMMs, fp32 norms/softmax/loss, GradScaler",
       F::fp32, F::fp16, F::fp16, true, LossScaling::dynamic, autocast_ops(F::fp16)},
      {Mode::amp_bf16, "amp-bf16", "autocast bf16: as amp-fp16 with bf16, no loss scaling needed",
       F::fp32, F::bf16, F::bf16, true, LossScaling::none, autocast_ops(F::bf16)},
      {Mode::bf16, "bf16", "bf16 weights and activations, fp32 math in kernels, fp32 master weights",
       F::bf16, F::bf16, F::bf16, true, LossScaling::none,
       low_storage_ops({matmul, input_dtype, F::bf16, F::fp32, F::bf16, "bf16 in, fp32 accumulate"})},
      {Mode::fp8, "fp8-delayed",
       "fp8 GEMM inputs with delayed per-tensor scaling from an amax history (e4m3 forward, e5m2 grads), bf16 "
       "elsewhere",
       F::bf16, F::bf16, F::e4m3, true, LossScaling::none,
       low_storage_ops({matmul, fp8_scaled, F::e4m3, F::fp32, F::bf16,
                        "quantize to e4m3 (e5m2 for grads) with per-tensor scales from the amax history; bf16 out"})},
      {Mode::fp8_current, "fp8-current",
       "fp8 GEMM inputs with current per-tensor scaling from each tensor's own amax (e4m3 forward, e5m2 grads), "
       "bf16 elsewhere",
       F::bf16, F::bf16, F::e4m3, true, LossScaling::none,
       low_storage_ops({matmul, fp8_scaled, F::e4m3, F::fp32, F::bf16,
                        "quantize to e4m3 (e5m2 for grads) with per-tensor scales from the current amax; bf16 out"})},
      {Mode::mxfp8, "mxfp8",
       "MX fp8 GEMM inputs: e4m3 in 32-element blocks along K with e8m0 (power-of-two) scales, bf16 elsewhere",
       F::bf16, F::bf16, F::e4m3, true, LossScaling::none,
       low_storage_ops({matmul, fp8_scaled, F::e4m3, F::fp32, F::bf16,
                        "quantize to e4m3 in 32-element blocks along K, one e8m0 scale per block; bf16 out"})},
  }};
  return policies;
}

int width_rank(Format f) {
  switch (f) {
    case F::e4m3:
    case F::e5m2: return 0;
    case F::fp16:
    case F::bf16: return 1;
    case F::fp32:
    case F::tf32: return 2;
  }
  return 2;
}

bool is_fp8(Format f) { return f == F::e4m3 || f == F::e5m2; }

// torch.promote_types: the wider type wins; fp16 with bf16 (and the two fp8s) meet at fp32.
Format widest(std::span<const Format> inputs) {
  Format result = inputs.front();
  for (Format f : inputs.subspan(1)) {
    if (f == result) continue;
    if (width_rank(f) == width_rank(result)) result = F::fp32;
    else if (width_rank(f) > width_rank(result)) result = f;
  }
  return result;
}

}  // namespace

std::span<const ModePolicy> all_policies() { return table(); }

const ModePolicy& policy(Mode mode) { return table()[static_cast<std::size_t>(mode)]; }

std::optional<Mode> parse_mode(std::string_view text) {
  std::string key(text);
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const ModePolicy& p : table()) {
    if (p.name == key) return p.mode;
  }
  if (key == "fp8") return Mode::fp8;  // the fp8-delayed mode's name before fp8-current existed
  return std::nullopt;
}

std::string mode_names() {
  std::string names;
  for (const ModePolicy& p : table()) {
    if (!names.empty()) names += ", ";
    names += p.name;
  }
  return names;
}

std::string_view mode_name(Mode mode) { return policy(mode).name; }
std::string_view op_name(OpCategory op) { return kOpNames[static_cast<std::size_t>(op)]; }
std::string_view torch_ops(OpCategory op) { return kTorchOps[static_cast<std::size_t>(op)]; }

std::string_view rule_name(CastRule rule) {
  switch (rule) {
    case lower_precision: return "lower-precision";
    case fp32: return "fp32";
    case fp32_in_kernel: return "fp32-in-kernel";
    case promote: return "promote";
    case input_dtype: return "input-dtype";
    case fp8_scaled: return "fp8-scaled";
  }
  return "?";
}

Format resolve_input_dtype(const ModePolicy& p, OpCategory op, std::span<const Format> inputs) {
  const OpPolicy& rule = p.op(op);
  switch (rule.rule) {
    case lower_precision:
    case fp32:
    case fp8_scaled: return rule.input;
    case promote:
    case input_dtype:
    case fp32_in_kernel: return inputs.empty() ? rule.input : widest(inputs);
  }
  return rule.input;
}

uint64_t storage_bytes(Format f) { return uint64_t(num::format_info(f).storage_bits / 8); }

CastCount& CastCount::operator+=(const CastCount& other) {
  casts += other.casts;
  bytes_read += other.bytes_read;
  bytes_written += other.bytes_written;
  return *this;
}

CastCount CastCounter::add_op(OpCategory op, std::span<const TensorArg> inputs) {
  const OpPolicy& rule = policy_->op(op);
  CastCount added;
  if (rule.rule == input_dtype || rule.rule == fp32_in_kernel || inputs.empty()) return added;

  std::vector<Format> dtypes;
  for (const TensorArg& t : inputs) dtypes.push_back(t.dtype);
  const Format target = resolve_input_dtype(*policy_, op, dtypes);
  for (const TensorArg& t : inputs) {
    const bool already_there = t.dtype == target || (rule.rule == fp8_scaled && is_fp8(t.dtype));
    if (already_there) continue;
    if (t.parameter_id >= 0) {
      const std::pair<int64_t, Format> key{t.parameter_id, target};
      if (std::find(cached_parameter_casts_.begin(), cached_parameter_casts_.end(), key) !=
          cached_parameter_casts_.end()) {
        continue;
      }
      cached_parameter_casts_.push_back(key);
    }
    added.casts += 1;
    added.bytes_read += t.elements * storage_bytes(t.dtype);
    added.bytes_written += t.elements * storage_bytes(target);
  }
  forward_ += added;
  by_op_[static_cast<std::size_t>(op)] += added;
  return added;
}

CastCount CastCounter::backward() const {
  return CastCount{forward_.casts, forward_.bytes_written, forward_.bytes_read};
}

CastCount CastCounter::step() const {
  CastCount total = forward_;
  total += backward();
  return total;
}

void CastCounter::new_step() {
  forward_ = {};
  by_op_ = {};
  cached_parameter_casts_.clear();
}

}  // namespace mpbench::amp
