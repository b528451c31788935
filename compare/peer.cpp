#include "compare/peer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "compare/figures.hpp"

namespace mpbench::compare {

bool is_torch_side(const Side& side) {
  return !side.runs.empty() && std::all_of(side.runs.begin(), side.runs.end(),
                                           [](const Run& run) { return is_torch_document(run.document); });
}

bool is_peer_comparison(const Side& a, const Side& b) { return is_torch_side(a) != is_torch_side(b); }

std::string PairKey::label() const { return fmt::format("{}/{}/{}", suite, name, precision); }

std::string_view peer_verdict_name(PeerVerdict v) {
  switch (v) {
    case PeerVerdict::mpbench_faster: return "mpbench faster";
    case PeerVerdict::torch_faster: return "PyTorch faster";
    case PeerVerdict::on_par: return "on par";
    case PeerVerdict::noisy: return "noisy";
  }
  return "on par";
}

std::size_t PeerReport::count(PeerVerdict v) const {
  return std::count_if(comparisons.begin(), comparisons.end(), [v](const PeerComparison& c) { return c.verdict == v; });
}

std::string PeerReport::why_nothing_compared() const {
  if (!nothing_compared()) return "";
  if (not_ok.empty())
    return fmt::format("no case of mpbench's ({} cases) pairs with one of PyTorch's ({} cases) by suite, name and "
                       "precision: measure PyTorch with scripts/torch_baseline.py --cases-from the mpbench document",
                       only_mpbench.size(), only_torch.size());
  return fmt::format("each of the {} pairs is not ok on a side", not_ok.size());
}

namespace {

PairKeyView pair_key(const CaseResult& c) { return {c.suite, c.name, c.precision}; }

PairKey to_key(const PairKeyView& v) { return {std::string(v.suite), std::string(v.name), std::string(v.precision)}; }

using Pairs = RunsByKey<decltype(&pair_key)>;

// The geometric mean of the side's speedups over the baseline, where every run has one.
std::optional<double> own_speedup(CaseRuns runs, const std::string& baseline) {
  const auto speedups = figures(runs, Metric::speedup, baseline);
  if (speedups.empty()) return std::nullopt;
  double log_sum = 0;
  for (const auto& f : speedups) log_sum += std::log(f.value);
  return std::exp(log_sum / static_cast<double>(speedups.size()));
}

// compare's verdict with PyTorch as the base: an "improvement" is mpbench taking less time.
PeerVerdict peer_verdict(Verdict v) {
  switch (v) {
    case Verdict::improved: return PeerVerdict::mpbench_faster;
    case Verdict::regressed: return PeerVerdict::torch_faster;
    case Verdict::noisy: return PeerVerdict::noisy;
    case Verdict::same: return PeerVerdict::on_par;
  }
  return PeerVerdict::on_par;
}

std::optional<PeerComparison> compare_pair(const PairKey& key, CaseRuns mpbench, CaseRuns torch,
                                           const Options& options) {
  const auto m = figures(mpbench, Metric::seconds, ""), t = figures(torch, Metric::seconds, "");
  if (m.empty() || t.empty()) return std::nullopt;
  Comparison timing;
  timing.key = {key.suite, key.name, torch.front().result->backend, key.precision};
  timing.metric = Metric::seconds;
  timing.reference = "PyTorch's time";
  timing.param_changes = param_changes(torch.front().params, mpbench.front().params);
  PeerComparison c{key, mpbench.front().result->backend, torch.front().result->backend,
                   judge(std::move(timing), t, m, options), PeerVerdict::on_par, std::nullopt, std::nullopt};
  c.verdict = peer_verdict(c.timing.verdict);
  c.mpbench_speedup = own_speedup(mpbench, options.baseline);
  c.torch_speedup = own_speedup(torch, options.baseline);
  return c;
}

std::string json_text_at(const nlohmann::json& j, const char* pointer) {
  const nlohmann::json::json_pointer p(pointer);
  if (!j.contains(p) || j.at(p).is_null()) return "";
  return j.at(p).is_string() ? j.at(p).get<std::string>() : j.at(p).dump();
}

std::string device_of(const ResultDocument& doc) {
  const std::string device = json_text_at(doc.run, "/device");
  return device.empty() ? "?" : device;
}

std::string threads_of(const Side& side) {
  std::set<std::string> values;
  for (const auto& run : side.runs)
    if (auto t = json_text_at(run.document.env, "/cpu/threads"); !t.empty()) values.insert(std::move(t));
  return fmt::format("{}", fmt::join(values, ", "));
}

// "eager", "torch.compile" or both, from the backends the side's cases ran.
std::string torch_modes(const Side& side) {
  std::set<std::string> backends;
  for (const auto& run : side.runs)
    for (const auto& c : run.document.cases) backends.insert(c.backend);
  const bool eager = backends.contains("torch"), compiled = backends.contains("torch-compile");
  return eager && compiled ? "eager and torch.compile" : compiled ? "torch.compile" : "eager";
}

PeerSide mpbench_side(const Side& side) {
  const auto& doc = side.runs.front().document;
  return {fmt::format("mpbench ({})", device_of(doc)), hardware_of(doc), threads_of(side), side.sources()};
}

PeerSide torch_side(const Side& side) {
  const auto& doc = side.runs.front().document;
  const std::string version = json_text_at(doc.env, "/torch/version");
  return {fmt::format("PyTorch{} {} ({})", version.empty() ? "" : " " + version, torch_modes(side), device_of(doc)),
          hardware_of(doc), threads_of(side), side.sources()};
}

void pair_cases(PeerReport& report, const Pairs& mpbench, const Pairs& torch, const Options& options) {
  for (const CaseRuns m : mpbench.groups()) {
    const PairKeyView key = mpbench.key(m);
    const CaseRuns t = torch.find(key);
    if (t.empty()) {
      report.only_mpbench.push_back(to_key(key));
      continue;
    }
    const CaseResult &worst_m = worst(m), &worst_t = worst(t);
    if (worst_m.status != CaseStatus::ok || worst_t.status != CaseStatus::ok) {
      report.not_ok.push_back({to_key(key), worst_m.status, worst_t.status, worst_m.message, worst_t.message});
      continue;
    }
    if (auto c = compare_pair(to_key(key), m, t, options)) report.comparisons.push_back(std::move(*c));
  }
  for (const CaseRuns t : torch.groups())
    if (mpbench.find(torch.key(t)).empty()) report.only_torch.push_back(to_key(torch.key(t)));
}

}  // namespace

PeerReport compare_peers(const Side& a, const Side& b, const Options& options) {
  const bool a_is_torch = is_torch_side(a);
  const Side& torch = a_is_torch ? a : b;
  const Side& mpbench = a_is_torch ? b : a;
  require_runs(mpbench, options.min_runs);
  require_runs(torch, options.min_runs);
  PeerReport report{mpbench_side(mpbench), torch_side(torch), options, {}, {}, {}, {}};
  const auto mpbench_indexes = indexes_of(mpbench), torch_indexes = indexes_of(torch);
  pair_cases(report, Pairs(mpbench, mpbench_indexes, pair_key), Pairs(torch, torch_indexes, pair_key), options);
  return report;
}

}  // namespace mpbench::compare
