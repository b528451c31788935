#include "amp/fp8_scaling.hpp"

#include <cmath>
#include <stdexcept>

namespace mpbench::amp {
namespace {

// NaN-propagating max, like torch.max over the history: a NaN amax must stay visible.
float max_propagating_nan(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::nanf("");
  return a > b ? a : b;
}

}  // namespace

DelayedScaler::DelayedScaler(DelayedScalingConfig config)
    : config_(config), fp8_max_(float(num::format_info(config.format).max_finite)) {
  if (config.format != num::Format::e4m3 && config.format != num::Format::e5m2) {
    throw std::invalid_argument("delayed scaling: the format must be fp8-e4m3 or fp8-e5m2");
  }
  if (config.history_length < 1 || config.margin < 0 || config.margin > 30) {
    throw std::invalid_argument("delayed scaling: history_length >= 1 and margin in [0, 30]");
  }
  ring_.assign(std::size_t(config.history_length), 0.0f);
}

QuantizeStats DelayedScaler::quantize(std::span<const float> x, std::span<uint8_t> out) {
  if (out.size() < x.size()) throw std::invalid_argument("quantize: output smaller than input");
  const bool e4m3 = config_.format == num::Format::e4m3;
  QuantizeStats stats;
  stats.elements = x.size();
  uint32_t saturated = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    stats.amax = max_propagating_nan(stats.amax, std::fabs(x[i]));
    out[i] = quantize_fp8(x[i], scale_, e4m3, saturated);
    if ((out[i] & 0x7Fu) == 0 && x[i] != 0.0f) stats.underflowed += 1;
  }
  stats.saturated = saturated;
  saturated_total_ += saturated;
  record_amax(stats.amax);
  return stats;
}

void DelayedScaler::record_amax(float amax) {
  ring_[newest_] = max_propagating_nan(ring_[newest_], amax);
}

float DelayedScaler::window_amax() const {
  if (config_.algo == AmaxAlgo::most_recent) return ring_[newest_];
  float amax = 0.0f;
  for (std::size_t i = 0; i < filled_; ++i) amax = max_propagating_nan(amax, ring_[i]);
  return amax;
}

void DelayedScaler::update() {
  scale_ = fp8_scale_from_amax(window_amax(), fp8_max_, config_.margin, scale_);
  newest_ = (newest_ + 1) % ring_.size();
  ring_[newest_] = 0.0f;
  if (filled_ < ring_.size()) ++filled_;
}

std::vector<float> DelayedScaler::history() const {
  std::vector<float> newest_first;
  for (std::size_t i = 0; i < filled_; ++i) {
    newest_first.push_back(ring_[(newest_ + ring_.size() - i) % ring_.size()]);
  }
  return newest_first;
}

}  // namespace mpbench::amp
