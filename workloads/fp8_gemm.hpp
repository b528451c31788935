#pragma once
// The fp8 training modes' GEMM operands (issue 31 step 1), shared by every TransformerOps so that
// the CPU ops and the reference ops quantize alike: Transformer Engine's hybrid recipe, e4m3 for
// weights and activations (the forward GEMMs' operands, read again by the backward GEMMs), e5m2
// for the gradients of the outputs (dout, in the backward GEMMs), one scale per tensor.
//   current: the scale from the tensor's own amax (fp8 max / 2^margin / amax; 1 for an all-zero,
//            NaN or infinite amax): amp::quantize_current_scaling.
//   delayed: the scale from the amax history of that tensor (amp::DelayedScaler, history length
//            and margin below, algorithm max), updated once per optimizer step (end_step), so a
//            step's scale is known before the tensor is produced; the first step's scale is 1.
// On the converted path each operand is quantized with its scale and dequantized (code value *
// scale_inv, in fp32), and the GEMM runs in fp32 on those values. cuBLASLt would multiply the fp8
// codes and scale the fp32 sum by scale_inv_a * scale_inv_b instead: the same operand values,
// differently rounded products (within fp32 rounding of the result).
//
// A tensor is named by the op range it is read in (workloads/ops.hpp's in_op_range sets it: "c_fc
// L3") and its role, so the forward's input and weight scalers are the backward's too (their values
// are the same in both; a delayed scale does not change within a step). Counts are taken where a
// tensor is quantized first: inputs and weights outside the backward, gradients wherever they are.
//
// The forward's fp8 copies: as Transformer Engine keeps the fp8 input and weight of each forward
// GEMM for the backward's, the per-tensor recipes keep the codes and scale of every input and weight
// quantized outside the backward (keyed by range and role, with the tensor's address and size), and
// the backward's GEMMs dequantize those (reuse_forward_copy) instead of quantizing the same values
// again: bit for bit the same operands (neither the tensor nor its scale changes within a step), for
// one pass over 1-byte codes instead of an amax pass and a quantization. mxfp8 keeps none: its
// backward blocks those operands along the other dimension (N or OC instead of C), a different
// quantization. end_step and configure drop the copies.
// Across micro-batches (hold_weights, Transformer Engine's is_first_microbatch): a trainer that
// changes no weight until end_step lets the later micro-batches' forwards reuse the first one's
// weight copies too, so each weight is quantized (and counted) once per optimizer step.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "amp/block_scaling.hpp"
#include "amp/fp8_scaling.hpp"

namespace mpbench::workloads {

// mxfp8: OCP MX blocks, 32 consecutive elements along the GEMM's K dimension sharing one e8m0
// (power-of-two) scale, e4m3 elements for every operand (Transformer Engine's MXFP8BlockScaling
// default), amp::mx_quantize_rows; an operand whose K is its row index (the backward's W, and dy
// and x for dW) is blocked along its columns. No state between steps.
// Its block scales round down (the OCP spec's floor rule, the default) or up (Transformer Engine's
// ceil(log2(amax / 448)): no saturation), amp::MxScaleRounding.
enum class Fp8Recipe { none, current, delayed, mxfp8 };
std::string_view fp8_recipe_name(Fp8Recipe recipe);  // "none", "current", "delayed", "mxfp8"
// "down" or "up" (amp::mx_scale_rounding_name); UsageError naming --mx-scale-rounding otherwise.
amp::MxScaleRounding parse_mx_scale_rounding(std::string_view name);

enum class Fp8Operand { input, weight, grad };
constexpr std::size_t kFp8OperandKinds = 3;

// Transformer Engine's DelayedScaling defaults: amax_history_len 1024, margin 0, amax_compute_algo max.
constexpr int kFp8DefaultHistory = 1024;
constexpr int kFp8DefaultMargin = 0;

struct Fp8Counts {
  std::uint64_t tensors = 0;  // quantizations counted
  std::uint64_t elements = 0;
  std::uint64_t saturated = 0;
  std::uint64_t underflowed = 0;
};

class Fp8GemmQuantizer {
 public:
  // Forgets every scaler, count and kept copy: a new training run. mx_rounding: mxfp8's block
  // scales. keep_forward_copies: false quantizes the backward's inputs and weights again (the cost
  // of not keeping them).
  void configure(Fp8Recipe recipe, int history_length = kFp8DefaultHistory, int margin = kFp8DefaultMargin,
                 amp::MxScaleRounding mx_rounding = amp::MxScaleRounding::down, bool keep_forward_copies = true);
  Fp8Recipe recipe() const { return recipe_; }
  amp::MxScaleRounding mx_rounding() const { return mx_rounding_; }
  // The per-tensor recipes with keep_forward_copies.
  bool keeps_forward_copies() const { return keep_forward_copies_ && recipe_ != Fp8Recipe::mxfp8; }
  bool active() const { return recipe_ != Fp8Recipe::none; }

  // The start of an optimizer step whose weights stay as they are until end_step: drops every
  // copy (nothing earlier is trusted), then lets forwards reuse this step's weight copies.
  void hold_weights();
  // The weights changed (the optimizer, a checkpoint): drops every copy and the hold.
  void weights_changed();

  // The op range that quantizes next (set by in_op_range); backward: gradients are counted.
  void set_range(std::string_view op, int layer, bool backward);

  // out[i] = dequantized fp8 of x[i] with the scale of (current range, operand): e5m2 for grad,
  // e4m3 otherwise. out may be x.
  void quantize(Fp8Operand operand, const float* x, std::size_t n, float* out);

  // x as a row-major rows x cols matrix whose K dimension runs along its rows (k_along_rows: x's
  // elements [r, 0..cols) are consecutive in K) or down its columns. mxfp8 blocks along K; the
  // per-tensor recipes ignore the shape (quantize above). count: false for a second copy of a
  // tensor already counted (mxfp8's dy, blocked both ways in the backward). source: the tensor x
  // was read from (x itself, or the storage it was decoded from); an input or weight with a source
  // has its fp8 copy kept outside the backward (keeps_forward_copies).
  void quantize_matrix(Fp8Operand operand, const float* x, std::size_t rows, std::size_t cols, bool k_along_rows,
                       float* out, bool count = true, const void* source = nullptr);
  // In the backward, or for a weight while the weights are held: out[0..n) = the dequantized fp8
  // copy this range's forward kept of `source` as `operand` (the same address and size), and true;
  // false (out untouched) where none is kept.
  bool reuse_forward_copy(Fp8Operand operand, const void* source, std::size_t n, float* out);

  // After the optimizer step: delayed scalers take their next scale (counted when it changes).
  void end_step();
  // This step's counts (per operand kind and in total), scale changes, the number of scaled
  // tensors, the forward copies reused and kept, and quantize_seconds, as JSON; then clears the
  // step's counts and time.
  nlohmann::json take_step_details();

  const std::array<Fp8Counts, kFp8OperandKinds>& step_counts() const { return counts_; }
  std::uint64_t step_scale_changes() const { return scale_changes_; }
  std::uint64_t step_copies_reused() const { return copies_reused_; }
  // Bytes of the kept copies' codes (1 per element) and scales (4 per tensor).
  std::uint64_t kept_copy_bytes() const;
  // Wall seconds this step in quantize and quantize_matrix: amax, scales, quantization and
  // dequantization (everything the converted path adds to a GEMM; mxfp8 blocks an operand down its
  // columns in place, without the transposes).
  double step_quantize_seconds() const { return quantize_seconds_; }
  // The delayed scaler of `key` ("c_fc L3 weight"), or null.
  const amp::DelayedScaler* scaler(const std::string& key) const;

 private:
  Fp8Recipe recipe_ = Fp8Recipe::none;
  int history_length_ = kFp8DefaultHistory;
  int margin_ = kFp8DefaultMargin;
  amp::MxScaleRounding mx_rounding_ = amp::MxScaleRounding::down;
  std::string range_;
  bool backward_ = false;
  bool keep_forward_copies_ = true;
  bool weights_held_ = false;
  // One forward operand's fp8 codes (one per element) and scale, for the backward (valid until
  // end_step).
  struct ForwardCopy {
    const void* source = nullptr;
    float scale_inv = 1;
    bool valid = false;
    std::vector<std::uint8_t> codes;
  };
  std::map<std::string, amp::DelayedScaler> scalers_;
  std::map<std::string, ForwardCopy> copies_;
  std::array<Fp8Counts, kFp8OperandKinds> counts_{};
  std::uint64_t scale_changes_ = 0;
  std::uint64_t copies_reused_ = 0;
  double quantize_seconds_ = 0;
  void add_counts(Fp8Operand operand, std::size_t n, std::uint64_t saturated, std::uint64_t underflowed);
  // "c_fc L3 weight": the current range and the operand's role.
  std::string tensor_key(Fp8Operand operand) const;
  // The untimed bodies of quantize (per-tensor recipes) and quantize_matrix (mxfp8). source: as
  // quantize_matrix's, or null.
  void quantize_per_tensor(Fp8Operand operand, const float* x, std::size_t n, float* out,
                           const void* source = nullptr);
  void quantize_blocked(Fp8Operand operand, const float* x, std::size_t rows, std::size_t cols, bool k_along_rows,
                        float* out, bool count);

  std::vector<std::uint8_t> codes_, block_scales_;
};

}  // namespace mpbench::workloads
