#include "profiler/mode_verdict.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "core/stats.hpp"
#include "profiler/evidence.hpp"
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
    "fp32_gradient_reduce",  "exposed_communication", "fp8_quantization_share", "input_wait",               "host_syncs",
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
  std::vector<double> speedups;  // those whose interval is decided (or that have none)
  std::vector<const CaseExplanation*> cases;  // the same cases
  std::size_t too_noisy = 0;
  const CaseExplanation* noisy_case = nullptr;  // the first too-noisy one, for its interval and advice
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
      if (!m.noisy_case) m.noisy_case = &c;
      ++m.too_noisy;
      continue;
    }
    m.speedups.push_back(*c.speedup);
    m.cases.push_back(&c);
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

// The reading of a speedup without an interval (no samples kept): its value against the band.
Reading point_reading(double speedup) {
  const double t = no_change_threshold();
  if (speedup > 1 / (1 - t)) return Reading::pays;
  if (speedup < 1 / (1 + t)) return Reading::does_not_pay;
  return Reading::on_par;
}

Reading reading_of(const CaseExplanation& c) { return c.interval ? c.interval->reading : point_reading(*c.speedup); }

// The cases' common reading; where they differ, the median speedup's against the band.
Reading mode_reading(const ModeFacts& m, double median) {
  const Reading first = reading_of(*m.cases.front());
  const bool all_agree = std::all_of(m.cases.begin(), m.cases.end(),
                                     [first](const CaseExplanation* c) { return reading_of(*c) == first; });
  return all_agree ? first : point_reading(median);
}

// "99% interval 1.31x-1.39x" of a mode's one case, or how its cases read.
std::string evidence_text(const ModeFacts& m) {
  if (m.cases.size() == 1)
    return m.cases.front()->interval ? m.cases.front()->interval->interval_text() : "no samples kept to weigh its noise";
  std::map<Reading, std::size_t> counts;
  for (const CaseExplanation* c : m.cases) ++counts[reading_of(*c)];
  std::vector<std::string> parts;
  for (const auto& [reading, n] : counts) parts.push_back(fmt::format("{} {}", n, reading_name(reading)));
  return fmt::format("median of {} cases: {}", m.cases.size(), fmt::join(parts, ", "));
}

Finding too_noisy_verdict(const std::string& mode, const ModeFacts& m, json evidence) {
  const CaseExplanation& c = *m.noisy_case;
  const Finding* noisy = nullptr;
  for (const Finding& f : c.findings)
    if (f.rule == "too_noisy") noisy = &f;
  return {"verdict_mode", "warning",
          fmt::format("{}: too noisy to say whether it pays here ({} case(s) whose interval reaches across an edge of "
                      "the ±{:.0f}% band{}): {}",
                      mode, m.too_noisy, 100 * no_change_threshold(),
                      c.interval ? fmt::format("; {:.2f}x, {}", *c.speedup, c.interval->interval_text()) : "",
                      noisy ? string_or(noisy->evidence, "advice", "rerun it") : "rerun it"),
          std::move(evidence)};
}

}  // namespace

std::vector<Finding> mode_verdicts(const Explanation& e) {
  std::vector<Finding> out;
  for (const auto& [mode, m] : facts_by_mode(e)) {
    json evidence = {{"mode", mode}, {"cases", m.speedups.size()}, {"too_noisy", m.too_noisy}};
    if (m.speedups.empty()) {
      out.push_back(too_noisy_verdict(mode, m, evidence));
      continue;
    }
    const double s = median_of(m.speedups);
    const Reading reading = mode_reading(m, s);
    evidence["median_speedup"] = s;
    evidence["reading"] = reading_name(reading);
    if (m.limit) evidence["limit"] = m.limit->rule;
    else if (!m.limiting_category.empty()) evidence["limiting_category"] = m.limiting_category;
    const std::string verb = reading == Reading::pays ? "pays here" : reading == Reading::on_par ? "is on par here"
                                                                                                 : "does not pay here";
    std::string message = fmt::format("{} {}: {:.2f}x over {} ({}{})", mode, verb, s, e.baseline, evidence_text(m),
                                      m.too_noisy ? fmt::format("; {} more too noisy to read", m.too_noisy) : "");
    out.push_back({"verdict_mode", reading == Reading::pays ? "info" : "warning", message + limit_text(m), evidence});
  }
  return out;
}

}  // namespace mpbench::profiler
