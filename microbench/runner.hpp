#pragma once
// Runs cases with Google Benchmark as the harness: each case is one benchmark whose single
// iteration is mpbench's sampler, reported to Google Benchmark as manual time (the median).
// --benchmark_* options pass through (filter, repetitions, out, format...).
#include <functional>
#include <optional>
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

// Hands the --benchmark_* options to Google Benchmark; throws UsageError for one it does not know,
// a --benchmark_format or --benchmark_out_format other than console, json and csv, and a
// --benchmark_filter that is not a regular expression.
void configure_google_benchmark(const std::vector<std::string>& benchmark_args);

// The name Google Benchmark matches --benchmark_filter against: the case id and its run's settings.
std::string benchmark_name(const CaseSpec& spec);

// The value of `--flag=value` among Google Benchmark's `args` (the last one counts, as in Google
// Benchmark), if given.
std::optional<std::string> flag_value(const std::vector<std::string>& args, const std::string& flag);

// How many measurements the run makes: the cases not skipped that --benchmark_filter keeps, each
// --benchmark_repetitions times (what the progress lines count to).
std::size_t measurements_to_run(const std::vector<CaseSpec>& specs, const std::vector<std::string>& benchmark_args);

// UsageError when --benchmark_filter matches none of the cases that would run, as --filter.
void check_benchmark_filter(const std::vector<CaseSpec>& specs, const std::vector<std::string>& benchmark_args);

// After a run with --benchmark_out: what is wrong with the file Google Benchmark wrote (missing,
// empty, or, in its json format, not one whole JSON value), or nothing. Google Benchmark does not
// check its writes, so a full disk leaves an empty or cut file without a word.
std::optional<std::string> benchmark_out_problem(const std::vector<std::string>& benchmark_args);

using ProgressFn = std::function<void(std::size_t done, std::size_t total, const CaseResult&)>;

// Configures Google Benchmark with `benchmark_args` first (see above). With a `profiler`, each
// measured case is profiled once after its measurement (the first repetition's op), into
// details.profile.
RunOutcome run_cases(Backend& backend, const std::vector<CaseSpec>& specs, const SamplerConfig& config,
                     const std::vector<std::string>& benchmark_args, const ProgressFn& progress,
                     CaseProfiler* profiler = nullptr);

}  // namespace mpbench::microbench
