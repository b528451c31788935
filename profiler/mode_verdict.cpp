#include "profiler/mode_verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "core/stats.hpp"
#include "profiler/rules.hpp"

namespace mpbench::profiler {

namespace {

using nlohmann::json;

// Root causes before their symptoms: the device and libraries, the baseline, how the GEMMs ran,
// the shapes, what the step waits for, then what the breakdown and the ratio show.
constexpr std::string_view kLimitOrder[] = {
    "no_tensor_cores",       "no_bf16_instructions",  "library_too_old",          "baseline_not_pedantic",
    "pseudo_fp16_sgemm",     "converted_gemm",        "no_bf16_hardware_path",    "no_fp16_hardware_path",
    "misaligned_vocabulary", "gemm_not_on_tensor_cores", "gemm_algorithms_off_tensor_cores",
    "fp32_gradient_reduce",  "exposed_communication", "input_wait",               "host_syncs",
    "host_bound_step",       "small_batch_casts",     "tensor_core_share_small",  "cast_overhead",
    "launch_gaps",           "memory_bound_share",    "optimizer_share",          "conversion_bound",
    "below_datasheet_ratio", "cast_slower_than_copy",
};

std::size_t rank_of(std::string_view rule) {
  const auto* at = std::find(std::begin(kLimitOrder), std::end(kLimitOrder), rule);
  return static_cast<std::size_t>(at - std::begin(kLimitOrder));
}

// Whether a whole-document finding bears on this mode: no Tensor Cores on every low-precision
// mode, no bf16 instructions on the bf16 ones, the rest on all.
bool bears_on(const Finding& f, const std::string& mode) {
  if (f.rule == "no_bf16_instructions") return mode.find("bf16") != std::string::npos;
  return true;
}

struct ModeFacts {
  std::vector<double> speedups;  // those that passed the noise gate
  std::size_t too_noisy = 0;
  const Finding* limit = nullptr;  // the highest-ranked warning
  std::string limiting_category;   // of the first decomposition, where no rule names a limit
  double limiting_share = 0;
};

void consider(ModeFacts& m, const Finding& f) {
  if (f.severity != "warning" || rank_of(f.rule) == std::size(kLimitOrder)) return;
  if (!m.limit || rank_of(f.rule) < rank_of(m.limit->rule)) m.limit = &f;
}

std::map<std::string, ModeFacts> facts_by_mode(const Explanation& e) {
  std::map<std::string, ModeFacts> modes;
  const Finding* pedantic = nullptr;
  for (const CaseExplanation& c : e.cases)
    for (const Finding& f : c.findings)
      if (f.rule == "baseline_not_pedantic") pedantic = &f;
  for (const CaseExplanation& c : e.cases) {
    if (c.precision == e.baseline || !c.speedup) continue;
    ModeFacts& m = modes[c.precision];
    const bool noisy = std::any_of(c.findings.begin(), c.findings.end(), [](const Finding& f) { return f.rule == "too_noisy"; });
    if (noisy) {
      ++m.too_noisy;
      continue;
    }
    m.speedups.push_back(*c.speedup);
    for (const Finding& f : c.findings) consider(m, f);
    if (c.decomposition && m.limiting_category.empty() && !c.decomposition->limiting_category.empty()) {
      m.limiting_category = c.decomposition->limiting_category;
      for (const auto& cat : c.decomposition->categories)
        if (cat.category == m.limiting_category) m.limiting_share = cat.share_of_mode;
    }
  }
  for (auto& [mode, m] : modes) {
    if (m.speedups.empty()) continue;
    for (const Finding& f : e.findings)
      if (bears_on(f, mode)) consider(m, f);
    if (pedantic) consider(m, *pedantic);
  }
  return modes;
}

// "what limits it" and "what would change that", from the limiting rule or category.
std::string limit_text(const ModeFacts& m) {
  if (m.limit) {
    const Rule& r = explain_rule(m.limit->rule);
    const std::string fix = r.fix == "-" ? "" : fmt::format("; what would change that: {}", r.fix);
    return fmt::format("; limited by {} ({}){}", m.limit->rule, m.limit->message, fix);
  }
  if (!m.limiting_category.empty())
    return fmt::format("; limited by {} ({:.1f}% of its time), which would have to get faster", m.limiting_category,
                       100 * m.limiting_share);
  return "; no rule names what limits it";
}

}  // namespace

std::vector<Finding> mode_verdicts(const Explanation& e) {
  std::vector<Finding> out;
  const double pays = explain_rule("verdict_mode").threshold;
  for (const auto& [mode, m] : facts_by_mode(e)) {
    json evidence = {{"mode", mode}, {"cases", m.speedups.size()}, {"too_noisy", m.too_noisy}};
    if (m.speedups.empty()) {
      out.push_back({"verdict_mode", "warning",
                     fmt::format("{}: too noisy to say whether it pays here ({} ratio(s) beyond the noise target): "
                                 "rerun on a quieter machine or with a longer --timeout",
                                 mode, m.too_noisy),
                     evidence});
      continue;
    }
    const double s = median_of(m.speedups);
    evidence["median_speedup"] = s;
    if (m.limit) evidence["limit"] = m.limit->rule;
    else if (!m.limiting_category.empty()) evidence["limiting_category"] = m.limiting_category;
    const std::string verb = s >= pays ? "pays here" : s >= 1 ? "barely pays here" : "does not pay here";
    std::string message = fmt::format("{} {}: {:.2f}x over {} (median of {} case(s){})", mode, verb, s, e.baseline,
                                      m.speedups.size(),
                                      m.too_noisy ? fmt::format(", {} more too noisy to read", m.too_noisy) : "");
    out.push_back({"verdict_mode", s >= pays ? "info" : "warning", message + limit_text(m), evidence});
  }
  return out;
}

}  // namespace mpbench::profiler
