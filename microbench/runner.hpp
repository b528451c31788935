#pragma once
// Runs cases with Google Benchmark as the harness: each case is one benchmark whose single
// iteration is mpbench's sampler, reported to Google Benchmark as manual time (the median).
// --benchmark_* options pass through (filter, repetitions, out, format...).
#include <functional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/measure.hpp"
#include "core/result.hpp"
#include "microbench/suite.hpp"

namespace mpbench::microbench {

struct RunOutcome {
  std::vector<CaseResult> cases;  // in the order of the specs; skipped ones included
  bool interrupted = false;
};

// Hands the --benchmark_* options to Google Benchmark; throws UsageError for one it does not know.
void configure_google_benchmark(const std::vector<std::string>& benchmark_args);

using ProgressFn = std::function<void(std::size_t done, std::size_t total, const CaseResult&)>;

// Configures Google Benchmark with `benchmark_args` first (see above). With a `profiler`, each
// measured case is profiled once after its measurement (the first repetition's op), into
// details.profile.
RunOutcome run_cases(Backend& backend, const std::vector<CaseSpec>& specs, const SamplerConfig& config,
                     const std::vector<std::string>& benchmark_args, const ProgressFn& progress,
                     CaseProfiler* profiler = nullptr);

}  // namespace mpbench::microbench
