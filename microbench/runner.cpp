#include "microbench/runner.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <map>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "microbench/case_profile.hpp"

namespace mpbench::microbench {

namespace {

// Prints nothing: mpbench prints its own progress lines and table.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

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

void configure_google_benchmark(const std::vector<std::string>& args) {
  check_repetitions(args);
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
        if (progress) progress(++finished, measurable, r);
        merge_into(done, std::move(r));
      }
    })->Iterations(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }

  SilentReporter silent;
  if (chooses_own_display(benchmark_args)) benchmark::RunSpecifiedBenchmarks();
  else benchmark::RunSpecifiedBenchmarks(&silent);
  benchmark::ClearRegisteredBenchmarks();

  for (const auto& spec : specs) {
    if (spec.skip_reason) outcome.cases.push_back(spec.skipped(backend.device().backend));
    else if (auto it = done.find(spec.id()); it != done.end()) outcome.cases.push_back(it->second);
  }
  return outcome;
}

}  // namespace mpbench::microbench
