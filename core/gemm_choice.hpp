#pragma once
// The GEMM algorithms a case recorded, one per GEMM: a gemm case's details.algorithm (cuBLASLt's
// algorithm id, tile, stages and Tensor Core flag, or oneDNN's implementation) and a transformer
// case's details.gemm_algorithms (one per distinct problem). Two runs of a case on other library
// versions are told apart by these: the same shapes, another kernel.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace mpbench {

struct GemmChoice {
  std::string gemm;    // "GEMM" for a gemm case; "<gemm> (<problem>)" for a transformer's
  std::string key;     // what pairs it across runs: the problem, never its position
  nlohmann::json identity = nlohmann::json::object();  // the recorded fields that name the algorithm
  std::optional<bool> tensor_cores;
  std::optional<bool> batched;
  std::string summary() const;  // "algo 21, tile 128x256, stages 64x3, CUBLAS_COMPUTE_32F, Tensor Cores"
};

// The case's choices; empty where it recorded none (a case without GEMMs, the reference loops).
std::vector<GemmChoice> gemm_choices(const CaseResult& c);

// One GEMM of a case in two runs; either side is empty where that run did not have the GEMM.
struct GemmChoiceChange {
  std::string gemm;
  std::optional<GemmChoice> base, current;
  bool changed() const;
  // On Tensor Cores in one run and off in the other.
  bool tensor_cores_changed() const;
};

// Every GEMM of either case, paired by key, in the base's order then the new ones.
std::vector<GemmChoiceChange> gemm_choice_changes(const CaseResult& base, const CaseResult& current);

}  // namespace mpbench
