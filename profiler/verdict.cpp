#include "profiler/verdict.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/figure_text.hpp"
#include "core/stats.hpp"
#include "profiler/breakdown.hpp"
#include "profiler/classify.hpp"
#include "profiler/evidence.hpp"
#include "profiler/noise_gate.hpp"
#include "profiler/rules.hpp"

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

// Whether a speedup's interval is decided (pays, on par or does not pay), or it has none: the
// figures below leave out only what is too noisy to read.
bool readable(const CaseResult* a, const CaseResult* b, double speedup) {
  if (!a || !b) return true;
  const auto interval = ratio_interval(*a, *b, speedup);
  return !interval || interval->decided();
}

// The speedups of each precision of one suite over the baseline that pass the noise gate, and how
// many did not.
struct SpeedupsOfPrecision {
  std::vector<double> values;
  std::size_t too_noisy = 0;
};

std::map<std::string, SpeedupsOfPrecision> speedups_by_precision(const CasesById& cases,
                                                                 const std::vector<Speedup>& speedups,
                                                                 const std::string& suite) {
  std::map<std::string, SpeedupsOfPrecision> by_precision;
  for (const Speedup& s : speedups) {
    if (s.suite != suite) continue;
    auto& entry = by_precision[s.precision];
    if (readable(find_case(cases, s, s.precision), find_case(cases, s, s.baseline), s.value))
      entry.values.push_back(s.value);
    else ++entry.too_noisy;
  }
  return by_precision;
}

// ", 2 more left out as too noisy" where the gate closed on some.
std::string left_out(std::size_t too_noisy) {
  return too_noisy ? fmt::format("; {} more left out as too noisy to read (rerun them)", too_noisy) : "";
}

void gemm_figures(const CasesById& cases, const std::vector<Speedup>& speedups,
                  const std::map<std::string, PathSeen>& paths, const std::string& baseline, std::vector<Finding>& out) {
  for (const auto& [precision, entry] : speedups_by_precision(cases, speedups, "gemm")) {
    if (entry.values.empty()) continue;
    const double m = median_of(entry.values);
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
void bandwidth_figures(const CasesById& cases, const std::vector<Speedup>& speedups,
                       const std::string& baseline, std::vector<Finding>& out) {
  for (const auto& [precision, entry] : speedups_by_precision(cases, speedups, "bandwidth")) {
    if (entry.values.empty()) continue;
    const double m = median_of(entry.values);
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
    const CaseResult* copy = copies.copy_of(c);
    const auto interval = copy ? ratio_interval(c, *copy, *pct) : std::nullopt;
    if (!interval || decides_against(*interval, explain_rule("cast_slower_than_copy").threshold))
      pct_of_copy.push_back(*pct);
    else ++too_noisy;
  }
  if (pct_of_copy.empty()) return;
  const double m = median_of(pct_of_copy);
  out.push_back({"verdict_casts", "info",
                 fmt::format("a conversion runs at {} of a copy of the same elements (median of {} casts{}): "
                             "each cast in a mixed-precision step costs about {:.1f} copies",
                             printed_share(m), pct_of_copy.size(), left_out(too_noisy), m > 0 ? 100.0 / m : 0.0),
                 {{"median_pct_of_copy", m}, {"cases", pct_of_copy.size()}, {"too_noisy", too_noisy}}});
}

// The CPU flags that decide its low-precision paths, those it has.
std::vector<std::string> present_cpu_flags(const ResultDocument& doc) {
  std::vector<std::string> present;
  const json& flags = member_or_null(member_or_null(doc.env, "cpu"), "flags");
  if (!flags.is_object()) return present;
  for (const auto& [flag, has] : flags.items())
    if (has.is_boolean() && has.get<bool>()) present.push_back(flag);
  return present;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The bf16 matmul instructions the CPU's flags say it has.
std::vector<std::string> bf16_instructions(const ResultDocument& doc) {
  std::vector<std::string> names;
  if (has_cpu_flag(doc.env, "avx512_bf16")) names.emplace_back("AVX512-BF16");
  if (has_cpu_flag(doc.env, "amx_bf16")) names.emplace_back("AMX-BF16");
  return names;
}

// The ISA oneDNN ran on (env.backend.onednn.effective_isa), empty where the document does not say.
std::string effective_isa(const ResultDocument& doc) {
  return string_or(member_or_null(member_or_null(doc.env, "backend"), "onednn"), "effective_isa", "");
}

// Whether that ISA stops below AVX512-BF16: a limit (--cpu-isa, DNNL_MAX_CPU_ISA) took it away.
bool isa_below_bf16(const std::string& isa) {
  for (const char* below : {"sse41", "avx", "avx2", "avx2_vnni", "avx512_core", "avx512_core_vnni"})
    if (isa == below) return true;
  return false;
}

// Why the CPU's AMX did not run, and how to allow it; nothing where it ran, the CPU has none or
// the document does not say which ISA oneDNN used.
std::optional<std::string> amx_left_out(const ResultDocument& doc) {
  const std::string isa = effective_isa(doc);
  if (!has_cpu_flag(doc.env, "amx_bf16") || isa.empty() || isa == "avx512_core_amx") return std::nullopt;
  const std::string limit =
      string_or(member_or_null(member_or_null(doc.env, "backend"), "onednn"), "default_isa_limit", "");
  if (!limit.empty()) return fmt::format("this CPU has AMX-BF16, left out of this run: {}", limit);
  return fmt::format("this CPU has AMX-BF16, left out of this run: oneDNN was limited to ISA {} (--cpu-isa or "
                     "DNNL_MAX_CPU_ISA); --cpu-isa all uses it",
                     isa);
}

// The gemm suite's speedups of each precision over the baseline that passed the noise gate.
using GemmSpeedups = std::map<std::string, SpeedupsOfPrecision>;

// Why a CPU with bf16 instructions ran bf16 converted: the run forced it, or an ISA limit took the
// instructions away; the recorded reason says the rest.
std::string why_instructions_unused(const ResultDocument& doc, const std::vector<std::string>& instructions) {
  const std::string has = fmt::format("This CPU has {}, which this run did not use: ", fmt::join(instructions, " and "));
  if (string_or(member_or_null(doc.env, "cpu"), "gemm_path_choice", "") == "converted")
    return has + "it forced the converted path (--cpu-gemm converted); --cpu-gemm auto, the default, runs bf16 GEMMs "
                 "natively.";
  if (const std::string isa = effective_isa(doc); isa_below_bf16(isa))
    return has + fmt::format("oneDNN was limited to ISA {}, which leaves them out; --cpu-isa all lifts the limit.", isa);
  return has + "the reason above says why.";
}

Finding converted_headline(const ResultDocument& doc, const std::map<std::string, PathSeen>& paths,
                           const std::vector<std::string>& converted, const std::string& not_run, json evidence) {
  const std::string device = device_name(doc);
  const std::string& why = paths.at(converted.front()).reason;
  const auto instructions = bf16_instructions(doc);
  if (contains(converted, "bf16") && !instructions.empty())
    return {"verdict", "warning",
            fmt::format("mixed precision cannot make {}'s GEMMs faster in this run: its {} GEMMs ran converted to fp32 "
                        "({}). {}{}",
                        device, fmt::join(converted, ", "), why, why_instructions_unused(doc, instructions), not_run),
            evidence};
  return {"verdict", "warning",
          fmt::format("mixed precision cannot make {}'s GEMMs faster: its {} GEMMs run converted to fp32 ({}). "
                      "AVX512-BF16 (AMD Zen 4, Intel Cooper Lake and later), AMX (Intel Sapphire Rapids and later) "
                      "or a GPU with Tensor Cores would run bf16 GEMMs natively.{}",
                      device, fmt::join(converted, ", "), why, not_run),
          evidence};
}

// What would make natively run bf16 GEMMs that measured slower than the baseline faster.
std::string what_would_help(const ResultDocument& doc) {
  if (const auto amx = amx_left_out(doc)) return fmt::format(" AMX would help: {}.", *amx);
  if (has_cpu_flag(doc.env, "amx_bf16")) return "";
  return " AMX (Intel Sapphire Rapids and later) or a GPU with Tensor Cores would run them faster.";
}

std::string shapes(std::size_t n) { return fmt::format("{} shape{}", n, n == 1 ? "" : "s"); }

// "natively (reason)", then what the gemm suite measured of them, where it did: the path says
// mixed precision can make them faster, only the measurement says whether it did here.
Finding native_headline(const ResultDocument& doc, const std::map<std::string, PathSeen>& paths,
                        const std::vector<std::string>& native, const GemmSpeedups& gemm_speedups,
                        const std::string& baseline, json evidence) {
  std::vector<std::string> measured;
  std::size_t too_noisy = 0;
  bool bf16_slower = false, slower = false;
  for (const std::string& precision : native) {
    const auto found = gemm_speedups.find(precision);
    if (found == gemm_speedups.end()) continue;
    too_noisy += found->second.too_noisy;
    if (found->second.values.empty()) continue;
    const double m = median_of(found->second.values);
    measured.push_back(fmt::format("{} {:.2f}x {}'s speed (median of {})", precision, m, baseline,
                                   shapes(found->second.values.size())));
    evidence["measured"][precision] = m;
    slower |= m < 1;
    bf16_slower |= m < 1 && precision == "bf16";
  }
  std::string message = fmt::format("{} runs its {} GEMMs natively ({})", device_name(doc), fmt::join(native, ", "),
                                    paths.at(native.front()).reason);
  if (!measured.empty()) {
    message += fmt::format("; measured here: {}", fmt::join(measured, ", "));
    message += slower ? fmt::format(": native, but slower than {} on this CPU.", baseline) : ".";
  } else if (too_noisy > 0) {
    message += fmt::format(": mixed precision can make them faster, but {} too noisy to say whether it did here "
                           "(rerun {}).",
                           too_noisy == 1 ? "the one measured ratio was" : fmt::format("all {} measured ratios were", too_noisy),
                           too_noisy == 1 ? "it" : "them");
  } else {
    message += ": mixed precision can make them faster.";
  }
  const auto amx = amx_left_out(doc);
  if (bf16_slower) message += what_would_help(doc);
  else if (amx && contains(native, "bf16")) message += fmt::format(" Note: {}.", *amx);
  return {"verdict", slower ? "warning" : "info", message, evidence};
}

Finding headline(const ResultDocument& doc, const std::map<std::string, PathSeen>& paths,
                 const GemmSpeedups& gemm_speedups, const std::string& baseline) {
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
  if (const auto amx = amx_left_out(doc)) evidence["amx_left_out"] = *amx;
  if (native.empty() && !converted.empty()) return converted_headline(doc, paths, converted, not_run, evidence);
  if (native.empty()) return {"verdict", "info", fmt::format("{} ran no low-precision GEMM.{}", device, not_run), evidence};
  Finding f = native_headline(doc, paths, native, gemm_speedups, baseline, evidence);
  if (!converted.empty())
    f.message += fmt::format(" Its {} GEMMs run converted to fp32, no faster than fp32's.", fmt::join(converted, ", "));
  f.message += not_run;
  return f;
}

}  // namespace

std::vector<Finding> verdict(const ResultDocument& doc, const std::string& baseline) {
  const auto paths = gemm_paths(doc);
  if (paths.empty()) return {};
  const std::vector<Speedup> speedups = speedups_over(doc.cases, baseline);
  const CasesById cases = cases_by_id(doc);
  std::vector<Finding> out{headline(doc, paths, speedups_by_precision(cases, speedups, "gemm"), baseline)};
  training_figures(cases, speedups, baseline, out);
  gemm_figures(cases, speedups, paths, baseline, out);
  bandwidth_figures(cases, speedups, baseline, out);
  cast_figures(doc, out);
  return out;
}

}  // namespace mpbench::profiler
