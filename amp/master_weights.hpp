#pragma once
// fp32 master weights with a low-precision working copy. The optimizer updates the master; the
// forward pass reads the working copy, refreshed from the master after each step. Without the
// master, updates smaller than half an ulp of the weight (2^-11 relative in fp16, 2^-8 in bf16)
// would round away every step.
#include <cstdint>
#include <span>
#include <vector>

#include "amp/format_info.hpp"
#include "amp/formats.hpp"
#include "core/hostdevice.hpp"

namespace mpbench::amp {

// One element of the working copy: fp16 or bf16 bits of the master value, rounded to nearest even.
MPB_HD uint16_t working_copy_bits(float master, bool bf16) {
  return bf16 ? num::f32_to_bf16_bits(master) : num::f32_to_f16_bits(master);
}

MPB_HD float working_copy_value(uint16_t bits, bool bf16) {
  return bf16 ? num::bf16_bits_to_f32(bits) : num::f16_bits_to_f32(bits);
}

class MasterWeights {
 public:
  // `working` must be fp16 or bf16.
  MasterWeights(std::span<const float> initial, num::Format working);

  std::span<float> master() { return master_; }
  std::span<const float> master() const { return master_; }
  std::span<const uint16_t> working_bits() const { return working_; }
  float working_value(std::size_t i) const { return working_copy_value(working_[i], bf16_); }
  num::Format working_format() const { return bf16_ ? num::Format::bf16 : num::Format::fp16; }

  // Rewrites the working copy from the master; call after each optimizer step.
  void refresh();

 private:
  std::vector<float> master_;
  std::vector<uint16_t> working_;
  bool bf16_;
};

}  // namespace mpbench::amp
