#pragma once
// fp8 delayed scaling in the style of Transformer Engine: each tensor keeps a history of its amax
// (largest |x|) over recent steps; the scale used in a step comes from that history, so it is
// known before the tensor is produced. scale = (fp8 max / amax) / 2^margin; values that still
// exceed the format's range saturate, and are counted.
#include <cstdint>
#include <span>
#include <vector>

#include "amp/format_info.hpp"
#include "amp/formats.hpp"
#include "core/hostdevice.hpp"

namespace mpbench::amp {

// One element: x * scale to fp8, saturating. `saturated` is raised when the non-saturating
// conversion would have overflowed, i.e. the clamp changed the value. e4m3 when `e4m3`, else e5m2.
MPB_HD uint8_t quantize_fp8(float x, float scale, bool e4m3, uint32_t& saturated) {
  const float scaled = x * scale;
  const uint8_t exact = e4m3 ? num::f32_to_e4m3_bits(scaled, false) : num::f32_to_e5m2_bits(scaled, false);
  const bool overflowed = e4m3 ? (exact & 0x7Fu) == 0x7Fu : (exact & 0x7Fu) >= 0x7Cu;
  const uint32_t scaled_bits = num::float_to_bits(scaled);
  const bool input_nan = (scaled_bits & 0x7FFFFFFFu) > 0x7F800000u;
  if (overflowed && !input_nan) {
    saturated += 1;
    return uint8_t((exact & 0x80u) | (e4m3 ? 0x7Eu : 0x7Bu));
  }
  return exact;
}

MPB_HD float dequantize_fp8(uint8_t bits, float scale_inv, bool e4m3) {
  return (e4m3 ? num::e4m3_bits_to_f32(bits) : num::e5m2_bits_to_f32(bits)) * scale_inv;
}

// Transformer Engine's rule: a non-finite or non-positive amax keeps the previous scale; a scale
// that overflows fp32 (tiny amax) becomes the largest finite float.
MPB_HD float fp8_scale_from_amax(float amax, float fp8_max, int margin, float previous_scale) {
  const bool usable = amax > 0.0f && (num::float_to_bits(amax) & 0x7F800000u) != 0x7F800000u;
  if (!usable) return previous_scale;
  const float scaled_max = fp8_max / float(1u << margin);
  const float scale = scaled_max / amax;
  if ((num::float_to_bits(scale) & 0x7FFFFFFFu) == 0x7F800000u) return num::bits_to_float(0x7F7FFFFFu);
  return scale;
}

enum class AmaxAlgo { max, most_recent };

struct DelayedScalingConfig {
  num::Format format = num::Format::e4m3;  // e4m3 for activations and weights, e5m2 for gradients
  int history_length = 1024;               // Transformer Engine's current default
  int margin = 0;
  AmaxAlgo algo = AmaxAlgo::max;
};

struct QuantizeStats {
  float amax = 0;
  uint64_t saturated = 0;
  uint64_t underflowed = 0;  // nonzero finite inputs stored as +-0
  uint64_t elements = 0;
};

// The delayed-scaling state of one tensor.
class DelayedScaler {
 public:
  explicit DelayedScaler(DelayedScalingConfig config);

  float scale() const { return scale_; }
  float scale_inv() const { return 1.0f / scale_; }

  // Quantizes with the current scale and folds the tensor's amax into this step's history slot.
  QuantizeStats quantize(std::span<const float> x, std::span<uint8_t> out);
  // Folds an amax measured elsewhere (a GPU kernel) into this step's slot. NaN sticks.
  void record_amax(float amax);

  // Ends the step: the next scale from the amax of the last history_length steps (this one
  // included) or of this step alone, then a fresh slot for the next step.
  void update();

  // Newest first; entry 0 is the step in progress.
  std::vector<float> history() const;
  uint64_t saturated_total() const { return saturated_total_; }
  const DelayedScalingConfig& config() const { return config_; }

 private:
  float window_amax() const;

  DelayedScalingConfig config_;
  float fp8_max_;
  float scale_ = 1.0f;
  std::vector<float> ring_;  // ring buffer of per-step amax
  std::size_t newest_ = 0;   // ring index of the step in progress
  std::size_t filled_ = 1;   // steps recorded, at most history_length
  uint64_t saturated_total_ = 0;
};

}  // namespace mpbench::amp
