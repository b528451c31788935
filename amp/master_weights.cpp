#include "amp/master_weights.hpp"

#include <stdexcept>

namespace mpbench::amp {

MasterWeights::MasterWeights(std::span<const float> initial, num::Format working)
    : master_(initial.begin(), initial.end()), working_(initial.size()), bf16_(working == num::Format::bf16) {
  if (working != num::Format::fp16 && working != num::Format::bf16) {
    throw std::invalid_argument("master weights: the working copy must be fp16 or bf16");
  }
  refresh();
}

void MasterWeights::refresh() {
  for (std::size_t i = 0; i < master_.size(); ++i) working_[i] = working_copy_bits(master_[i], bf16_);
}

}  // namespace mpbench::amp
