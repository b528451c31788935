#include "compare/algorithms.hpp"

#include <algorithm>
#include <string_view>

#include "compare/figures.hpp"

namespace mpbench::compare {

namespace {

// The environment labels (compare/environment.cpp) of what chooses kernels: the drivers, the
// runtime and the libraries.
bool is_library(const std::string& field) {
  static constexpr std::string_view kLibraries[] = {"NVIDIA driver", "CUDA driver", "CUDA runtime", "cuBLAS",
                                                    "cuBLASLt",      "cuDNN",       "oneDNN"};
  return std::find(std::begin(kLibraries), std::end(kLibraries), field) != std::end(kLibraries);
}

}  // namespace

std::vector<EnvironmentField> library_changes(const std::vector<EnvironmentField>& environment) {
  std::vector<EnvironmentField> out;
  for (const auto& f : environment)
    if (f.changed() && is_library(f.field)) out.push_back(f);
  return out;
}

bool CaseAlgorithms::changed() const {
  return std::any_of(gemms.begin(), gemms.end(), [](const GemmChoiceChange& g) { return g.changed(); });
}

std::vector<CaseAlgorithms> compare_algorithms(const Side& base, const Side& current) {
  std::vector<CaseAlgorithms> out;
  const CaseIndex base_cases(base), current_cases(current);
  for (const CaseResult* b : base_cases.ok()) {
    const CaseResult* found = current_cases.find_ok(view_of(*b));
    if (!found) continue;
    auto gemms = gemm_choice_changes(*b, *found);
    if (!gemms.empty()) out.push_back({key_of(*b), std::move(gemms)});
  }
  return out;
}

}  // namespace mpbench::compare
