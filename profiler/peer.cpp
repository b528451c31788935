#include "profiler/peer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "compare/sides.hpp"
#include "core/stats.hpp"
#include "profiler/evidence.hpp"

namespace mpbench::profiler {

namespace {

using nlohmann::json;


// Cases by suite, name and precision: a PyTorch document may hold torch and torch-compile cases,
// and either pairs with mpbench's.
using Identity = std::tuple<std::string, std::string, std::string>;
using OkCases = std::map<Identity, const CaseResult*>;

OkCases ok_cases(const ResultDocument& doc) {
  OkCases out;
  for (const auto& c : doc.cases)
    if (c.status == CaseStatus::ok && c.seconds && c.seconds->median > 0)
      out.try_emplace({c.suite, c.name, c.precision}, &c);
  return out;
}

const CaseResult* find(const OkCases& cases, const CaseResult& like, const std::string& precision) {
  const auto found = cases.find({like.suite, like.name, precision});
  return found == cases.end() ? nullptr : found->second;
}

std::optional<double> speedup_of(const OkCases& cases, const CaseResult& c,
                                 const std::string& baseline) {
  if (c.precision == baseline) return std::nullopt;
  const CaseResult* base = find(cases, c, baseline);
  if (!base) return std::nullopt;
  return base->seconds->median / c.seconds->median;
}

// The pairs of one suite and precision: PyTorch's time over mpbench's, and each side's speedups.
struct Group {
  std::vector<double> ratios, mpbench_speedups, torch_speedups;
  std::string mpbench_path;  // how mpbench's GEMMs ran (details.gemm_path), where recorded
};

using Groups = std::map<std::pair<std::string, std::string>, Group>;  // suite, precision

Groups pair_up(const ResultDocument& mpbench, const ResultDocument& torch, const std::string& baseline) {
  const auto mine = ok_cases(mpbench), theirs = ok_cases(torch);
  Groups groups;
  for (const auto& [id, c] : mine) {
    if (compare::is_torch_backend(c->backend)) continue;
    const CaseResult* peer = find(theirs, *c, c->precision);
    if (!peer) continue;
    Group& g = groups[{c->suite, c->precision}];
    g.ratios.push_back(peer->seconds->median / c->seconds->median);
    const auto m = speedup_of(mine, *c, baseline), t = speedup_of(theirs, *peer, baseline);
    if (m && t) {
      g.mpbench_speedups.push_back(*m);
      g.torch_speedups.push_back(*t);
    }
    if (g.mpbench_path.empty()) g.mpbench_path = string_or(member_or_null(c->details, "gemm_path"), "path", "");
  }
  return groups;
}

// What a suite's cases are, for the messages.
std::string what(const std::string& suite, const std::string& precision) {
  if (suite == "gemm") return fmt::format("{} GEMMs", precision);
  if (suite == "transformer") return fmt::format("{} training step", precision);
  if (suite == "bandwidth") return fmt::format("{} stream kernels", precision);
  return fmt::format("{} {} cases", precision, suite);
}

std::string cases_text(std::size_t n) { return fmt::format("{} case{}", n, n == 1 ? "" : "s"); }

Finding comparison_finding(const std::string& suite, const std::string& precision, const Group& g,
                           const std::string& baseline) {
  const double m = median_of(g.ratios);
  const auto [low, high] = std::minmax_element(g.ratios.begin(), g.ratios.end());
  std::string message = fmt::format("{}: mpbench at {:.2f}x PyTorch's speed (median of {}{})", what(suite, precision),
                                    m, cases_text(g.ratios.size()),
                                    g.ratios.size() > 1 ? fmt::format(", {:.2f}x to {:.2f}x", *low, *high) : "");
  json evidence = {{"suite", suite}, {"precision", precision}, {"median_ratio", m}, {"cases", g.ratios.size()},
                   {"lowest_ratio", *low}, {"highest_ratio", *high}};
  if (!g.mpbench_speedups.empty()) {
    const double ms = median_of(g.mpbench_speedups), ts = median_of(g.torch_speedups);
    message += fmt::format("; over {}: mpbench {} {:.2f}x, PyTorch {} {:.2f}x", baseline, precision, ms, precision, ts);
    evidence["mpbench_speedup"] = ms;
    evidence["torch_speedup"] = ts;
  }
  return {"peer_comparison", m < 1 ? "warning" : "info", message, evidence};
}

// The CPU flags that would give `precision` a hardware path, and whether the CPU has any of them;
// nothing for a precision without 16-bit float instructions to speak of, or a run on a GPU.
struct Instructions {
  std::string family;                 // "bf16", "fp16"
  std::vector<std::string> names;     // "AVX512-BF16", "AMX-BF16"
  bool present = false;
};

std::optional<Instructions> instructions_for(const ResultDocument& doc, const std::string& precision) {
  if (string_or(doc.run, "device", "cpu") != "cpu") return std::nullopt;
  if (precision.find("bf16") != std::string::npos)
    return Instructions{"bf16", {"AVX512-BF16", "AMX-BF16"}, has_cpu_flag(doc.env, "avx512_bf16") || has_cpu_flag(doc.env, "amx_bf16")};
  if (precision.find("fp16") != std::string::npos)
    return Instructions{"fp16", {"AVX512-FP16", "AMX-FP16"}, has_cpu_flag(doc.env, "avx512_fp16") || has_cpu_flag(doc.env, "amx_fp16")};
  return std::nullopt;
}

// PyTorch's own speedup far below mpbench's on the same cases: mpbench's run shows the hardware
// allows more. Named as PyTorch's fallback where the CPU lacks the instructions.
std::optional<Finding> slow_path_finding(const ResultDocument& mpbench, const std::string& suite,
                                         const std::string& precision, const Group& g, const std::string& baseline) {
  if (g.mpbench_speedups.empty()) return std::nullopt;
  const double ms = median_of(g.mpbench_speedups), ts = median_of(g.torch_speedups);
  if (!(ts < 1 && ts < kPeerSlowShare * ms)) return std::nullopt;
  const double how_much = ms / ts;
  const std::string path = g.mpbench_path.empty() ? "" : fmt::format("{} ", g.mpbench_path);
  const std::string measured = fmt::format(
      "PyTorch's {} ran at {:.2f}x its own {} speed (median of {}) where mpbench's {}path on the same hardware ran at "
      "{:.2f}x: PyTorch's path is {:.1f}x slower than the hardware allows, and mpbench is {:.2f}x PyTorch's speed there",
      what(suite, precision), ts, baseline, cases_text(g.torch_speedups.size()), path, ms, how_much, median_of(g.ratios));
  json evidence = {{"suite", suite}, {"precision", precision}, {"torch_speedup", ts}, {"mpbench_speedup", ms},
                   {"slower_than_allowed", how_much}, {"median_ratio", median_of(g.ratios)}};
  const auto instructions = instructions_for(mpbench, precision);
  if (instructions && !instructions->present) {
    evidence["cpu_flags_missing"] = instructions->names;
    return Finding{fmt::format("peer_{}_fallback", instructions->family), "warning",
                   fmt::format("PyTorch falls back to a slow path for {f} on CPUs without {f} instructions (this CPU "
                               "has no {n}, env.cpu.flags): {m}",
                               fmt::arg("f", instructions->family),
                               fmt::arg("n", fmt::join(instructions->names, " or ")), fmt::arg("m", measured)),
                   evidence};
  }
  if (instructions) evidence["cpu_has"] = instructions->names;
  const std::string has = instructions ? fmt::format(" (this CPU has {} instructions: the cause is not their absence)",
                                                     instructions->family)
                                       : "";
  return Finding{"peer_slow_low_precision", "warning", measured + has, evidence};
}

std::string cpu_model(const ResultDocument& doc) {
  return string_or(member_or_null(doc.env, "cpu"), "model", "");
}

}  // namespace

std::string peer_label(const ResultDocument& torch) {
  const std::string version = string_or(member_or_null(torch.env, "torch"), "version", "");
  return fmt::format("PyTorch{} ({})", version.empty() ? "" : " " + version, string_or(torch.run, "device", "?"));
}

std::vector<Finding> peer_findings(const ResultDocument& mpbench, const ResultDocument& torch,
                                   const std::string& baseline) {
  std::vector<Finding> out, slow;
  if (cpu_model(mpbench) != cpu_model(torch))
    out.push_back({"peer_other_machine", "warning",
                   fmt::format("the PyTorch document ran on another CPU ({} against {}): the ratios compare machines",
                               cpu_model(torch), cpu_model(mpbench)),
                   {{"cpu", cpu_model(mpbench)}, {"peer_cpu", cpu_model(torch)}}});
  for (const auto& [group, g] : pair_up(mpbench, torch, baseline)) {
    const auto& [suite, precision] = group;
    out.push_back(comparison_finding(suite, precision, g, baseline));
    if (auto f = slow_path_finding(mpbench, suite, precision, g, baseline)) slow.push_back(std::move(*f));
  }
  out.insert(out.end(), slow.begin(), slow.end());
  return out;
}

}  // namespace mpbench::profiler
