#pragma once
// Dynamic loss scaling with torch.amp.GradScaler's semantics, on the CPU. The math lives in
// loss_scaler_math.hpp and is shared with the CUDA scaler (loss_scaler_cuda.hpp).
#include <span>

#include "amp/loss_scaler_math.hpp"

namespace mpbench::amp {

// Throws std::invalid_argument unless GradScaler would accept config: init_scale > 0,
// growth_interval >= 1 and, when dynamic, growth_factor > 1 and backoff_factor < 1.
void check_scaler_config(const ScalerConfig& config);

class LossScaler {
 public:
  explicit LossScaler(ScalerConfig config = {});

  // A scaler whose scale never changes (non-finite steps are still detected and skipped).
  static ScalerConfig static_config(float scale);
  // apex amp's dynamic scaler: GradScaler's rule capped at 2^24, with an optional floor.
  static ScalerConfig apex_config(float min_scale = 0.0f, float max_scale = 16777216.0f);

  float scale() const { return state_.scale; }
  float inverse() const { return inverse_scale(state_.scale); }
  float scale_loss(float loss) const { return loss * state_.scale; }

  // One fused pass over all gradient tensors: multiplies each element by 1/scale and records
  // whether any was inf or NaN. Every element is unscaled even after a non-finite one, as
  // PyTorch's _amp_foreach_non_finite_check_and_unscale_ does. Once per step, like unscale_().
  bool unscale(std::span<const std::span<float>> grads);

  // True when the step's gradients held inf/NaN: the optimizer step must be skipped.
  bool found_inf() const { return state_.found_inf != 0; }

  // Ends the step: backs off after a non-finite step, grows after growth_interval clean ones.
  void update();

  const ScalerState& state() const { return state_; }
  const ScalerConfig& config() const { return config_; }
  void restore(const ScalerState& state);

 private:
  ScalerConfig config_;
  ScalerState state_;
  bool unscaled_this_step_ = false;
};

}  // namespace mpbench::amp
