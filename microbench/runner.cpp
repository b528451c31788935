#include "microbench/runner.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/interrupt.hpp"
#include "core/user_regex.hpp"
#include "microbench/case_profile.hpp"

namespace mpbench::microbench {

namespace {

// Prints nothing: mpbench prints its own progress lines and table.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// Google Benchmark's own output of a run: a few KB per case.
constexpr std::uint64_t kMaxBenchmarkOutBytes = std::uint64_t{1} << 30;

}  // namespace

// Google Benchmark takes --benchmark_repetitions as any integer and fails deep inside on a
// negative one: checked here, with a message.
void check_repetitions(const std::vector<std::string>& args) {
  const std::string flag = "--benchmark_repetitions=";
  for (const std::string& a : args) {
    if (a.rfind(flag, 0) != 0) continue;
    const std::string value = a.substr(flag.size());
    if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(value) < 1)
      throw UsageError(fmt::format("{}: the repetitions must be a whole number from 1 to 999999", a));
  }
}

std::optional<std::string> flag_value(const std::vector<std::string>& args, const std::string& flag) {
  std::optional<std::string> value;
  for (const std::string& a : args)
    if (a.rfind(flag + "=", 0) == 0) value = a.substr(flag.size() + 1);
  return value;
}

namespace {

// Google Benchmark prints its usage and exits 0 for an unknown format: checked here, with a message.
void check_formats(const std::vector<std::string>& args) {
  for (const char* flag : {"--benchmark_format", "--benchmark_out_format"}) {
    const auto value = flag_value(args, flag);
    if (value && *value != "console" && *value != "json" && *value != "csv")
      throw UsageError(fmt::format("{}='{}': Google Benchmark writes console, json or csv", flag, *value));
  }
}

// --benchmark_filter as Google Benchmark reads it: a leading '-' excludes what the rest matches,
// and the rest is a POSIX extended regular expression ("all" stands for every case).
struct BenchmarkFilter {
  std::regex pattern;
  bool negative = false;
};

std::optional<BenchmarkFilter> benchmark_filter(const std::vector<std::string>& args) {
  auto spec = flag_value(args, "--benchmark_filter");
  if (!spec || spec->empty() || *spec == "all") return std::nullopt;
  BenchmarkFilter filter;
  if ((*spec)[0] == '-') {
    filter.negative = true;
    spec->erase(0, 1);
  }
  filter.pattern = user_regex("--benchmark_filter", *spec, std::regex::extended);
  return filter;
}

}  // namespace

std::string benchmark_name(const CaseSpec& spec) { return spec.id() + "/iterations:1/manual_time"; }

std::size_t measurements_to_run(const std::vector<CaseSpec>& specs, const std::vector<std::string>& args) {
  const auto filter = benchmark_filter(args);
  std::size_t cases = 0;
  for (const CaseSpec& spec : specs)
    cases += !spec.skip_reason &&
             (!filter || std::regex_search(benchmark_name(spec), filter->pattern) != filter->negative);
  long long repetitions = 1;
  if (const auto value = flag_value(args, "--benchmark_repetitions")) {
    try {
      repetitions = std::max(1LL, std::stoll(*value));
    } catch (const std::exception&) {
      repetitions = 1;  // configure_google_benchmark refuses it before anything runs
    }
  }
  return cases * static_cast<std::size_t>(repetitions);
}

void check_benchmark_filter(const std::vector<CaseSpec>& specs, const std::vector<std::string>& args) {
  const auto filter = benchmark_filter(args);
  if (!filter) return;
  bool measurable = false, matched = false;
  for (const CaseSpec& spec : specs) {
    if (spec.skip_reason) continue;
    measurable = true;
    matched |= std::regex_search(benchmark_name(spec), filter->pattern) != filter->negative;
  }
  if (measurable && !matched)
    throw UsageError(fmt::format("no case matches {} (Google Benchmark matches names like {}): see `mpbench list`",
                                 *std::find_if(args.rbegin(), args.rend(),
                                               [](const std::string& a) { return a.rfind("--benchmark_filter=", 0) == 0; }),
                                 benchmark_name(*std::find_if(specs.begin(), specs.end(),
                                                              [](const CaseSpec& s) { return !s.skip_reason; }))));
}

std::optional<std::string> benchmark_out_problem(const std::vector<std::string>& args) {
  const auto out = flag_value(args, "--benchmark_out");
  if (!out || out->empty()) return std::nullopt;
  const std::string format = flag_value(args, "--benchmark_out_format").value_or("json");
  try {
    const std::string text = read_regular_file(*out, kMaxBenchmarkOutBytes, "--benchmark_out file");
    if (text.empty()) return fmt::format("Google Benchmark's --benchmark_out '{}' is empty (a full disk?)", *out);
    if (format == "json") parse_json_file_text(text, *out);
  } catch (const UsageError& e) {
    return fmt::format("Google Benchmark's --benchmark_out is incomplete or missing (a full disk?): {}", e.what());
  }
  return std::nullopt;
}

void configure_google_benchmark(const std::vector<std::string>& args) {
  check_repetitions(args);
  check_formats(args);
  benchmark_filter(args);
  std::vector<std::string> owned{"mpbench"};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  if (argc > 1) throw UsageError(fmt::format("unknown Google Benchmark option '{}': it takes --benchmark_filter, --benchmark_repetitions, --benchmark_out, --benchmark_out_format, --benchmark_format and the other flags of its --help", argv[1]));
}

namespace {

bool chooses_own_display(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a.rfind("--benchmark_format", 0) == 0 || a.rfind("--benchmark_list_tests", 0) == 0) return true;
  return false;
}

CaseResult failed_case(const CaseSpec& spec, const Backend& backend, const std::string& message) {
  CaseResult r = spec.skipped(backend.device().backend);
  r.status = CaseStatus::error;
  r.message = message;
  return r;
}

bool finished_ok(const std::map<std::string, CaseResult>& done, const std::string& id) {
  const auto it = done.find(id);
  return it != done.end() && it->second.status == CaseStatus::ok;
}

// Repetitions (--benchmark_repetitions) pool their samples into one case.
void merge_into(std::map<std::string, CaseResult>& done, CaseResult r) {
  auto it = done.find(r.id());
  if (it == done.end() || it->second.status != CaseStatus::ok || r.status != CaseStatus::ok || !r.seconds) {
    done[r.id()] = std::move(r);
    return;
  }
  std::vector<double> pooled = it->second.seconds->values;
  pooled.insert(pooled.end(), r.seconds->values.begin(), r.seconds->values.end());
  const Statistics before = *it->second.seconds;
  it->second.seconds = Statistics::of(std::move(pooled));
  // Rates were computed from the median; rescale them to the pooled median.
  for (auto& [key, value] : it->second.rates.items())
    if (value.is_number() && key != "pct_of_copy") value = value.get<double>() * before.median / it->second.seconds->median;
  if (auto profile = it->second.details.find("profile"); profile != it->second.details.end())
    rebase_case_profile(*profile, it->second.seconds->median);
  it->second.details["repetitions"] = it->second.details.value("repetitions", 1) + 1;
}

}  // namespace

RunOutcome run_cases(Backend& backend, const std::vector<CaseSpec>& specs, const SamplerConfig& config,
                     const std::vector<std::string>& benchmark_args, const ProgressFn& progress,
                     CaseProfiler* profiler) {
  configure_google_benchmark(benchmark_args);
  benchmark::ClearRegisteredBenchmarks();
  std::map<std::string, CaseResult> done;
  RunOutcome outcome;
  std::size_t finished = 0, measurable = 0;
  for (const auto& spec : specs) measurable += spec.skip_reason ? 0 : 1;
  const std::size_t measurements = measurements_to_run(specs, benchmark_args);

  for (const auto& spec : specs) {
    if (spec.skip_reason) continue;
    benchmark::RegisterBenchmark(spec.id().c_str(), [&, spec](benchmark::State& state) {
      for (auto _ : state) {
        if (outcome.interrupted || interrupt_requested()) {
          outcome.interrupted = true;
          state.SkipWithError("interrupted");
          break;
        }
        CaseResult r;
        try {
          // A repetition pools into a case already profiled: its kernels are the same.
          r = spec.measure(backend, config, finished_ok(done, spec.id()) ? nullptr : profiler);
          state.SetIterationTime(r.seconds->median);
          for (const auto& [key, value] : r.rates.items())
            if (value.is_number()) state.counters[key] = value.get<double>();
        } catch (const Interrupted&) {
          outcome.interrupted = true;
          state.SkipWithError("interrupted");
          break;
        } catch (const OutOfMemoryError& e) {
          r = failed_case(spec, backend, fmt::format("does not fit in device memory: {}", e.what()));
          state.SkipWithError(r.message.c_str());
        } catch (const std::exception& e) {
          r = failed_case(spec, backend, e.what());
          state.SkipWithError(r.message.c_str());
        }
        if (progress) progress(++finished, measurements, r);
        merge_into(done, std::move(r));
      }
    })->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }

  SilentReporter silent;
  // Every case skipped (e.g. a build without MPI and the collective suite): nothing registered, and
  // Google Benchmark would say it matched nothing.
  const std::size_t ran = measurable == 0                      ? 0
                          : chooses_own_display(benchmark_args) ? benchmark::RunSpecifiedBenchmarks()
                                                                : benchmark::RunSpecifiedBenchmarks(&silent);
  benchmark::ClearRegisteredBenchmarks();
  // Nothing run of cases that were to run, not interrupted and not asked to list them only: Google
  // Benchmark refused (it says why above, e.g. a --benchmark_out it could not open).
  const bool listing = std::any_of(benchmark_args.begin(), benchmark_args.end(),
                                   [](const std::string& a) { return a.rfind("--benchmark_list_tests", 0) == 0; });
  if (ran == 0 && measurable > 0 && !outcome.interrupted && !listing)
    throw UsageError(fmt::format("Google Benchmark ran none of the {} cases: see its message above", measurable));

  for (const auto& spec : specs) {
    if (spec.skip_reason) outcome.cases.push_back(spec.skipped(backend.device().backend));
    else if (auto it = done.find(spec.id()); it != done.end()) outcome.cases.push_back(it->second);
  }
  return outcome;
}

}  // namespace mpbench::microbench
