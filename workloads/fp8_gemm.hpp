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
// tensor is quantized first: inputs and weights outside the backward (the converted path quantizes
// them again for the backward GEMMs, as Transformer Engine would not: it keeps the forward's fp8
// copies), gradients wherever they are.
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
  // Forgets every scaler and count: a new training run. mx_rounding: mxfp8's block scales.
  void configure(Fp8Recipe recipe, int history_length = kFp8DefaultHistory, int margin = kFp8DefaultMargin,
                 amp::MxScaleRounding mx_rounding = amp::MxScaleRounding::down);
  Fp8Recipe recipe() const { return recipe_; }
  amp::MxScaleRounding mx_rounding() const { return mx_rounding_; }
  bool active() const { return recipe_ != Fp8Recipe::none; }

  // The op range that quantizes next (set by in_op_range); backward: gradients are counted.
  void set_range(std::string_view op, int layer, bool backward);

  // out[i] = dequantized fp8 of x[i] with the scale of (current range, operand): e5m2 for grad,
  // e4m3 otherwise. out may be x.
  void quantize(Fp8Operand operand, const float* x, std::size_t n, float* out);

  // x as a row-major rows x cols matrix whose K dimension runs along its rows (k_along_rows: x's
  // elements [r, 0..cols) are consecutive in K) or down its columns. mxfp8 blocks along K; the
  // per-tensor recipes ignore the shape (quantize above). count: false for a second copy of a
  // tensor already counted (mxfp8's dy, blocked both ways in the backward).
  void quantize_matrix(Fp8Operand operand, const float* x, std::size_t rows, std::size_t cols, bool k_along_rows,
                       float* out, bool count = true);

  // After the optimizer step: delayed scalers take their next scale (counted when it changes).
  void end_step();
  // This step's counts (per operand kind and in total), scale changes, the number of scaled
  // tensors and quantize_seconds, as JSON; then clears the step's counts and time.
  nlohmann::json take_step_details();

  const std::array<Fp8Counts, kFp8OperandKinds>& step_counts() const { return counts_; }
  std::uint64_t step_scale_changes() const { return scale_changes_; }
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
  std::map<std::string, amp::DelayedScaler> scalers_;
  std::array<Fp8Counts, kFp8OperandKinds> counts_{};
  std::uint64_t scale_changes_ = 0;
  double quantize_seconds_ = 0;
  void add_counts(Fp8Operand operand, std::size_t n, std::uint64_t saturated, std::uint64_t underflowed);
  // The untimed bodies of quantize (per-tensor recipes) and quantize_matrix (mxfp8).
  void quantize_per_tensor(Fp8Operand operand, const float* x, std::size_t n, float* out);
  void quantize_blocked(Fp8Operand operand, const float* x, std::size_t rows, std::size_t cols, bool k_along_rows,
                        float* out, bool count);

  std::vector<std::uint8_t> codes_, block_scales_;
};

}  // namespace mpbench::workloads
