#pragma once
// `mpbench run`: validates every option before any work, runs the chosen suites on one backend,
// writes one result document atomically and prints the summary table.
#include <optional>
#include <string>
#include <vector>

#include "workloads/transformer_suite.hpp"

namespace mpbench::cli {

struct RunOptions {
  std::vector<std::string> suites{"all"};
  std::string device = "auto";
  std::vector<std::string> precisions;  // empty: all the suite has
  std::string filter;                   // regular expression on suite/case/precision
  bool quick = false;
  std::string out = "mpbench-result.json";
  std::vector<std::string> shapes;      // extra GEMM shapes MxNxK[xBATCH]
  std::string cpu_isa;
  std::string cpu_gemm = "auto";  // auto, native or converted (cpu::GemmPathChoice)
  std::optional<double> max_noise, min_time, timeout;
  std::vector<std::string> benchmark_args;  // --benchmark_* passed to Google Benchmark
  std::string grad_reduce = "fp32";  // what data-parallel training's gradients travel in
  double grad_buckets = 25;          // MiB per gradient bucket (workloads::TrainOptions::grad_bucket_mib); 0: one sum
  // The transformer suite's own options; its modes come from `precisions`.
  workloads::TransformerSuiteOptions transformer;
};

// Returns the exit code: 0 all cases ok or skipped, 1 some case failed or the document went elsewhere,
// 128 + the signal when interrupted.
// Throws UsageError for bad input, before anything runs or is written.
int run_benchmarks(const RunOptions& options);

}  // namespace mpbench::cli
