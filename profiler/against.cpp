#include "profiler/against.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <optional>

#include "compare/algorithms.hpp"
#include "compare/environment.hpp"
#include "core/gemm_choice.hpp"

namespace mpbench::profiler {

namespace {

using nlohmann::json;

// The changed library versions (and the GPU, where that changed too) from compare's environment.
std::vector<compare::EnvironmentField> changed_versions(const ResultDocument& old, const ResultDocument& current) {
  const auto fields = compare::environment_fields(compare::make_side("old", {{"old", old}}),
                                                  compare::make_side("new", {{"new", current}}));
  auto out = compare::library_changes(fields);
  for (const auto& f : fields)
    if (f.field == "GPU" && f.changed()) out.insert(out.begin(), f);
  return out;
}

std::string versions_text(const std::vector<compare::EnvironmentField>& versions) {
  std::vector<std::string> parts;
  for (const auto& f : versions) parts.push_back(fmt::format("{} {} -> {}", f.field, f.base, f.current));
  return fmt::format("{}", fmt::join(parts, ", "));
}

json versions_json(const std::vector<compare::EnvironmentField>& versions) {
  json out = json::object();
  for (const auto& f : versions) out[f.field] = {{"old", f.base}, {"new", f.current}};
  return out;
}


std::map<std::string, const CaseResult*> ok_cases(const ResultDocument& doc) {
  std::map<std::string, const CaseResult*> out;
  for (const auto& c : doc.cases)
    if (c.status == CaseStatus::ok) out.emplace(c.full_id(), &c);
  return out;
}

const CaseResult* case_at(const std::map<std::string, const CaseResult*>& cases, const std::string& id) {
  const auto found = cases.find(id);
  return found == cases.end() ? nullptr : found->second;
}

// A GEMM whose algorithm changed, in the case (`precision`) or in its baseline.
struct ChangedGemm {
  std::string precision;
  GemmChoiceChange change;
};

std::vector<ChangedGemm> changed_gemms(const CaseResult* old_case, const CaseResult* new_case) {
  std::vector<ChangedGemm> out;
  if (!old_case || !new_case) return out;
  for (auto& g : gemm_choice_changes(*old_case, *new_case))
    if (g.changed()) out.push_back({new_case->precision, std::move(g)});
  return out;
}

std::string side_text(const std::optional<GemmChoice>& choice) { return choice ? choice->summary() : "none"; }

std::string gemm_text(const ChangedGemm& g) {
  return fmt::format("{} {}: {} -> {}", g.precision, g.change.gemm, side_text(g.change.base), side_text(g.change.current));
}

// "2 moved onto Tensor Cores, 1 off them", or empty where none moved.
std::string tensor_core_moves(const std::vector<ChangedGemm>& gemms) {
  std::size_t onto = 0, off = 0;
  for (const auto& g : gemms)
    if (g.change.tensor_cores_changed()) (*g.change.current->tensor_cores ? onto : off) += 1;
  std::vector<std::string> parts;
  if (onto > 0) parts.push_back(fmt::format("{} moved onto Tensor Cores", onto));
  if (off > 0) parts.push_back(fmt::format("{} moved off Tensor Cores", off));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The most GEMMs named in a message; the evidence lists them all.
constexpr std::size_t kGemmsNamed = 4;

std::string gemms_named(const std::vector<ChangedGemm>& gemms) {
  std::vector<std::string> named;
  for (std::size_t i = 0; i < gemms.size() && i < kGemmsNamed; ++i) named.push_back(gemm_text(gemms[i]));
  std::string out = fmt::format("{}", fmt::join(named, "; "));
  if (gemms.size() > kGemmsNamed) out += fmt::format("; and {} more", gemms.size() - kGemmsNamed);
  return out;
}

json gemms_json(const std::vector<ChangedGemm>& gemms) {
  json out = json::array();
  for (const auto& g : gemms)
    out.push_back({{"precision", g.precision},
                   {"gemm", g.change.gemm},
                   {"old", g.change.base ? json(g.change.base->identity) : json()},
                   {"new", g.change.current ? json(g.change.current->identity) : json()},
                   {"tensor_cores_changed", g.change.tensor_cores_changed()}});
  return out;
}

Finding algorithm_finding(const CaseExplanation& now, double old_speedup, const std::vector<ChangedGemm>& gemms,
                          const std::vector<compare::EnvironmentField>& versions, const std::string& baseline) {
  const double change = *now.speedup / old_speedup - 1;
  const std::string moves = tensor_core_moves(gemms);
  const std::string with = versions.empty() ? "under the same driver and library versions"
                                            : fmt::format("with {}", versions_text(versions));
  return {"algorithm_changed", *now.speedup < old_speedup ? "warning" : "info",
          fmt::format("{:.2f}x over {} here against {:.2f}x in the other document ({:+.0f}%): {} GEMM algorithm{} "
                      "changed {}{}: {}; the records name these changed algorithms as the cause",
                      *now.speedup, baseline, old_speedup, 100 * change, gemms.size(), gemms.size() == 1 ? "" : "s",
                      with, moves.empty() ? "" : " (" + moves + ")", gemms_named(gemms)),
          {{"speedup", *now.speedup},
           {"speedup_other", old_speedup},
           {"change", change},
           {"library_versions", versions_json(versions)},
           {"changed_gemms", gemms_json(gemms)}}};
}

}  // namespace

std::vector<Finding> against_findings(const ResultDocument& current, const Explanation& current_explanation,
                                      const ResultDocument& old, const std::string& baseline) {
  const auto versions = changed_versions(old, current);
  std::vector<Finding> out;
  if (!versions.empty())
    out.push_back({"library_versions", "info", fmt::format("library versions, the other document -> this one: {}", versions_text(versions)),
                   versions_json(versions)});
  const Explanation old_explanation = explain(old, baseline);
  std::map<std::string, double> old_speedups;
  for (const auto& c : old_explanation.cases)
    if (c.speedup) old_speedups.emplace(c.id, *c.speedup);
  const auto old_cases = ok_cases(old), new_cases = ok_cases(current);
  for (const auto& now : current_explanation.cases) {
    const auto found = old_speedups.find(now.id);
    if (!now.speedup || found == old_speedups.end() || found->second <= 0) continue;
    if (std::abs(*now.speedup / found->second - 1) < kAgainstSpeedupChange) continue;
    const CaseResult* new_case = case_at(new_cases, now.id);
    if (!new_case) continue;
    auto gemms = changed_gemms(case_at(old_cases, now.id), new_case);
    const std::string base_id = fmt::format("{}/{}/{}/{}", new_case->suite, new_case->name, new_case->backend, baseline);
    for (auto& g : changed_gemms(case_at(old_cases, base_id), case_at(new_cases, base_id))) gemms.push_back(std::move(g));
    if (!gemms.empty()) out.push_back(algorithm_finding(now, found->second, gemms, versions, baseline));
  }
  return out;
}

}  // namespace mpbench::profiler
