#pragma once
// The per-element unscale and the scale update of torch.amp.GradScaler, shared by the CPU scaler
// and the CUDA kernels so both compute identical scales and gradients.
#include <cstdint>

#include "amp/formats.hpp"
#include "core/hostdevice.hpp"

namespace mpbench::amp {

struct ScalerConfig {
  float init_scale = 65536.0f;  // 2^16, GradScaler's default
  // Factors are doubles as in PyTorch: the update computes float * double and stores a float.
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int32_t growth_interval = 2000;
  bool dynamic = true;                    // false: static loss scale, init_scale forever
  float min_scale = 0.0f;                 // apex min_loss_scale; 0 = no floor (PyTorch)
  float max_scale = __builtin_huge_valf();  // apex max_loss_scale (2^24 there); inf = no cap
};

struct ScalerState {
  float scale;
  int32_t growth_tracker;  // consecutive finite steps since the last growth or backoff
  int32_t found_inf;       // set by unscale, consumed (and cleared) by the update
  int64_t steps;
  int64_t skipped_steps;
};

MPB_HD ScalerState initial_scaler_state(const ScalerConfig& config) {
  // apex starts at min(max_loss_scale, init_scale).
  const float scale = config.init_scale < config.max_scale ? config.init_scale : config.max_scale;
  return ScalerState{scale, 0, 0, 0, 0};
}

// Bit test rather than isfinite(): stays correct when kernels are built with fast math.
MPB_HD bool is_finite(float x) {
  return (num::float_to_bits(x) & 0x7F800000u) != 0x7F800000u;
}

// PyTorch takes the reciprocal in double: fp32 division can be imprecise under some compile options.
MPB_HD float inverse_scale(float scale) { return float(1.0 / double(scale)); }

// One gradient element: flags it when it is not finite (checked before scaling, as PyTorch does)
// and multiplies it by 1/scale, skipping the multiply when inv_scale is exactly 1.
MPB_HD float unscale_element(float grad, float inv_scale, int32_t& found_inf) {
  if (!is_finite(grad)) found_inf = 1;
  return inv_scale == 1.0f ? grad : grad * inv_scale;
}

// torch's _amp_update_scale_ plus apex's optional floor and cap. A step with a non-finite gradient
// backs off and resets the tracker; growth_interval finite steps in a row grow the scale, unless
// the grown scale would be inf.
MPB_HD void update_scale(ScalerState& state, const ScalerConfig& config) {
  const bool found_inf = state.found_inf != 0;
  state.found_inf = 0;
  state.steps += 1;
  if (found_inf) state.skipped_steps += 1;
  if (!config.dynamic) return;
  if (found_inf) {
    const float backed_off = float(double(state.scale) * config.backoff_factor);
    state.scale = backed_off < config.min_scale ? config.min_scale : backed_off;
    state.growth_tracker = 0;
    return;
  }
  const int32_t successful = state.growth_tracker + 1;
  if (successful == config.growth_interval) {
    const float grown = float(double(state.scale) * config.growth_factor);
    if (is_finite(grown)) state.scale = grown < config.max_scale ? grown : config.max_scale;
    state.growth_tracker = 0;
  } else {
    state.growth_tracker = successful;
  }
}

}  // namespace mpbench::amp
