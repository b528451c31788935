#include "cli/suite_selection.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.hpp"
#include "workloads/transformer_suite.hpp"

namespace mpbench::cli {

std::vector<std::string> suite_names() {
  std::vector<std::string> names;
  for (const microbench::Suite& s : microbench::suites()) names.push_back(s.name);
  names.emplace_back(workloads::kTransformerSuite);
  return names;
}

SuiteSelection select_suites(const std::vector<std::string>& names) {
  if (names.empty()) throw UsageError(fmt::format("no suite named: use one of {}, all", fmt::join(suite_names(), ", ")));
  SuiteSelection selection;
  const auto add = [&selection](const microbench::Suite& suite) {
    auto& chosen = selection.microbenchmarks;
    if (std::find(chosen.begin(), chosen.end(), &suite) == chosen.end()) chosen.push_back(&suite);
  };
  for (const std::string& name : names) {
    if (name == "all") {
      for (const microbench::Suite& s : microbench::suites())
        if (s.part_of_all) add(s);
      selection.transformer = true;
    } else if (name == workloads::kTransformerSuite) {
      selection.transformer = true;
    } else {
      const microbench::Suite* found = microbench::find_suite(name);
      if (!found) throw UsageError(fmt::format("unknown suite '{}': use one of {}, all", name, fmt::join(suite_names(), ", ")));
      add(*found);
    }
  }
  return selection;
}

}  // namespace mpbench::cli
