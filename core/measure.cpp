#include "core/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/interrupt.hpp"

namespace mpbench {

SamplerConfig SamplerConfig::quick() {
  SamplerConfig c;
  c.min_samples = 5;
  c.max_noise = 0.02;
  c.min_time_s = 0.05;
  // A smoke run: no case samples for longer than a quarter second (a quick CPU run measures about
  // ninety cases; at half a second each, most of them stopping there under load, sampling alone
  // took 45 s of a 90 s budget).
  c.timeout_s = 0.25;
  return c;
}

nlohmann::json SamplerConfig::to_json() const {
  return {{"min_samples", min_samples}, {"max_samples", max_samples}, {"max_noise", max_noise},
          {"min_time_s", min_time_s},   {"timeout_s", timeout_s},     {"min_sample_s", min_sample_s},
          {"flush_cache", flush_cache}};
}

nlohmann::json Measurement::to_json() const {
  return {{"ops_per_sample", ops_per_sample},
          {"converged", converged},
          {"stop_reason", stop_reason},
          {"clocks_before", clocks_before},
          {"clocks_after", clocks_after}};
}

namespace {

double time_once(Backend& backend, DeviceTimer& timer, const std::function<void()>& op, int ops,
                 bool flush) {
  if (flush) backend.flush_cache();
  backend.synchronize();
  timer.start();
  for (int i = 0; i < ops; ++i) op();
  return timer.stop_seconds();
}

double noise_of(const std::vector<double>& samples) {
  if (samples.size() < 2) return INFINITY;
  return Statistics::of(samples).relative_spread();
}

// What a sampler stopped short of its target lacked: the samples, the measured time, and the
// noise against the target (always said, met or not).
std::string shortfall(const SamplerConfig& config, int samples, double measured_s, double noise) {
  std::vector<std::string> parts;
  if (samples < config.min_samples) parts.push_back(fmt::format("{} samples < {}", samples, config.min_samples));
  if (measured_s < config.min_time_s)
    parts.push_back(fmt::format("{:.3g} s measured < {:g} s", measured_s, config.min_time_s));
  parts.push_back(fmt::format("noise {:.2f}% {} {:.2f}%", 100 * noise, noise <= config.max_noise ? "<=" : ">",
                              100 * config.max_noise));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

Measurement measure(Backend& backend, const std::function<void()>& op, const SamplerConfig& config) {
  using clock = std::chrono::steady_clock;
  auto timer = backend.make_timer();
  Measurement m;
  m.clocks_before = backend.clocks();

  // Warm-up: the first launch pays for lazy loading and plan caches; the second estimates the cost.
  time_once(backend, *timer, op, 1, false);
  const double estimate = std::max(time_once(backend, *timer, op, 1, config.flush_cache), 1e-9);
  m.ops_per_sample =
      std::clamp(static_cast<int>(std::ceil(config.min_sample_s / estimate)), 1, 10000);

  std::vector<double> samples;
  double measured_s = 0;
  const auto started = clock::now();
  for (;;) {
    if (interrupt_requested()) throw Interrupted();
    const double t = time_once(backend, *timer, op, m.ops_per_sample, config.flush_cache);
    samples.push_back(t / m.ops_per_sample);
    measured_s += t;
    const int n = static_cast<int>(samples.size());
    const double elapsed = std::chrono::duration<double>(clock::now() - started).count();
    const double noise = noise_of(samples);
    if (n >= config.min_samples && measured_s >= config.min_time_s && noise <= config.max_noise) {
      m.converged = true;
      m.stop_reason = fmt::format("noise {:.2f}% <= {:.2f}%", 100 * noise, 100 * config.max_noise);
      break;
    }
    if (n >= config.max_samples) {
      m.stop_reason = fmt::format("max_samples {} reached before the noise target: {}", n,
                                  shortfall(config, n, measured_s, noise));
      break;
    }
    if (elapsed >= config.timeout_s && n >= std::min(config.min_samples, 3)) {
      m.stop_reason = fmt::format("timeout {:g} s reached before the noise target: {}", config.timeout_s,
                                  shortfall(config, n, measured_s, noise));
      break;
    }
  }
  m.seconds_per_op = Statistics::of(std::move(samples));
  m.clocks_after = backend.clocks();
  return m;
}

}  // namespace mpbench
