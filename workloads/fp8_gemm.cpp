#include "workloads/fp8_gemm.hpp"

#include <chrono>
#include <span>
#include <stdexcept>

#include "core/error.hpp"

namespace mpbench::workloads {
namespace {

constexpr std::array<std::string_view, kFp8OperandKinds> kOperandNames = {"input", "weight", "grad"};

nlohmann::json counts_json(const Fp8Counts& c) {
  return {{"tensors", c.tensors}, {"elements", c.elements}, {"saturated", c.saturated}, {"underflowed", c.underflowed}};
}

// Adds the wall time of its scope to `seconds`.
class ScopeTimer {
 public:
  explicit ScopeTimer(double& seconds) : seconds_(seconds), start_(std::chrono::steady_clock::now()) {}
  ~ScopeTimer() { seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  ScopeTimer(const ScopeTimer&) = delete;
  ScopeTimer& operator=(const ScopeTimer&) = delete;

 private:
  double& seconds_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::string_view fp8_recipe_name(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::current: return "current";
    case Fp8Recipe::delayed: return "delayed";
    case Fp8Recipe::mxfp8: return "mxfp8";
    case Fp8Recipe::none: break;
  }
  return "none";
}

amp::MxScaleRounding parse_mx_scale_rounding(std::string_view name) {
  for (amp::MxScaleRounding rounding : {amp::MxScaleRounding::down, amp::MxScaleRounding::up})
    if (name == amp::mx_scale_rounding_name(rounding)) return rounding;
  throw UsageError("--mx-scale-rounding '" + std::string(name) + "': use down or up");
}

void Fp8GemmQuantizer::configure(Fp8Recipe recipe, int history_length, int margin, amp::MxScaleRounding mx_rounding,
                                 bool keep_forward_copies) {
  if (history_length < 1 || margin < 0 || margin > 30)
    throw std::invalid_argument("fp8 scaling: history length >= 1 and margin in [0, 30]");
  recipe_ = recipe;
  history_length_ = history_length;
  margin_ = margin;
  mx_rounding_ = mx_rounding;
  keep_forward_copies_ = keep_forward_copies;
  weights_held_ = false;
  scalers_.clear();
  copies_.clear();
  counts_ = {};
  scale_changes_ = 0;
  copies_reused_ = 0;
  quantize_seconds_ = 0;
}

void Fp8GemmQuantizer::set_range(std::string_view op, int layer, bool backward) {
  range_.assign(op);
  if (layer >= 0) range_ += " L" + std::to_string(layer);
  backward_ = backward;
}

void Fp8GemmQuantizer::quantize(Fp8Operand operand, const float* x, std::size_t n, float* out) {
  if (!active()) throw std::logic_error("Fp8GemmQuantizer::quantize without an fp8 recipe");
  const ScopeTimer timer(quantize_seconds_);
  if (recipe_ == Fp8Recipe::mxfp8) return quantize_blocked(operand, x, 1, n, true, out, true);
  quantize_per_tensor(operand, x, n, out);
}

std::string Fp8GemmQuantizer::tensor_key(Fp8Operand operand) const {
  return range_ + " " + std::string(kOperandNames[static_cast<std::size_t>(operand)]);
}

void Fp8GemmQuantizer::quantize_per_tensor(Fp8Operand operand, const float* x, std::size_t n, float* out,
                                           const void* source) {
  const bool grad = operand == Fp8Operand::grad;
  const num::Format format = grad ? num::Format::e5m2 : num::Format::e4m3;
  ForwardCopy* copy = nullptr;
  if (keeps_forward_copies() && !backward_ && !grad && source != nullptr) {
    copy = &copies_[tensor_key(operand)];
    copy->codes.resize(n);
  } else if (codes_.size() < n) {
    codes_.resize(n);
  }
  const std::span<const float> values(x, n);
  const std::span<std::uint8_t> codes(copy != nullptr ? copy->codes.data() : codes_.data(), n);
  std::uint64_t saturated = 0, underflowed = 0;
  float scale_inv = 1;
  if (recipe_ == Fp8Recipe::current) {
    const amp::CurrentScalingResult r = amp::quantize_current_scaling(values, format, codes, margin_);
    saturated = r.saturated;
    underflowed = r.underflowed;
    scale_inv = r.scale_inv;
  } else {
    const std::string key = tensor_key(operand);
    auto it = scalers_.find(key);
    if (it == scalers_.end())
      it = scalers_.emplace(key, amp::DelayedScaler({format, history_length_, margin_, amp::AmaxAlgo::max})).first;
    const amp::QuantizeStats s = it->second.quantize(values, codes);
    saturated = s.saturated;
    underflowed = s.underflowed;
    scale_inv = it->second.scale_inv();
  }
  amp::dequantize_per_tensor(codes, scale_inv, format, std::span<float>(out, n));
  add_counts(operand, n, saturated, underflowed);
  if (copy == nullptr) return;
  copy->source = source;
  copy->scale_inv = scale_inv;
  copy->valid = true;
}

void Fp8GemmQuantizer::hold_weights() {
  weights_changed();
  weights_held_ = true;
}

void Fp8GemmQuantizer::weights_changed() {
  for (auto& [key, copy] : copies_) copy.valid = false;
  weights_held_ = false;
}

bool Fp8GemmQuantizer::reuse_forward_copy(Fp8Operand operand, const void* source, std::size_t n, float* out) {
  const bool held_weight = weights_held_ && operand == Fp8Operand::weight;
  if (!keeps_forward_copies() || !(backward_ || held_weight) || operand == Fp8Operand::grad) return false;
  const auto it = copies_.find(tensor_key(operand));
  if (it == copies_.end() || !it->second.valid || it->second.source != source || it->second.codes.size() != n)
    return false;
  const ScopeTimer timer(quantize_seconds_);
  amp::dequantize_per_tensor(it->second.codes, it->second.scale_inv, num::Format::e4m3, std::span<float>(out, n));
  ++copies_reused_;
  return true;
}

std::uint64_t Fp8GemmQuantizer::kept_copy_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& [key, copy] : copies_) bytes += copy.codes.size() + sizeof(copy.scale_inv);
  return bytes;
}

void Fp8GemmQuantizer::add_counts(Fp8Operand operand, std::size_t n, std::uint64_t saturated,
                                  std::uint64_t underflowed) {
  if (operand != Fp8Operand::grad && backward_) return;  // inputs and weights: counted in the forward only
  Fp8Counts& c = counts_[static_cast<std::size_t>(operand)];
  c.tensors += 1;
  c.elements += n;
  c.saturated += saturated;
  c.underflowed += underflowed;
}

void Fp8GemmQuantizer::quantize_matrix(Fp8Operand operand, const float* x, std::size_t rows, std::size_t cols,
                                       bool k_along_rows, float* out, bool count, const void* source) {
  if (!active()) throw std::logic_error("Fp8GemmQuantizer::quantize_matrix without an fp8 recipe");
  const ScopeTimer timer(quantize_seconds_);
  if (recipe_ == Fp8Recipe::mxfp8) return quantize_blocked(operand, x, rows, cols, k_along_rows, out, count);
  const std::size_t n = rows * cols;
  if (count) return quantize_per_tensor(operand, x, n, out, source);
  const auto saved = counts_;
  quantize_per_tensor(operand, x, n, out, source);
  counts_ = saved;
}

void Fp8GemmQuantizer::quantize_blocked(Fp8Operand operand, const float* x, std::size_t rows, std::size_t cols,
                                        bool k_along_rows, float* out, bool count) {
  // Blocks of 32 along K: along the rows of x, or down its columns.
  const std::size_t n = rows * cols;
  const std::size_t scales = k_along_rows ? rows * amp::mx_blocks_per_row(cols) : amp::mx_blocks_per_row(rows) * cols;
  if (codes_.size() < n) codes_.resize(n);
  if (block_scales_.size() < scales) block_scales_.resize(scales);
  const std::span<const float> values(x, n);
  const std::span<std::uint8_t> codes(codes_.data(), n), block_scales(block_scales_.data(), scales);
  const auto quantize = k_along_rows ? &amp::mx_quantize_rows : &amp::mx_quantize_columns;
  const auto dequantize = k_along_rows ? &amp::mx_dequantize_rows : &amp::mx_dequantize_columns;
  const amp::BlockQuantizeStats stats =
      quantize(values, rows, cols, num::Format::e4m3, codes, block_scales, mx_rounding_);
  dequantize(codes, block_scales, rows, cols, num::Format::e4m3, std::span<float>(out, n));
  if (count) add_counts(operand, n, stats.saturated, stats.underflowed);
}

void Fp8GemmQuantizer::end_step() {
  weights_changed();  // the optimizer has changed them
  for (auto& [key, scaler] : scalers_) {
    const float before = scaler.scale();
    scaler.update();
    if (scaler.scale() != before) ++scale_changes_;
  }
}

nlohmann::json Fp8GemmQuantizer::take_step_details() {
  if (!active()) return nullptr;
  Fp8Counts total;
  nlohmann::json by_kind = nlohmann::json::object();
  for (std::size_t i = 0; i < kFp8OperandKinds; ++i) {
    by_kind[std::string(kOperandNames[i])] = counts_json(counts_[i]);
    total.tensors += counts_[i].tensors;
    total.elements += counts_[i].elements;
    total.saturated += counts_[i].saturated;
    total.underflowed += counts_[i].underflowed;
  }
  nlohmann::json out = {{"recipe", std::string(fp8_recipe_name(recipe_))},
                        {"formats", {{"input", "fp8-e4m3"}, {"weight", "fp8-e4m3"},
                                     {"grad", recipe_ == Fp8Recipe::mxfp8 ? "fp8-e4m3" : "fp8-e5m2"}}},
                        {"by_operand", by_kind},
                        {"total", counts_json(total)},
                        {"quantize_seconds", quantize_seconds_}};
  if (recipe_ == Fp8Recipe::mxfp8) {
    out["block_size"] = amp::kMxBlockSize;
    out["scale_format"] = "e8m0";
    out["scale_rounding"] = amp::mx_scale_rounding_name(mx_rounding_);
  }
  if (recipe_ != Fp8Recipe::mxfp8)
    out["forward_copies"] = {{"kept", keeps_forward_copies()}, {"reused", copies_reused_}, {"bytes", kept_copy_bytes()}};
  if (recipe_ == Fp8Recipe::delayed) {
    out["scale_changes"] = scale_changes_;
    out["scaled_tensors"] = scalers_.size();
    out["history_length"] = history_length_;
    out["margin"] = margin_;
  }
  counts_ = {};
  scale_changes_ = 0;
  copies_reused_ = 0;
  quantize_seconds_ = 0;
  return out;
}

const amp::DelayedScaler* Fp8GemmQuantizer::scaler(const std::string& key) const {
  const auto it = scalers_.find(key);
  return it == scalers_.end() ? nullptr : &it->second;
}

}  // namespace mpbench::workloads
