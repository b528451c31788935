#pragma once
// The sampling loop every case uses, modelled on nvbench's cold measurement: warm up, then take
// samples (optionally after a cache flush) until the relative spread is below max_noise and
// min_time of device time has been measured, or the wall-clock timeout is reached.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/backend.hpp"
#include "core/stats.hpp"

namespace mpbench {

struct SamplerConfig {
  int min_samples = 10;
  int max_samples = 2000;
  double max_noise = 0.005;     // stddev / mean of the samples
  double min_time_s = 0.5;      // device time accumulated over samples
  double timeout_s = 15.0;      // wall clock per case
  double min_sample_s = 20e-6;  // short ops are launched back to back until a sample lasts this long
  bool flush_cache = true;      // flush before each sample (GEMM); off for cache-resident sweeps

  static SamplerConfig standard() { return {}; }
  static SamplerConfig quick();
  SamplerConfig without_flush() const {
    SamplerConfig c = *this;
    c.flush_cache = false;
    return c;
  }
  nlohmann::json to_json() const;
};

struct Measurement {
  Statistics seconds_per_op;
  int ops_per_sample = 1;
  bool converged = false;  // the noise criterion was met (false: stopped by timeout or max_samples)
  std::string stop_reason;
  nlohmann::json clocks_before, clocks_after;
  nlohmann::json to_json() const;  // everything but the statistics
};

// Throws Interrupted when Ctrl-C arrives (see core/interrupt.hpp).
Measurement measure(Backend& backend, const std::function<void()>& op, const SamplerConfig& config);

}  // namespace mpbench
