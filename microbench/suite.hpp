#pragma once
// A suite is a named list of cases built for one backend. Cases are plain data plus a function
// that measures them; the runner (runner.hpp) hands them to Google Benchmark.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/communicator.hpp"
#include "core/measure.hpp"
#include "core/result.hpp"

namespace mpbench::microbench {

// Runs a measured case's operation again, after its measurement and never during it, so that the
// timing is untouched (--profile; see case_profile.hpp). The case's buffers are still alive.
class CaseProfiler {
 public:
  virtual ~CaseProfiler() = default;
  // details.profile of a case whose `op` measured `measured_s` per run (the median).
  virtual nlohmann::json profile(Backend& backend, const std::function<void()>& op, double measured_s) = 0;
};

struct CaseSpec {
  std::string suite, name, precision;
  nlohmann::json params = nlohmann::json::object();
  std::optional<std::string> skip_reason;  // the backend cannot run it
  // `profiler`: nullptr, or the one that gets the case's op after the measurement.
  std::function<CaseResult(Backend&, const SamplerConfig&, CaseProfiler* profiler)> measure;

  std::string id() const { return suite + "/" + name + "/" + precision; }
  // The case's identity and parameters on `backend`, nothing measured yet.
  CaseResult result_on(const std::string& backend) const;
  CaseResult skipped(const std::string& backend) const;
};

struct SuiteOptions {
  bool quick = false;
  std::vector<std::string> precisions;    // empty: every precision of the suite
  std::vector<GemmShape> extra_gemm_shapes;  // --shape
  // The collective suite's: the run's communicator and process group (both or neither), and why
  // there is no communicator where there is none.
  Communicator* communicator = nullptr;
  ProcessGroup* group = nullptr;
  std::string no_communicator_reason{};
  bool wants(const std::string& precision) const;
};

struct Suite {
  std::string name;
  std::string description;
  std::vector<std::string> precisions;
  std::function<std::vector<CaseSpec>(Backend&, const SuiteOptions&)> cases;
  // Derived rates that need other cases of the same run (percent of the copy ceiling).
  std::function<void(std::vector<CaseResult>&)> finalize = [](std::vector<CaseResult>&) {};
  // Whether `--suite all` runs it: not the collective suite, which starts MPI and means something
  // only under a launcher.
  bool part_of_all = true;
};

const std::vector<Suite>& suites();
// The microbenchmark suite called `name`, or nullptr (the Transformer workload is a suite too, but
// not one of these: the command line's suite names and their unknown-suite error are
// cli/suite_selection.hpp's, which names every suite).
const Suite* find_suite(const std::string& name);

Suite gemm_suite();
Suite bandwidth_suite();
Suite cast_suite();
Suite collective_suite();

// The bandwidth suite's elements per array: powers of two from 1/8 to 8 times the cache the run can
// fill (DeviceInfo::usable_cache_bytes, as fp32; --quick: 1/8, 1 and 8 times, on a CPU 1/8 and 2
// times), each at most what keeps the largest case's three fp32 arrays within half the device's
// memory (a CPU's last-level cache can be hundreds of MiB).
std::vector<std::int64_t> bandwidth_sweep_elements(const DeviceInfo& device, bool quick);

// Measures `op` with the sampler, then hands it to `profiler` when there is one: the finished case,
// with identity from the spec, time statistics and sampler outcome, and details.profile.
CaseResult measure_case(const CaseSpec& spec, Backend& backend, const std::function<void()>& op,
                        const SamplerConfig& config, CaseProfiler* profiler);
// Sets rates.pct_of_copy of every case of `suite` from the gbps of that suite's fastest
// `copy_kernel` case with the same element count (a run's case list holds every suite it ran), and
// names that copy in details.copy_reference ({"name", "precision"}; the copy names itself).
void add_percent_of_copy(std::vector<CaseResult>& cases, const std::string& suite, const std::string& copy_kernel);

}  // namespace mpbench::microbench
