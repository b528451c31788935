#include "core/gemm_choice.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>


namespace mpbench {

namespace {

using nlohmann::json;

// What names an algorithm, in the order the summary gives it: cuBLASLt's configuration, its
// compute type and Tensor Core flag, oneDNN's implementation. Sizes of workspace and waves are
// consequences of the choice, not the choice.
constexpr const char* kIdentityKeys[] = {"algo_id",       "tile",          "stages",        "split_k",
                                         "reduction_scheme", "cta_swizzling", "custom_option", "inner_shape_id",
                                         "cluster_shape", "compute_type",  "numerical_impl_flags",
                                         "tensor_cores",  "implementation"};

std::string text_of(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

std::optional<bool> boolean(const json& object, const char* key) {
  if (!object.contains(key) || !object[key].is_boolean()) return std::nullopt;
  return object[key].get<bool>();
}

std::optional<GemmChoice> choice_of(const json& algorithm, std::string gemm, std::string key) {
  if (!algorithm.is_object()) return std::nullopt;
  GemmChoice choice;
  choice.gemm = std::move(gemm);
  choice.key = std::move(key);
  for (const char* k : kIdentityKeys)
    if (algorithm.contains(k)) choice.identity[k] = algorithm[k];
  if (choice.identity.empty()) return std::nullopt;
  choice.tensor_cores = boolean(algorithm, "tensor_cores");
  choice.batched = boolean(algorithm, "batched");
  return choice;
}

}  // namespace

std::string GemmChoice::summary() const {
  std::vector<std::string> parts;
  // A tile or stages id the build's header did not know is already written "tile 42".
  const auto add = [&](const char* key, const std::string& label) {
    if (!identity.contains(key)) return;
    const std::string value = text_of(identity[key]);
    parts.push_back(value.rfind(label, 0) == 0 ? value : label + value);
  };
  add("algo_id", "algo ");
  add("tile", "tile ");
  add("stages", "stages ");
  if (identity.contains("split_k") && identity["split_k"].is_number() && identity["split_k"].get<double>() > 1)
    add("split_k", "split-k ");
  add("compute_type", "");
  add("implementation", "");
  if (tensor_cores) parts.push_back(*tensor_cores ? "Tensor Cores" : "CUDA cores");
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<GemmChoice> gemm_choices(const CaseResult& c) {
  std::vector<GemmChoice> out;
  if (c.details.contains("algorithm"))
    if (auto choice = choice_of(c.details["algorithm"], "GEMM", "GEMM")) out.push_back(std::move(*choice));
  if (!c.details.contains("gemm_algorithms") || !c.details["gemm_algorithms"].is_array()) return out;
  for (const json& a : c.details["gemm_algorithms"]) {
    if (!a.is_object()) continue;
    const std::string problem = a.contains("problem") ? text_of(a["problem"]) : "";
    const std::string gemm = a.contains("gemm") ? text_of(a["gemm"]) : "a GEMM";
    if (auto choice = choice_of(a, problem.empty() ? gemm : fmt::format("{} ({})", gemm, problem),
                                problem.empty() ? gemm : problem))
      out.push_back(std::move(*choice));
  }
  return out;
}

bool GemmChoiceChange::changed() const {
  if (!base || !current) return true;
  return base->identity != current->identity;
}

bool GemmChoiceChange::tensor_cores_changed() const {
  return base && current && base->tensor_cores && current->tensor_cores && *base->tensor_cores != *current->tensor_cores;
}

std::vector<GemmChoiceChange> gemm_choice_changes(const CaseResult& base, const CaseResult& current) {
  std::vector<GemmChoiceChange> out;
  const auto current_choices = gemm_choices(current);
  std::vector<bool> paired(current_choices.size(), false);
  for (auto& b : gemm_choices(base)) {
    GemmChoiceChange change{b.gemm, b, std::nullopt};
    for (std::size_t i = 0; i < current_choices.size(); ++i)
      if (!paired[i] && current_choices[i].key == b.key) {
        change.current = current_choices[i];
        paired[i] = true;
        break;
      }
    out.push_back(std::move(change));
  }
  for (std::size_t i = 0; i < current_choices.size(); ++i)
    if (!paired[i]) out.push_back({current_choices[i].gemm, std::nullopt, current_choices[i]});
  return out;
}

}  // namespace mpbench
