#include "amp/loss_scaler.hpp"

#include <stdexcept>

namespace mpbench::amp {

void check_scaler_config(const ScalerConfig& config) {
  if (config.dynamic && !(config.growth_factor > 1.0 && config.backoff_factor < 1.0)) {
    throw std::invalid_argument("loss scaler needs growth_factor > 1 and backoff_factor < 1");
  }
  if (!(config.init_scale > 0.0f) || config.growth_interval < 1) {
    throw std::invalid_argument("loss scaler needs init_scale > 0 and growth_interval >= 1");
  }
}

LossScaler::LossScaler(ScalerConfig config) : config_(config), state_(initial_scaler_state(config)) {
  check_scaler_config(config);
}

ScalerConfig LossScaler::static_config(float scale) {
  ScalerConfig config;
  config.init_scale = scale;
  config.dynamic = false;
  return config;
}

ScalerConfig LossScaler::apex_config(float min_scale, float max_scale) {
  ScalerConfig config;
  config.min_scale = min_scale;
  config.max_scale = max_scale;
  return config;
}

bool LossScaler::unscale(std::span<const std::span<float>> grads) {
  if (unscaled_this_step_) {
    throw std::logic_error("LossScaler::unscale called twice in one step; call update() first");
  }
  unscaled_this_step_ = true;
  const float inv = inverse();
  int32_t found = 0;
  for (std::span<float> tensor : grads) {
    for (float& g : tensor) g = unscale_element(g, inv, found);
  }
  state_.found_inf = found;
  return found != 0;
}

void LossScaler::update() {
  update_scale(state_, config_);
  unscaled_this_step_ = false;
}

void LossScaler::restore(const ScalerState& state) {
  state_ = state;
  unscaled_this_step_ = false;
}

}  // namespace mpbench::amp
