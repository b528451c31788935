#include "compare/render.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/figure_text.hpp"
#include "core/printable.hpp"

namespace mpbench::compare {

Format parse_format(std::string_view text) {
  if (text == "text") return Format::text;
  if (text == "markdown") return Format::markdown;
  if (text == "json") return Format::json;
  throw UsageError(fmt::format("--format '{}' is unknown: use text, markdown or json", text));
}

namespace {

std::string format_seconds(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

std::string format_value(const Comparison& c, double v) {
  switch (c.metric) {
    case Metric::speedup: return printed_speedup(v);
    case Metric::pct_of_copy: return printed_share(v);
    case Metric::seconds: return format_seconds(v);
  }
  return "";
}

std::string percent(double fraction) { return fmt::format("{:+.1f}%", 100 * fraction); }

std::string interval_label(const Comparison& c) {
  return fmt::format("[{}, {}]", percent(c.change_low), percent(c.change_high));
}

std::string noise_label(const Comparison& c) {
  std::string label = c.test == NoiseTest::rank           ? fmt::format("U test p={:.2g}", *c.p_value)
                      : c.test == NoiseTest::between_runs ? fmt::format("±{:.1f}% between runs", 100 * c.noise)
                      : c.test == NoiseTest::samples      ? fmt::format("t on samples, spread ±{:.1f}%", 100 * c.noise)
                                                          : fmt::format("spread ±{:.1f}%", 100 * c.noise);
  if (c.unconverged_runs > 0) label += fmt::format(", {} unconverged", c.unconverged_runs);
  return label;
}

std::string runs_label(const Comparison& c) { return fmt::format("{}/{}", c.base_runs, c.current_runs); }

std::string status_label(const StatusChange& s) {
  return fmt::format("{} -> {}", case_status_name(s.base), case_status_name(s.current));
}

std::string result_word(const Report& r) {
  if (r.regressed()) return "REGRESSED";
  return r.nothing_compared() ? "NOTHING COMPARED" : "no regression";
}

std::string confidence(const Options& o) { return fmt::format("{:g}%", 100 * (1 - o.alpha)); }

// How the verdicts are reached, one line each.
std::vector<std::string> what_is_compared(const Options& o) {
  return {fmt::format("tracked: the speedup over {b} where a run measured {b} on the same case, else the share of the "
                      "copy measured in the same run (both as the run recorded them, of median times), else the "
                      "fastest time{abs}",
                      fmt::arg("b", o.baseline), fmt::arg("abs", o.absolute ? " (and every time)" : "")),
          fmt::format("verdicts: regressed or improved = the whole interval of the change beyond ±{t:g}%; same = "
                      "within ±{t:g}%; noisy = across ±{t:g}%, never a failure",
                      fmt::arg("t", 100 * o.threshold)),
          fmt::format("interval: {} confidence from the spread between runs; with one run per side, Student's t "
                      "on the samples behind both figures (else the change ± both runs' own spreads); where most "
                      "runs of a side stopped before their noise target, it also covers their own spreads",
                      confidence(o))};
}

}  // namespace

// Free-form fields (case names, messages, file names, environment values) come from the documents:
// in a report they must not move the terminal's cursor, reverse the text around them, break a line
// or, in markdown, end a table cell.
std::string shown(const std::string& text) { return printable(text, Unicode::keep); }

std::string markdown_inline(const std::string& text) {
  std::string one_line = text;
  std::replace_if(one_line.begin(), one_line.end(), [](char ch) { return ch == '\n' || ch == '\r'; }, ' ');
  return shown(one_line);
}

namespace {

using Clean = std::string (*)(const std::string&);

std::vector<std::string> cleaned(const std::vector<std::string>& texts, Clean clean) {
  std::vector<std::string> out;
  for (const auto& t : texts) out.push_back(clean(t));
  return out;
}

std::string side_line(const std::vector<std::string>& sources, const std::string& machine, Clean clean) {
  return fmt::format("{} run{} on {}: {}", sources.size(), sources.size() == 1 ? "" : "s", clean(machine),
                     fmt::join(cleaned(sources, clean), ", "));
}

// An interrupted side's cut-short and missing cases are not compared: said with the counts.
std::string interrupted_note(const Report& r) {
  if (r.interrupted_sides.empty()) return "";
  return fmt::format("; interrupted: {} (its {} cut-short and {} missing cases are not compared)",
                     fmt::join(r.interrupted_sides, " and "), r.cut_short(), r.missing.size());
}

std::string summary_line(const Report& r) {
  return fmt::format("{} regressed, {} newly failing, {} improved, {} noisy, {} same, {} not ok ({} skipped in both), "
                     "{} added, {} missing",
                     r.count(Verdict::regressed), r.newly_failing(), r.count(Verdict::improved),
                     r.count(Verdict::noisy), r.count(Verdict::same), r.not_ok.size(), r.skipped_in_both(),
                     r.added.size(), r.missing.size()) +
         interrupted_note(r);
}

std::string keys_line(const std::vector<CaseKey>& keys, Clean clean) {
  std::vector<std::string> labels;
  for (const auto& k : keys) labels.push_back(clean(k.label()));
  return fmt::format("{}", fmt::join(labels, ", "));
}

// Characters, not bytes: "±" takes two bytes of UTF-8 and one column.
std::size_t columns(const std::string& text) {
  return std::count_if(text.begin(), text.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; });
}

}  // namespace

std::string aligned_table(std::vector<Row> rows) {
  for (auto& row : rows)
    for (auto& cell : row) cell = shown(cell);
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], columns(row[i]));
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) line += row[i] + std::string(widths[i] - columns(row[i]) + 2, ' ');
    line.erase(line.find_last_not_of(' ') + 1);
    out += "  " + line + "\n";
  }
  return out;
}

namespace {

Row comparison_header() {
  return {"verdict", "case", "tracked figure", "base", "new", "change", "interval", "noise", "runs"};
}

Row comparison_row(const Comparison& c) {
  return {std::string(verdict_name(c.verdict)), c.key.label(), figure_label(c), format_value(c, c.base),
          format_value(c, c.current), percent(c.change), interval_label(c), noise_label(c), runs_label(c)};
}

// One line, with the pipes that would end the cell escaped, and the backslashes, so that a text
// ending in one does not escape the cell's own pipe.
std::string markdown_cell(const std::string& text) {
  std::string escaped;
  for (char ch : markdown_inline(text)) {
    if (ch == '|' || ch == '\\') escaped.push_back('\\');
    escaped.push_back(ch);
  }
  return escaped;
}

std::string markdown_row(const Row& cells) {
  std::string out = "|";
  for (const auto& cell : cells) out += fmt::format(" {} |", markdown_cell(cell));
  return out + "\n";
}

}  // namespace

std::string markdown_table(const Row& header, const std::vector<Row>& rows) {
  std::string out = markdown_row(header) + "|";
  for (std::size_t i = 0; i < header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : rows) out += markdown_row(row);
  return out;
}

namespace {

// A regression in bold red, an improvement in green, noise in yellow: told apart at a glance.
std::string markdown_verdict(const Comparison& c) {
  switch (c.verdict) {
    case Verdict::regressed: return "🔴 **regressed**";
    case Verdict::improved: return "🟢 improved";
    case Verdict::noisy: return "🟡 noisy";
    case Verdict::same: return "same";
  }
  return "";
}

// One row per changed param of a compared case (each case once, though compared twice with --absolute).
std::vector<Row> param_change_rows(const Report& r) {
  std::vector<Row> rows;
  std::set<CaseKey> listed;
  for (const auto& c : r.comparisons)
    if (!c.param_changes.empty() && listed.insert(c.key).second)
      for (const auto& change : c.param_changes) rows.push_back({c.key.label(), change});
  return rows;
}

std::string dash_if_empty(const std::string& s) { return s.empty() ? "-" : s; }

std::string text_environment(const Report& r) {
  std::vector<Row> changed, conditions;
  for (const auto& f : r.environment) {
    if (f.changed()) changed.push_back({f.field, dash_if_empty(f.base), "->", dash_if_empty(f.current)});
    if (f.condition) conditions.push_back({f.field, dash_if_empty(f.base), "->", dash_if_empty(f.current)});
  }
  std::string out = changed.empty() ? "environment: unchanged (devices, drivers, libraries, CPU, ISA, threads, GEMM "
                                      "paths, mpbench revision)\n"
                                    : "environment changes:\n" + aligned_table(changed);
  if (!conditions.empty()) out += "measured under (base -> new, over every case):\n" + aligned_table(conditions);
  return out;
}

std::string text_lists(const Report& r) {
  std::string lists;
  std::vector<Row> not_ok_rows;
  for (const auto& s : r.not_ok)
    if (!s.skipped_in_both())
      not_ok_rows.push_back({s.key.label(), status_label(s), s.newly_failing() ? "NEWLY FAILING" : s.cut_short ? "not compared" : "",
                             s.message});
  if (!not_ok_rows.empty()) lists += "not ok:\n" + aligned_table(not_ok_rows);
  if (r.skipped_in_both() > 0) lists += fmt::format("skipped in both runs: {} cases\n", r.skipped_in_both());
  if (!r.added.empty()) lists += fmt::format("added ({}): {}\n", r.added.size(), keys_line(r.added, shown));
  if (!r.missing.empty()) lists += fmt::format("missing ({}): {}\n", r.missing.size(), keys_line(r.missing, shown));
  if (!r.ignored_files.empty())
    lists += fmt::format("ignored (not mpbench results): {}\n", fmt::join(cleaned(r.ignored_files, shown), ", "));
  return lists;
}

std::string library_line(const Report& r) {
  std::vector<std::string> changes;
  for (const auto& f : r.library_changes)
    changes.push_back(fmt::format("{} {} -> {}", f.field, dash_if_empty(f.base), dash_if_empty(f.current)));
  return fmt::format("{}", fmt::join(changes, "; "));
}

std::string choice_summary(const std::optional<GemmChoice>& choice) { return choice ? choice->summary() : "-"; }

// One row per GEMM of each case: the flag, the case, the GEMM, the base's algorithm, the new one's.
std::vector<Row> algorithm_rows(const Report& r, const char* flag) {
  std::vector<Row> rows;
  for (const auto& a : r.algorithms)
    for (const auto& g : a.gemms)
      rows.push_back({g.changed() ? flag : "", a.key.label(), g.gemm, choice_summary(g.base), choice_summary(g.current)});
  return rows;
}

std::string algorithms_heading(const Report& r) {
  return fmt::format("GEMM algorithms (base -> new): {} of {} cases chose another", r.algorithms_changed(),
                     r.algorithms.size());
}

std::string text_algorithms(const Report& r) {
  std::vector<Row> rows{{"", "case", "GEMM", "base", "new"}};
  for (auto& row : algorithm_rows(r, "CHANGED")) rows.push_back(std::move(row));
  return algorithms_heading(r) + ":\n" + aligned_table(rows);
}

std::string result_line(const Report& r) {
  std::string line = fmt::format("result: {} ({})\n", result_word(r), summary_line(r));
  if (r.nothing_compared()) line += fmt::format("nothing compared: {}\n", r.why_nothing_compared());
  if (const auto noisy = noisy_summary(r); !noisy.empty()) line += noisy + "\n";
  return line;
}

}  // namespace

std::string figure_label(const Comparison& c) {
  switch (c.metric) {
    case Metric::speedup: return "speedup over " + c.reference;
    case Metric::pct_of_copy: return "% of " + c.reference;
    case Metric::seconds: return "fastest time";
  }
  return "";
}

std::string noisy_summary(const Report& r) {
  std::vector<int> settle;
  std::size_t unsettled = 0, longer = 0;
  for (const auto& c : r.comparisons) {
    if (c.verdict != Verdict::noisy) continue;
    if (c.needs_longer_runs) ++longer;
    else if (c.runs_to_settle) settle.push_back(*c.runs_to_settle);
    else ++unsettled;
  }
  const std::size_t noisy = settle.size() + unsettled + longer;
  if (noisy == 0) return "";
  std::vector<std::string> parts;
  if (!settle.empty()) {
    const int most = *std::max_element(settle.begin(), settle.end());
    parts.push_back(settle.size() == noisy ? fmt::format("{} runs per side would settle them", most)
                                           : fmt::format("{} runs per side would settle {}", most, settle.size()));
  }
  if (unsettled > 0)
    parts.push_back(unsettled == noisy ? fmt::format("not even {} runs per side would settle them", kMostRunsToSuggest)
                                       : fmt::format("{} not even {} runs per side", unsettled, kMostRunsToSuggest));
  if (longer > 0)
    parts.push_back(fmt::format("{} stopped before their noise target in most runs of a side, and their own spread "
                                "leaves the verdict open: longer runs (--timeout) or a quieter machine would settle {}",
                                longer, longer == 1 ? "it" : "them"));
  return fmt::format("{} noisy case{} (inconclusive; never a failure): {}", noisy, noisy == 1 ? "" : "s",
                     fmt::join(parts, "; "));
}

std::string render_text(const Report& r) {
  std::vector<std::string> blocks;  // separated by blank lines
  blocks.push_back(fmt::format("mpbench compare\n  base: {}\n  new:  {}\n  {}\n",
                               side_line(r.base_sources, r.base_machine, shown),
                               side_line(r.current_sources, r.current_machine, shown),
                               fmt::join(what_is_compared(r.options), "\n  ")));
  if (!r.library_changes.empty()) blocks.push_back(fmt::format("library versions changed: {}\n", library_line(r)));
  blocks.push_back(text_environment(r));
  if (!r.comparisons.empty()) {
    std::vector<Row> rows{comparison_header()};
    for (const auto& c : r.comparisons) rows.push_back(comparison_row(c));
    blocks.push_back(aligned_table(rows));
  }
  if (r.show_algorithms()) blocks.push_back(text_algorithms(r));
  if (const auto changed = param_change_rows(r); !changed.empty())
    blocks.push_back("params changed (same case, other settings):\n" + aligned_table(changed));
  if (const auto lists = text_lists(r); !lists.empty()) blocks.push_back(lists);
  blocks.push_back(result_line(r));
  return fmt::format("{}", fmt::join(blocks, "\n"));
}

std::string render_markdown(const Report& r) {
  std::string out = fmt::format("### mpbench compare: {}\n\n",
                                r.regressed() ? "regression" : r.nothing_compared() ? "nothing compared" : "no regression");
  out += fmt::format("{}.\n\n", summary_line(r));
  if (!r.library_changes.empty()) out += fmt::format("**Library versions changed:** {}.\n\n", markdown_inline(library_line(r)));
  if (r.nothing_compared()) out += fmt::format("Nothing compared: {}.\n\n", r.why_nothing_compared());
  if (const auto noisy = noisy_summary(r); !noisy.empty()) out += noisy + ".\n\n";
  out += fmt::format("Base: {} · new: {} · {}.\n\n", side_line(r.base_sources, r.base_machine, markdown_inline),
                     side_line(r.current_sources, r.current_machine, markdown_inline),
                     fmt::join(what_is_compared(r.options), "; "));
  if (!r.comparisons.empty()) {
    std::vector<Row> rows;
    for (const auto& c : r.comparisons) {
      Row row = comparison_row(c);
      row[0] = markdown_verdict(c);
      rows.push_back(std::move(row));
    }
    out += markdown_table(comparison_header(), rows) + "\n";
  }
  if (r.show_algorithms())
    out += "#### " + algorithms_heading(r) + "\n\n" +
           markdown_table({"", "case", "GEMM", "base", "new"}, algorithm_rows(r, "⚠️ changed")) + "\n";
  if (const auto changed = param_change_rows(r); !changed.empty())
    out += "#### Params changed\n\n" + markdown_table({"case", "change"}, changed) + "\n";
  std::vector<Row> not_ok_rows;
  for (const auto& s : r.not_ok)
    if (!s.skipped_in_both())
      not_ok_rows.push_back({s.key.label(),
                             status_label(s) + (s.newly_failing() ? " (newly failing)" : s.cut_short ? " (not compared)" : ""),
                             s.message});
  if (!not_ok_rows.empty()) out += "#### Not ok\n\n" + markdown_table({"case", "status", "message"}, not_ok_rows) + "\n";
  if (r.skipped_in_both() > 0) out += fmt::format("Skipped in both runs: {} cases.\n\n", r.skipped_in_both());
  if (!r.added.empty()) out += fmt::format("**Added ({}):** {}\n\n", r.added.size(), keys_line(r.added, markdown_inline));
  if (!r.missing.empty()) out += fmt::format("**Missing ({}):** {}\n\n", r.missing.size(), keys_line(r.missing, markdown_inline));
  if (!r.environment.empty()) {
    std::vector<Row> rows;
    for (const auto& f : r.environment)
      rows.push_back({f.changed() ? "**" + f.field + "** (changed)" : f.field + (f.condition ? " (measured)" : ""),
                      dash_if_empty(f.base), dash_if_empty(f.current)});
    out += "#### Environment\n\n" + markdown_table({"", "base", "new"}, rows);
  }
  return out;
}

namespace {

nlohmann::json key_json(const CaseKey& k) {
  return {{"suite", k.suite}, {"name", k.name}, {"backend", k.backend}, {"precision", k.precision}};
}

nlohmann::json comparison_json(const Comparison& c) {
  auto j = key_json(c.key);
  j["metric"] = metric_name(c.metric);
  if (c.metric == Metric::speedup) j["baseline"] = c.reference;
  j.update({{"figure", figure_label(c)},
            {"reference", c.reference},
            {"base", c.base},
            {"new", c.current},
            {"change", c.change},
            {"interval", {c.change_low, c.change_high}},
            {"test", noise_test_name(c.test)},
            {"noise", c.noise},
            {"p_value", c.p_value ? nlohmann::json(*c.p_value) : nlohmann::json()},
            {"runs", {{"base", c.base_runs}, {"new", c.current_runs}}},
            {"unconverged_runs", c.unconverged_runs},
            {"short_of_noise_target", c.short_of_noise_target},
            {"needs_longer_runs", c.needs_longer_runs},
            {"verdict", verdict_name(c.verdict)},
            {"runs_to_settle", c.runs_to_settle ? nlohmann::json(*c.runs_to_settle) : nlohmann::json()},
            {"param_changes", c.param_changes}});
  return j;
}

nlohmann::json status_json(const StatusChange& s) {
  auto j = key_json(s.key);
  j.update({{"base_status", case_status_name(s.base)}, {"new_status", case_status_name(s.current)},
            {"newly_failing", s.newly_failing()}, {"skipped_in_both", s.skipped_in_both()}, {"cut_short", s.cut_short},
            {"message", s.message}});
  return j;
}

nlohmann::json choice_json(const std::optional<GemmChoice>& choice) {
  if (!choice) return nullptr;
  return {{"summary", choice->summary()}, {"algorithm", choice->identity}};
}

nlohmann::json algorithms_json(const Report& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : r.algorithms) {
    nlohmann::json gemms = nlohmann::json::array();
    for (const auto& g : a.gemms)
      gemms.push_back({{"gemm", g.gemm},
                       {"base", choice_json(g.base)},
                       {"new", choice_json(g.current)},
                       {"changed", g.changed()},
                       {"tensor_cores_changed", g.tensor_cores_changed()}});
    auto j = key_json(a.key);
    j.update({{"changed", a.changed()}, {"gemms", gemms}});
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json summary_json(const Report& r) {
  return {{"regressed", r.count(Verdict::regressed)}, {"newly_failing", r.newly_failing()},
          {"improved", r.count(Verdict::improved)},   {"noisy", r.count(Verdict::noisy)},
          {"same", r.count(Verdict::same)},           {"not_ok", r.not_ok.size()},
          {"skipped_in_both", r.skipped_in_both()},   {"added", r.added.size()},
          {"missing", r.missing.size()},              {"common_cases", r.common_cases},
          {"cut_short", r.cut_short()},               {"interrupted_sides", r.interrupted_sides}};
}

// report_json without its comparisons (an empty array in their place), which report_json and the
// streamed text add.
nlohmann::json report_json_without_comparisons(const Report& r) {
  nlohmann::json comparisons = nlohmann::json::array(), not_ok = nlohmann::json::array();
  nlohmann::json added = nlohmann::json::array(), missing = nlohmann::json::array();
  nlohmann::json environment = nlohmann::json::array();
  for (const auto& s : r.not_ok) not_ok.push_back(status_json(s));
  for (const auto& k : r.added) added.push_back(key_json(k));
  for (const auto& k : r.missing) missing.push_back(key_json(k));
  nlohmann::json libraries = nlohmann::json::array();
  for (const auto& f : r.library_changes) libraries.push_back({{"library", f.field}, {"base", f.base}, {"new", f.current}});
  for (const auto& f : r.environment)
    environment.push_back(
        {{"field", f.field}, {"base", f.base}, {"new", f.current}, {"changed", f.changed()}, {"condition", f.condition}});
  // Moved in: an initializer list would copy each array, a third of rendering 10k cases.
  return {{"base", r.base_sources},
          {"new", r.current_sources},
          {"machines", {{"base", r.base_machine}, {"new", r.current_machine}}},
          {"ignored_files", r.ignored_files},
          {"options",
           {{"threshold", r.options.threshold}, {"alpha", r.options.alpha}, {"absolute", r.options.absolute},
            {"baseline", r.options.baseline}, {"min_runs", r.options.min_runs}}},
          {"regressed", r.regressed()},
          {"nothing_compared", r.nothing_compared()},
          {"why_nothing_compared", r.why_nothing_compared()},
          {"exit_status", r.exit_code()},
          {"summary", summary_json(r)},
          {"noisy_summary", noisy_summary(r)},
          {"comparisons", std::move(comparisons)},
          {"not_ok", std::move(not_ok)},
          {"added", std::move(added)},
          {"missing", std::move(missing)},
          {"environment", std::move(environment)},
          {"library_changes", std::move(libraries)},
          {"algorithms_changed", r.algorithms_changed()},
          {"algorithms", algorithms_json(r)}};
}

// report_json(r).dump(2), the same text, written with each comparison dumped on its own: the
// report's JSON never exists whole (for 10^6 comparisons it took 2.7 GB and 21 s), nor its text
// (0.75 GB) where `out` is a file.
void write_json_text(std::ostream& out, const Report& r) {
  const std::string rest = report_json_without_comparisons(r).dump(2);
  if (r.comparisons.empty()) {
    out << rest;
    return;
  }
  const std::string empty = "\n  \"comparisons\": []";  // a top-level key: two spaces in, and only once
  const std::size_t at = rest.find(empty);
  out.write(rest.data(), static_cast<std::streamsize>(at));
  out << "\n  \"comparisons\": [";
  std::string indented;
  for (std::size_t i = 0; i < r.comparisons.size(); ++i) {
    indented = i == 0 ? "\n    " : ",\n    ";
    for (const char c : comparison_json(r.comparisons[i]).dump(2)) {
      indented += c;
      if (c == '\n') indented += "    ";
    }
    out << indented;
  }
  out << "\n  ]";
  out.write(rest.data() + at + empty.size(), static_cast<std::streamsize>(rest.size() - at - empty.size()));
}

}  // namespace

nlohmann::json report_json(const Report& r) {
  nlohmann::json j = report_json_without_comparisons(r);
  for (const auto& c : r.comparisons) j["comparisons"].push_back(comparison_json(c));
  return j;
}

std::string render(const Report& report, Format format) {
  if (format != Format::json) return format == Format::markdown ? render_markdown(report) : render_text(report);
  std::ostringstream out;
  write_rendered(out, report, format);
  return std::move(out).str();
}

void write_rendered(std::ostream& out, const Report& report, Format format) {
  if (format != Format::json) {
    out << render(report, format);
    return;
  }
  write_json_text(out, report);
  out << '\n';
}

}  // namespace mpbench::compare
