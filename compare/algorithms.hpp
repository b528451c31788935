#pragma once
// Library versions and the GEMM algorithms they chose, side by side: the versions of the drivers
// and libraries that pick kernels (from the environment fields), and for each case both sides
// recorded algorithms for, each GEMM's algorithm in both (core/gemm_choice.hpp). An upgrade of
// cuBLAS, or another cuBLAS loaded through LD_LIBRARY_PATH, shows here as the same shapes on other
// kernels.
#include <string>
#include <vector>

#include "compare/environment.hpp"
#include "compare/sides.hpp"
#include "core/gemm_choice.hpp"

namespace mpbench::compare {

// The environment fields that are library or driver versions ("cuBLAS", "CUDA runtime", ...) and
// changed, in the environment's order.
std::vector<EnvironmentField> library_changes(const std::vector<EnvironmentField>& environment);

struct CaseAlgorithms {
  CaseKey key;
  std::vector<GemmChoiceChange> gemms;
  bool changed() const;
};

// Each case ok on both sides with an algorithm recorded on either, as the first run of each side
// that has it recorded it (the runs of a side share their libraries), in case order.
std::vector<CaseAlgorithms> compare_algorithms(const Side& base, const Side& current);

}  // namespace mpbench::compare
