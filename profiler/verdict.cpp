#include "profiler/verdict.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "profiler/breakdown.hpp"
#include "profiler/classify.hpp"
#include "profiler/evidence.hpp"
#include "profiler/noise_gate.hpp"

namespace mpbench::profiler {

namespace {

using nlohmann::json;

struct PathSeen {
  std::string path, reason;
};

// How each GEMM precision of the document ran, as its cases recorded it (the first case of each).
std::map<std::string, PathSeen> gemm_paths(const ResultDocument& doc) {
  std::map<std::string, PathSeen> paths;
  for (const CaseResult& c : doc.cases) {
    const json& g = member_or_null(c.details, "gemm_path");
    const std::string precision = string_or(g, "precision", ""), path = string_or(g, "path", "");
    if (!precision.empty() && !path.empty()) paths.try_emplace(precision, PathSeen{path, string_or(g, "reason", "")});
  }
  return paths;
}

std::vector<std::string> with_path(const std::map<std::string, PathSeen>& paths, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& [precision, seen] : paths)
    if (seen.path == path && precision != "fp32") out.push_back(precision);
  return out;
}

std::string device_name(const ResultDocument& doc) {
  return string_or(member_or_null(doc.env, "device"), "name", "this device");
}

bool on_gpu(const ResultDocument& doc) { return string_or(doc.run, "device", "") == "cuda"; }

// The CPU flags that decide its low-precision paths, those it has.
std::vector<std::string> present_cpu_flags(const ResultDocument& doc) {
  std::vector<std::string> present;
  const json& flags = member_or_null(member_or_null(doc.env, "cpu"), "flags");
  if (!flags.is_object()) return present;
  for (const auto& [flag, has] : flags.items())
    if (has.is_boolean() && has.get<bool>()) present.push_back(flag);
  return present;
}

Finding headline(const ResultDocument& doc, const std::map<std::string, PathSeen>& paths) {
  const auto native = with_path(paths, "native"), converted = with_path(paths, "converted");
  const auto unsupported = with_path(paths, "unsupported");
  const std::string device = device_name(doc);
  json evidence = {{"device", device}, {"native", native}, {"converted", converted}, {"unsupported", unsupported}};
  std::string not_run = unsupported.empty() ? "" : fmt::format(" Not run here: {}.", fmt::join(unsupported, ", "));
  if (on_gpu(doc)) {
    const std::string message =
        native.empty() ? fmt::format("{} runs none of the document's low-precision GEMMs on Tensor Cores.{}", device,
                                     not_run)
                       : fmt::format("{} runs its {} GEMMs on Tensor Cores: mixed precision can make them faster.{}",
                                     device, fmt::join(native, ", "), not_run);
    return {"verdict", native.empty() ? "warning" : "info", message, evidence};
  }
  evidence["cpu_flags"] = present_cpu_flags(doc);
  if (native.empty() && !converted.empty()) {
    const std::string& why = paths.at(converted.front()).reason;
    return {"verdict", "warning",
            fmt::format("mixed precision cannot make {}'s GEMMs faster: its {} GEMMs run converted to fp32 ({}). "
                        "AVX512-BF16 (AMD Zen 4, Intel Cooper Lake and later), AMX (Intel Sapphire Rapids and later) "
                        "or a GPU with Tensor Cores would run bf16 GEMMs natively.{}",
                        device, fmt::join(converted, ", "), why, not_run),
            evidence};
  }
  std::string message = native.empty() ? fmt::format("{} ran no low-precision GEMM.{}", device, not_run)
                                       : fmt::format("{} runs its {} GEMMs natively ({}): mixed precision can make "
                                                     "them faster.",
                                                     device, fmt::join(native, ", "), paths.at(native.front()).reason);
  if (!native.empty() && !converted.empty())
    message += fmt::format(" Its {} GEMMs run converted to fp32, no faster than fp32's.", fmt::join(converted, ", "));
  if (!native.empty()) message += not_run;
  return {"verdict", "info", message, evidence};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The document's cases by suite, name, backend and precision: looked up once per speedup.
using CasesById = std::map<std::tuple<std::string, std::string, std::string, std::string>, const CaseResult*>;

CasesById cases_by_id(const ResultDocument& doc) {
  CasesById cases;
  for (const CaseResult& c : doc.cases) cases[{c.suite, c.name, c.backend, c.precision}] = &c;
  return cases;
}

const CaseResult* find_case(const CasesById& cases, const Speedup& s, const std::string& precision) {
  const auto found = cases.find({s.suite, s.name, s.backend, precision});
  return found == cases.end() ? nullptr : found->second;
}

// Seconds per step of the GEMM categories and of everything else, from a case's breakdown.
std::pair<double, double> gemm_and_rest(const CaseResult& c) {
  double gemm = 0, rest = 0;
  const json& breakdown = member_or_null(c.details, "breakdown");
  if (!breakdown.is_object()) return {0, 0};
  for (const auto& [name, seconds] : breakdown_categories(breakdown)) {
    // A CPU breakdown's "gemm", or a GPU breakdown's GEMMs on Tensor Cores or CUDA cores.
    const auto category = parse_category(name);
    (name == "gemm" || (category && is_gemm(*category)) ? gemm : rest) += seconds;
  }
  return {gemm, rest};
}

std::string path_of(const CaseResult& c) { return string_or(member_or_null(c.details, "gemm_path"), "path", ""); }

// Each trained mode against the baseline, split into its GEMMs and the rest where it was timed.
void training_figures(const CasesById& cases, const std::vector<Speedup>& speedups, const std::string& baseline,
                      std::vector<Finding>& out) {
  for (const Speedup& s : speedups) {
    if (s.suite != "transformer") continue;
    const CaseResult* mode = find_case(cases, s, s.precision);
    const CaseResult* base = find_case(cases, s, baseline);
    std::string message = fmt::format("{} trains at {:.2f}x {}'s speed per step", s.precision, s.value, baseline);
    json evidence = {{"case", s.name}, {"speedup", s.value}};
    if (mode && base) {
      const auto [gemm, rest] = gemm_and_rest(*mode);
      const auto [base_gemm, base_rest] = gemm_and_rest(*base);
      if (gemm > 0 && rest > 0 && base_gemm > 0 && base_rest > 0) {
        message += fmt::format(": its GEMMs {:.2f}x ({}), everything else {:.2f}x", base_gemm / gemm, path_of(*mode),
                               base_rest / rest);
        evidence["gemm_speedup"] = base_gemm / gemm;
        evidence["rest_speedup"] = base_rest / rest;
      }
    }
    out.push_back({"verdict_training", s.value < 1 ? "warning" : "info", message, evidence});
  }
}

// A case's ratio passes explain's noise gate (or no noise target applies to it).
bool quiet_enough(const ResultDocument& doc, const CaseResult* a, const CaseResult* b) {
  if (!a || !b) return true;
  const auto gate = noise_gate(doc, *a, *b);
  return !gate || !gate->closed();
}

// The speedups of each precision of one suite over the baseline that pass the noise gate, and how
// many did not.
struct SpeedupsOfPrecision {
  std::vector<double> values;
  std::size_t too_noisy = 0;
};

std::map<std::string, SpeedupsOfPrecision> speedups_by_precision(const ResultDocument& doc, const CasesById& cases,
                                                                 const std::vector<Speedup>& speedups,
                                                                 const std::string& suite) {
  std::map<std::string, SpeedupsOfPrecision> by_precision;
  for (const Speedup& s : speedups) {
    if (s.suite != suite) continue;
    auto& entry = by_precision[s.precision];
    if (quiet_enough(doc, find_case(cases, s, s.precision), find_case(cases, s, s.baseline)))
      entry.values.push_back(s.value);
    else ++entry.too_noisy;
  }
  return by_precision;
}

// ", 2 more left out as too noisy" where the gate closed on some.
std::string left_out(std::size_t too_noisy) {
  return too_noisy ? fmt::format("; {} more left out as too noisy to read (rerun them)", too_noisy) : "";
}

void gemm_figures(const ResultDocument& doc, const CasesById& cases, const std::vector<Speedup>& speedups,
                  const std::map<std::string, PathSeen>& paths, const std::string& baseline, std::vector<Finding>& out) {
  for (const auto& [precision, entry] : speedups_by_precision(doc, cases, speedups, "gemm")) {
    if (entry.values.empty()) continue;
    const double m = median(entry.values);
    const auto path = paths.find(precision);
    const std::string how = path == paths.end() ? "" : fmt::format(", {}", path->second.path);
    out.push_back({"verdict_gemm", m < 1 ? "warning" : "info",
                   fmt::format("{} GEMMs: {:.2f}x over {} (median of {} shapes{}{})", precision, m, baseline,
                               entry.values.size(), how, left_out(entry.too_noisy)),
                   {{"precision", precision}, {"median_speedup", m}, {"cases", entry.values.size()},
                    {"too_noisy", entry.too_noisy}}});
  }
}

// Memory-bound kernels move half the bytes in 16 bits: at best 2x, on every device.
void bandwidth_figures(const ResultDocument& doc, const CasesById& cases, const std::vector<Speedup>& speedups,
                       const std::string& baseline, std::vector<Finding>& out) {
  for (const auto& [precision, entry] : speedups_by_precision(doc, cases, speedups, "bandwidth")) {
    if (entry.values.empty()) continue;
    const double m = median(entry.values);
    out.push_back({"verdict_memory_bound", m < 1 ? "warning" : "info",
                   fmt::format("memory-bound kernels in {}: {:.2f}x over {} (median of {} bandwidth cases{}; half "
                               "the bytes allow 2x)",
                               precision, m, baseline, entry.values.size(), left_out(entry.too_noisy)),
                   {{"precision", precision}, {"median_speedup", m}, {"cases", entry.values.size()},
                    {"too_noisy", entry.too_noisy}}});
  }
}

void cast_figures(const ResultDocument& doc, std::vector<Finding>& out) {
  std::vector<double> pct_of_copy;
  std::size_t too_noisy = 0;
  const CopyIndex copies(doc);
  for (const CaseResult& c : doc.cases) {
    const auto pct = number_at(c.rates, {"pct_of_copy"});
    if (c.suite != "cast" || c.status != CaseStatus::ok || string_or(c.params, "kernel", "") == "copy" || !pct) continue;
    if (quiet_enough(doc, &c, copies.copy_of(c))) pct_of_copy.push_back(*pct);
    else ++too_noisy;
  }
  if (pct_of_copy.empty()) return;
  const double m = median(pct_of_copy);
  out.push_back({"verdict_casts", "info",
                 fmt::format("a conversion runs at {:.0f}% of a copy of the same elements (median of {} casts{}): "
                             "each cast in a mixed-precision step costs about {:.1f} copies",
                             m, pct_of_copy.size(), left_out(too_noisy), m > 0 ? 100.0 / m : 0.0),
                 {{"median_pct_of_copy", m}, {"cases", pct_of_copy.size()}, {"too_noisy", too_noisy}}});
}

}  // namespace

std::vector<Finding> verdict(const ResultDocument& doc, const std::string& baseline) {
  const auto paths = gemm_paths(doc);
  if (paths.empty()) return {};
  std::vector<Finding> out{headline(doc, paths)};
  const std::vector<Speedup> speedups = speedups_over(doc.cases, baseline);
  const CasesById cases = cases_by_id(doc);
  training_figures(cases, speedups, baseline, out);
  gemm_figures(doc, cases, speedups, paths, baseline, out);
  bandwidth_figures(doc, cases, speedups, baseline, out);
  cast_figures(doc, out);
  return out;
}

}  // namespace mpbench::profiler
