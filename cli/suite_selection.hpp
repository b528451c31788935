#pragma once
// The suites one can run or list: the microbenchmarks (microbench/suite.hpp) and the Transformer
// workload, chosen by the same names in `run --suite` and `list --suite`.
#include <string>
#include <vector>

#include "microbench/suite.hpp"

namespace mpbench::cli {

struct SuiteSelection {
  std::vector<const microbench::Suite*> microbenchmarks;  // in the order named, each once
  bool transformer = false;
};

// Every suite's name: gemm, bandwidth, cast, collective, transformer (`all` runs them in this order,
// but for collective, see Suite::part_of_all).
std::vector<std::string> suite_names();
// The suites `names` (suite names or "all") choose. UsageError naming every suite for an unknown
// name, and for an empty list.
SuiteSelection select_suites(const std::vector<std::string>& names);

}  // namespace mpbench::cli
