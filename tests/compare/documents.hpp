#pragma once
// Result documents built in the tests: every number in them is chosen by hand, so each test can
// state the verdict its numbers must give.
#include <cmath>
#include <string>
#include <vector>

#include "compare/sides.hpp"
#include "core/result.hpp"

namespace mpbench::compare::testing {

// n samples symmetric around `median` whose sample standard deviation is `relative_spread * median`.
inline std::vector<double> samples_around(double median, double relative_spread, int n = 9) {
  std::vector<double> offsets;
  for (int i = 0; i < n; ++i) offsets.push_back(-1.0 + 2.0 * i / (n - 1));
  double squares = 0;
  for (double o : offsets) squares += o * o;
  const double scale = relative_spread * median / std::sqrt(squares / (n - 1));
  std::vector<double> values;
  for (double o : offsets) values.push_back(median + o * scale);
  return values;
}

inline CaseResult timed_case(const std::string& name, const std::string& precision, std::vector<double> seconds,
                             const std::string& suite = "gemm") {
  CaseResult c;
  c.suite = suite;
  c.name = name;
  c.backend = "cuda";
  c.precision = precision;
  c.seconds = Statistics::of(std::move(seconds));
  return c;
}

// Only the summary, as a document written without the raw samples would carry.
inline CaseResult without_samples(CaseResult c) {
  c.seconds->values.clear();
  return c;
}

inline CaseResult failed_case(const std::string& name, const std::string& precision, CaseStatus status,
                              const std::string& message) {
  CaseResult c;
  c.suite = "gemm";
  c.name = name;
  c.backend = "cuda";
  c.precision = precision;
  c.status = status;
  c.message = message;
  return c;
}

inline ResultDocument document(std::vector<CaseResult> cases, const std::string& cublas = "12.4.5") {
  ResultDocument d;
  d.created = "2026-12-02T10:00:00Z";
  d.env = {{"gpus", {{{"name", "NVIDIA H100 80GB HBM3"}, {"driver_version", "550.54.15"}}}},
           {"cuda", {{"runtime", "12.4"}, {"cublas", cublas}, {"cublaslt", cublas}}},
           {"cpu", {{"model", "AMD EPYC 9454"}}},
           {"mpbench", {{"version", "0.1.0"}, {"git_revision", "abc"}}}};
  d.run = {{"suites", {"gemm"}}, {"device", "cuda"}};
  d.cases = std::move(cases);
  d.compute_speedups("fp32");
  return d;
}

// fp32 at 1 ms, bf16 at `bf16_seconds`: the bf16 speedup over fp32 is 1e-3 / bf16_seconds.
inline ResultDocument gemm_run(double bf16_seconds, double relative_spread = 0.01, double fp32_seconds = 1e-3) {
  return document({timed_case("square_4096", "fp32", samples_around(fp32_seconds, relative_spread)),
                   timed_case("square_4096", "bf16", samples_around(bf16_seconds, relative_spread))});
}

// One side of runs named side0.json, side1.json, ...
inline Side side_of(const std::string& name, const std::vector<ResultDocument>& documents) {
  std::vector<Run> runs;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    runs.push_back({name + std::to_string(i) + ".json", documents[i]});
    // Repeated runs start at different times, so runs of identical figures are still distinct runs.
    runs.back().document.created += " + " + std::to_string(i) + " min";
  }
  return make_side(name, std::move(runs));
}

}  // namespace mpbench::compare::testing
