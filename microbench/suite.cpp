#include "microbench/suite.hpp"

#include <algorithm>
#include <map>


namespace mpbench::microbench {

CaseResult CaseSpec::result_on(const std::string& backend) const {
  CaseResult r;
  r.suite = suite;
  r.name = name;
  r.backend = backend;
  r.precision = precision;
  r.params = params;
  return r;
}

CaseResult CaseSpec::skipped(const std::string& backend) const {
  CaseResult r = result_on(backend);
  r.status = CaseStatus::skipped;
  r.message = skip_reason.value_or("skipped");
  return r;
}

bool SuiteOptions::wants(const std::string& precision) const {
  return precisions.empty() || std::find(precisions.begin(), precisions.end(), precision) != precisions.end();
}

const std::vector<Suite>& suites() {
  static const std::vector<Suite> kSuites = {gemm_suite(), bandwidth_suite(), cast_suite(),
                                            collective_suite()};
  return kSuites;
}

const Suite* find_suite(const std::string& name) {
  for (const auto& s : suites())
    if (s.name == name) return &s;
  return nullptr;
}

CaseResult measure_case(const CaseSpec& spec, Backend& backend, const std::function<void()>& op,
                        const SamplerConfig& config, CaseProfiler* profiler) {
  const Measurement m = measure(backend, op, config);
  CaseResult r = spec.result_on(backend.device().backend);
  r.seconds = m.seconds_per_op;
  r.details["measurement"] = m.to_json();
  if (profiler) r.details["profile"] = profiler->profile(backend, op, m.seconds_per_op.median);
  return r;
}

void add_percent_of_copy(std::vector<CaseResult>& cases, const std::string& suite, const std::string& copy_kernel) {
  std::map<std::int64_t, const CaseResult*> fastest_copy;  // by element count
  for (const auto& c : cases) {
    if (c.suite != suite || c.status != CaseStatus::ok || c.params.value("kernel", "") != copy_kernel ||
        !c.rates.contains("gbps"))
      continue;
    const CaseResult*& best = fastest_copy[c.params.value("elements", std::int64_t{0})];
    if (!best || c.rates["gbps"].get<double>() > best->rates["gbps"].get<double>()) best = &c;
  }
  for (auto& c : cases) {
    if (c.suite != suite || c.status != CaseStatus::ok || !c.rates.contains("gbps")) continue;
    const auto it = fastest_copy.find(c.params.value("elements", std::int64_t{0}));
    if (it == fastest_copy.end() || it->second->rates["gbps"].get<double>() <= 0) continue;
    c.rates["pct_of_copy"] = 100.0 * c.rates["gbps"].get<double>() / it->second->rates["gbps"].get<double>();
    // compare tracks the share, and needs to know which copy it is of (and which case is the copy).
    c.details["copy_reference"] = {{"name", it->second->name}, {"precision", it->second->precision}};
  }
}

}  // namespace mpbench::microbench
