#include "compare/algorithms.hpp"

#include <algorithm>
#include <map>
#include <string_view>

namespace mpbench::compare {

namespace {

// The environment labels (compare/environment.cpp) of what chooses kernels: the drivers, the
// runtime and the libraries.
bool is_library(const std::string& field) {
  static constexpr std::string_view kLibraries[] = {"NVIDIA driver", "CUDA driver", "CUDA runtime", "cuBLAS",
                                                    "cuBLASLt",      "cuDNN",       "oneDNN"};
  return std::find(std::begin(kLibraries), std::end(kLibraries), field) != std::end(kLibraries);
}

// The first ok case of each identity over the side's runs.
std::map<CaseKey, const CaseResult*> first_ok(const Side& side) {
  std::map<CaseKey, const CaseResult*> out;
  for (const auto& run : side.runs)
    for (const auto& c : run.document.cases)
      if (c.status == CaseStatus::ok) out.emplace(key_of(c), &c);
  return out;
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
  const auto current_cases = first_ok(current);
  for (const auto& [key, b] : first_ok(base)) {
    const auto found = current_cases.find(key);
    if (found == current_cases.end()) continue;
    auto gemms = gemm_choice_changes(*b, *found->second);
    if (!gemms.empty()) out.push_back({key, std::move(gemms)});
  }
  return out;
}

}  // namespace mpbench::compare
