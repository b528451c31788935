// A peer comparison (compare/peer.hpp) as text, markdown or JSON.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compare/peer.hpp"

namespace mpbench::compare {

namespace {

std::string format_seconds(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

std::string times(double ratio) { return fmt::format("{:.2f}x", ratio); }

std::string noise_label(const Comparison& c) {
  std::string label = c.test == NoiseTest::rank           ? fmt::format("U test p={:.2g}", *c.p_value)
                      : c.test == NoiseTest::between_runs ? fmt::format("±{:.1f}% between runs", 100 * c.noise)
                                                          : fmt::format("spread ±{:.1f}%", 100 * c.noise);
  if (c.unconverged_runs > 0) label += fmt::format(", {} unconverged", c.unconverged_runs);
  return label;
}

// "bf16 1.90x", "-" where the side has no speedup for the case (the baseline itself).
std::string speedup_label(const PeerComparison& c, const std::optional<double>& speedup) {
  return speedup ? fmt::format("{} {}", c.key.precision, times(*speedup)) : "-";
}

Row header(const PeerReport& r) {
  return {"verdict", "case", "mpbench", "PyTorch", "mpbench vs PyTorch", "interval", "noise", "runs",
          fmt::format("mpbench over {}", r.options.baseline), fmt::format("PyTorch over {}", r.options.baseline)};
}

Row row(const PeerComparison& c) {
  const auto& t = c.timing;
  return {std::string(peer_verdict_name(c.verdict)), c.key.label(), format_seconds(t.current), format_seconds(t.base),
          times(c.ratio()), fmt::format("[{}, {}]", times(c.ratio_low()), times(c.ratio_high())), noise_label(t),
          fmt::format("{}/{}", t.current_runs, t.base_runs), speedup_label(c, c.mpbench_speedup),
          speedup_label(c, c.torch_speedup)};
}

std::string side_line(const PeerSide& s) {
  return fmt::format("{}: {} run{}{} on {}: {}", s.label, s.sources.size(), s.sources.size() == 1 ? "" : "s",
                     s.threads.empty() ? "" : fmt::format(", threads {}", s.threads), s.machine,
                     fmt::join(s.sources, ", "));
}

std::vector<std::string> what_is_compared(const PeerReport& r) {
  const auto& o = r.options;
  return {"a peer comparison, not a regression verdict: cases paired by suite, name and precision; each side's "
          "fastest time (geometric mean over its runs)",
          "mpbench vs PyTorch = PyTorch's time / mpbench's: above 1 mpbench is faster",
          fmt::format("verdicts as compare judges runs: mpbench or PyTorch faster = the whole {:g}% interval beyond "
                      "±{:g}%; on par = within ±{:g}%; noisy = across",
                      100 * (1 - o.alpha), 100 * o.threshold, 100 * o.threshold),
          fmt::format("each side's own speedup over {} on the same case stands beside it", o.baseline)};
}

// What makes the figures of the two sides not of one machine or one setting.
std::vector<std::string> warnings(const PeerReport& r) {
  std::vector<std::string> out;
  if (r.machines_differ())
    out.push_back(fmt::format("the sides ran on different hardware ({}; {}): the ratios compare machines, not "
                              "implementations",
                              r.mpbench.machine, r.torch.machine));
  if (r.threads_differ())
    out.push_back(fmt::format("the sides ran with different threads (mpbench {}, PyTorch {}): run torch_baseline.py "
                              "with the mpbench run's --threads",
                              r.mpbench.threads, r.torch.threads));
  return out;
}

std::string status_text(CaseStatus s, const std::string& message) {
  return message.empty() ? std::string(case_status_name(s)) : fmt::format("{}: {}", case_status_name(s), message);
}

std::vector<Row> not_ok_rows(const PeerReport& r) {
  std::vector<Row> rows;
  for (const auto& n : r.not_ok)
    rows.push_back({n.key.label(), status_text(n.mpbench, n.mpbench_message), status_text(n.torch, n.torch_message)});
  return rows;
}

std::string keys_line(const std::vector<PairKey>& keys) {
  std::vector<std::string> labels;
  for (const auto& k : keys) labels.push_back(shown(k.label()));
  return fmt::format("{}", fmt::join(labels, ", "));
}

std::string summary_line(const PeerReport& r) {
  return fmt::format("{} pairs compared: mpbench faster in {}, PyTorch faster in {}, on par in {}, noisy in {}; {} "
                     "not ok on a side, {} only in mpbench, {} only in PyTorch",
                     r.comparisons.size(), r.count(PeerVerdict::mpbench_faster), r.count(PeerVerdict::torch_faster),
                     r.count(PeerVerdict::on_par), r.count(PeerVerdict::noisy), r.not_ok.size(),
                     r.only_mpbench.size(), r.only_torch.size());
}

std::string text_lists(const PeerReport& r) {
  std::string out;
  if (!r.not_ok.empty()) {
    std::vector<Row> rows{{"case", "mpbench", "PyTorch"}};
    const auto more = not_ok_rows(r);
    rows.insert(rows.end(), more.begin(), more.end());
    out += "not ok on a side:\n" + aligned_table(rows);
  }
  if (!r.only_mpbench.empty()) out += fmt::format("only in mpbench ({}): {}\n", r.only_mpbench.size(), keys_line(r.only_mpbench));
  if (!r.only_torch.empty()) out += fmt::format("only in PyTorch ({}): {}\n", r.only_torch.size(), keys_line(r.only_torch));
  return out;
}

}  // namespace

std::string render_peer_text(const PeerReport& r) {
  std::vector<std::string> blocks;
  blocks.push_back(fmt::format("mpbench compare: mpbench against PyTorch\n  {}\n  {}\n  {}\n", shown(side_line(r.mpbench)),
                               shown(side_line(r.torch)), fmt::join(what_is_compared(r), "\n  ")));
  if (const auto w = warnings(r); !w.empty())
    blocks.push_back(fmt::format("warning: {}\n", shown(fmt::format("{}", fmt::join(w, "\nwarning: ")))));
  if (!r.comparisons.empty()) {
    std::vector<Row> rows{header(r)};
    for (const auto& c : r.comparisons) rows.push_back(row(c));
    blocks.push_back(aligned_table(rows));
  }
  if (const auto lists = text_lists(r); !lists.empty()) blocks.push_back(lists);
  std::string result = fmt::format("result: {}\n", summary_line(r));
  if (r.nothing_compared()) result += fmt::format("nothing compared: {}\n", r.why_nothing_compared());
  blocks.push_back(result);
  return fmt::format("{}", fmt::join(blocks, "\n"));
}

std::string render_peer_markdown(const PeerReport& r) {
  std::string out = fmt::format("### mpbench compare: mpbench against PyTorch{}\n\n",
                                r.nothing_compared() ? ": nothing compared" : "");
  out += fmt::format("{}.\n\n", summary_line(r));
  if (r.nothing_compared()) out += fmt::format("Nothing compared: {}.\n\n", r.why_nothing_compared());
  out += fmt::format("{} · {} · {}.\n\n", markdown_inline(side_line(r.mpbench)), markdown_inline(side_line(r.torch)),
                     fmt::join(what_is_compared(r), "; "));
  for (const auto& w : warnings(r)) out += fmt::format("**Warning:** {}.\n\n", markdown_inline(w));
  if (!r.comparisons.empty()) {
    std::vector<Row> rows;
    for (const auto& c : r.comparisons) rows.push_back(row(c));
    out += markdown_table(header(r), rows) + "\n";
  }
  if (!r.not_ok.empty()) out += "#### Not ok on a side\n\n" + markdown_table({"case", "mpbench", "PyTorch"}, not_ok_rows(r)) + "\n";
  if (!r.only_mpbench.empty()) out += fmt::format("**Only in mpbench ({}):** {}\n\n", r.only_mpbench.size(), keys_line(r.only_mpbench));
  if (!r.only_torch.empty()) out += fmt::format("**Only in PyTorch ({}):** {}\n\n", r.only_torch.size(), keys_line(r.only_torch));
  return out;
}

namespace {

nlohmann::json key_json(const PairKey& k) { return {{"suite", k.suite}, {"name", k.name}, {"precision", k.precision}}; }

nlohmann::json optional_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

nlohmann::json comparison_json(const PeerComparison& c) {
  const auto& t = c.timing;
  auto j = key_json(c.key);
  j.update({{"mpbench_backend", c.mpbench_backend},
            {"torch_backend", c.torch_backend},
            {"mpbench_seconds", t.current},
            {"torch_seconds", t.base},
            {"ratio", c.ratio()},
            {"ratio_interval", {c.ratio_low(), c.ratio_high()}},
            {"verdict", peer_verdict_name(c.verdict)},
            {"test", noise_test_name(t.test)},
            {"noise", t.noise},
            {"p_value", optional_json(t.p_value)},
            {"runs", {{"mpbench", t.current_runs}, {"torch", t.base_runs}}},
            {"unconverged_runs", t.unconverged_runs},
            {"runs_to_settle", t.runs_to_settle ? nlohmann::json(*t.runs_to_settle) : nlohmann::json()},
            {"speedups", {{"mpbench", optional_json(c.mpbench_speedup)}, {"torch", optional_json(c.torch_speedup)}}},
            {"param_changes", t.param_changes}});
  return j;
}

nlohmann::json side_json(const PeerSide& s) {
  return {{"label", s.label}, {"machine", s.machine}, {"threads", s.threads}, {"sources", s.sources}};
}

nlohmann::json keys_json(const std::vector<PairKey>& keys) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : keys) out.push_back(key_json(k));
  return out;
}

}  // namespace

nlohmann::json peer_report_json(const PeerReport& r) {
  nlohmann::json comparisons = nlohmann::json::array(), not_ok = nlohmann::json::array();
  for (const auto& c : r.comparisons) comparisons.push_back(comparison_json(c));
  for (const auto& n : r.not_ok) {
    auto j = key_json(n.key);
    j.update({{"mpbench_status", case_status_name(n.mpbench)}, {"mpbench_message", n.mpbench_message},
              {"torch_status", case_status_name(n.torch)}, {"torch_message", n.torch_message}});
    not_ok.push_back(std::move(j));
  }
  return {{"kind", "peer"},
          {"mpbench", side_json(r.mpbench)},
          {"torch", side_json(r.torch)},
          {"options",
           {{"threshold", r.options.threshold}, {"alpha", r.options.alpha}, {"baseline", r.options.baseline},
            {"min_runs", r.options.min_runs}}},
          {"warnings", warnings(r)},
          {"nothing_compared", r.nothing_compared()},
          {"why_nothing_compared", r.why_nothing_compared()},
          {"exit_status", r.exit_code()},
          {"summary",
           {{"compared", r.comparisons.size()}, {"mpbench_faster", r.count(PeerVerdict::mpbench_faster)},
            {"torch_faster", r.count(PeerVerdict::torch_faster)}, {"on_par", r.count(PeerVerdict::on_par)},
            {"noisy", r.count(PeerVerdict::noisy)}, {"not_ok", r.not_ok.size()},
            {"only_mpbench", r.only_mpbench.size()}, {"only_torch", r.only_torch.size()}}},
          {"comparisons", comparisons},
          {"not_ok", not_ok},
          {"only_mpbench", keys_json(r.only_mpbench)},
          {"only_torch", keys_json(r.only_torch)}};
}

std::string render_peer(const PeerReport& report, Format format) {
  switch (format) {
    case Format::text: return render_peer_text(report);
    case Format::markdown: return render_peer_markdown(report);
    case Format::json: return peer_report_json(report).dump(2) + "\n";
  }
  return render_peer_text(report);
}

}  // namespace mpbench::compare
