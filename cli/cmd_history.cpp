// `mpbench history add|show|check|export DB ...`: a result history in one SQLite file, or on a
// PostgreSQL server where DB is a postgresql:// URL (history/store.hpp). add stores runs; show prints each series' latest figure and its trend; check
// judges a new run against the last runs of its series with compare's statistics and exits as
// compare does (0 no regression, 1 regressed, 3 nothing compared); export writes every stored case
// as JSON or CSV. Bad input (a malformed document, a foreign or newer file) exits 2.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "compare/algorithms.hpp"
#include "compare/environment.hpp"
#include "compare/render.hpp"
#include "compare/report.hpp"
#include "core/error.hpp"
#include "core/figure_text.hpp"
#include "core/user_regex.hpp"
#include "history/series.hpp"
#include "history/store.hpp"

namespace mpbench::cli {

namespace {

// The runs of each series check looks for change points in: the recent past, so that check takes
// the same time on a history of any length.
constexpr std::size_t kChangePointRuns = 200;

struct HistoryArgs {
  std::string db;
  std::vector<std::string> documents;
  std::string machine, filter, format = "text";
  int last = 10;
  std::optional<int> latest;  // export: the whole documents of each machine's last runs
};

std::string figure_text(compare::Metric metric, double value) {
  switch (metric) {
    case compare::Metric::speedup: return printed_speedup(value);
    case compare::Metric::pct_of_copy: return printed_share(value);
    case compare::Metric::seconds: return fmt::format("{:.4g} s", value);
  }
  return "";
}

// "run 12 of 2026-12-04 (abc123) to run 13 of 2026-12-05 (def456)": where a series changed.
std::string run_text(const history::StoredCase* c) {
  if (!c) return "the new run";
  return fmt::format("run {} of {}{}", c->run, c->created, c->revision.empty() ? "" : fmt::format(" ({})", c->revision));
}

void print_changes(const std::vector<history::SeriesChange>& changes, compare::Metric metric) {
  for (const auto& c : changes)
    fmt::print("    change point: {} -> {} ({:+.1f}%, p={:.3g}) between {} and {}\n", figure_text(metric, c.point.before),
               figure_text(metric, c.point.after), 100 * c.point.relative_change, c.point.p_value, run_text(c.before),
               run_text(c.after));
}

int run_add(const HistoryArgs& args) {
  history::Store store(args.db, history::Store::Mode::write);
  const std::vector<std::filesystem::path> paths(args.documents.begin(), args.documents.end());
  for (const auto& outcome : store.add(paths))
    fmt::print("{}: {}\n", outcome.source,
               outcome.duplicate ? "already in the history (the same document by content): not stored again"
                                 : fmt::format("stored, {} case{}", outcome.cases, outcome.cases == 1 ? "" : "s"));
  fmt::print("history {}: {} run{}\n", store.name(), store.runs(), store.runs() == 1 ? "" : "s");
  return 0;
}

std::optional<std::regex> filter_of(const HistoryArgs& args) {
  if (args.filter.empty()) return std::nullopt;
  return user_regex("--filter", args.filter);
}

// The latest figure of each series, its change over the last --last runs and their range.
int run_show(const HistoryArgs& args) {
  const history::Store store(args.db, history::Store::Mode::read);
  const auto series = history::series_of(store.cases(), args.machine, filter_of(args));
  if (series.empty()) {
    fmt::print("history {}: no series{}\n", store.name(), args.machine.empty() && args.filter.empty() ? "" : " selected");
    return 0;
  }
  std::string machine;
  for (const auto& s : series) {
    if (s.machine != machine) fmt::print("{}{}:\n", machine.empty() ? "" : "\n", machine = s.machine);
    const auto metric = history::tracked_metric(s);
    if (!metric) {
      fmt::print("  {}: {} run(s), none ok (latest: {})\n", s.label(), s.runs.size(), s.runs.back().status);
      continue;
    }
    std::vector<double> recent;
    for (auto it = s.runs.rbegin(); it != s.runs.rend() && recent.size() < static_cast<std::size_t>(args.last); ++it)
      if (const auto& f = history::figure_of(*it, *metric); f && it->status == "ok") recent.push_back(f->value);
    std::reverse(recent.begin(), recent.end());
    const auto [low, high] = std::minmax_element(recent.begin(), recent.end());
    fmt::print("  {}: {} {} (run of {}), over the last {} run(s) {:+.1f}%, range {} to {}\n", s.label(),
               compare::metric_name(*metric), figure_text(*metric, recent.back()), s.runs.back().created,
               recent.size(), 100 * (recent.back() / recent.front() - 1), figure_text(*metric, *low),
               figure_text(*metric, *high));
    print_changes(history::changes_of(s, *metric), *metric);
  }
  return 0;
}

// The change points of each series of the run, its own figure the last point: when a drift began,
// which one run against a window cannot say. Context for the verdicts, which alone set the exit.
void print_series_changes(const std::vector<history::Series>& series, const ResultDocument& run) {
  const std::string machine = compare::machine_of(run);
  const compare::CaseIndex index(run);
  bool any = false;
  for (const auto& s : series) {
    if (s.machine != machine) continue;
    const auto c = std::find_if(run.cases.begin(), run.cases.end(), [&](const CaseResult& r) {
      return r.status == CaseStatus::ok && compare::key_of(r) == s.key;
    });
    const auto metric = history::tracked_metric(s);
    if (c == run.cases.end() || !metric) continue;
    const history::StoredCase figures = history::figures_of(index, *c);
    const auto& now = history::figure_of(figures, *metric);
    const auto changes = history::changes_of(s, *metric, now ? std::optional<double>(now->value) : std::nullopt);
    if (changes.empty()) continue;
    if (!any)
      fmt::print("\nchange points over the last {} runs of each series, this run last (E-Divisive means, alpha "
                 "0.01):\n",
                 kChangePointRuns);
    any = true;
    fmt::print("  {}:\n", s.label());
    print_changes(changes, *metric);
  }
}

int run_check(const HistoryArgs& args) {
  if (args.documents.size() != 1) throw UsageError("history check needs one RESULT document to check");
  const history::Store store(args.db, history::Store::Mode::read);
  const auto json = read_document_json(args.documents.front());
  const ResultDocument run = result_from_json(args.documents.front(), json);
  const auto stored_as = store.run_with_hash(history::content_hash(json));
  const std::string machine = compare::machine_of(run);
  const std::size_t runs = std::max<std::size_t>(static_cast<std::size_t>(args.last), kChangePointRuns) + 1;
  const auto series = history::series_of(store.cases(machine, runs), "", std::nullopt);
  compare::Report report;
  report.current_sources = {args.documents.front()};
  report.base_machine = report.current_machine = machine;
  report.comparisons = history::check_run(series, run, stored_as, static_cast<std::size_t>(args.last), report.options);
  report.common_cases = report.comparisons.size();
  if (report.comparisons.empty()) {
    fmt::print("history check: nothing compared: no ok case of {} has an earlier run of its series on {} in {}\n",
               args.documents.front(), report.current_machine, store.name());
    return compare::kExitNothingCompared;
  }
  // The machine's last runs are the base side, as the report names them, and their environment is
  // set against the new run's: a driver or library that changed is named beside the verdicts.
  const compare::Side window{"history", store.last_runs(machine, args.last, stored_as), {}};
  const compare::Side current{"new", {{args.documents.front(), run}}, {}};
  report.base_sources = window.sources();
  report.environment = compare::environment_fields(window, current);
  report.library_changes = compare::library_changes(report.environment);
  std::stable_sort(report.comparisons.begin(), report.comparisons.end(),
                   [](const auto& x, const auto& y) { return x.verdict < y.verdict; });
  const auto format = compare::parse_format(args.format);
  fmt::print("{}", compare::render(report, format));
  if (format != compare::Format::json) print_series_changes(series, run);
  return report.exit_code();
}

nlohmann::json figure_json(const std::optional<compare::RunFigure>& f) {
  if (!f) return nullptr;
  return {{"value", f->value}, {"spread", f->spread}, {"reference", f->reference}};
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_number(const std::optional<compare::RunFigure>& f) { return f ? fmt::format("{}", f->value) : ""; }

// The documents of each machine's last `count` runs, whole, as JSON: what report.py's
// hardware-selection plots read from a history.
int export_latest(const history::Store& store, int count) {
  nlohmann::json documents = nlohmann::json::array();
  for (const auto& d : store.latest_documents(static_cast<std::size_t>(count)))
    documents.push_back({{"run", d.run}, {"machine", d.machine}, {"source", d.source},
                         {"document", nlohmann::json::parse(d.document)}});
  fmt::print("{}\n", nlohmann::json{{"documents", documents}}.dump(1));
  return 0;
}

int run_export(const HistoryArgs& args) {
  if (args.latest && args.format != "json")
    throw UsageError(fmt::format("history export --latest writes whole documents, as JSON only: --format '{}' "
                                 "does not apply (leave it out or give json)",
                                 args.format));
  const history::Store store(args.db, history::Store::Mode::read);
  if (args.latest) return export_latest(store, *args.latest);
  const auto cases = store.cases();
  if (args.format == "json") {
    nlohmann::json rows = nlohmann::json::array(), changes = nlohmann::json::array();
    for (const auto& c : cases)
      rows.push_back({{"run", c.run}, {"created", c.created}, {"revision", c.revision}, {"source", c.source},
                      {"machine", c.machine}, {"suite", c.suite}, {"name", c.name}, {"backend", c.backend},
                      {"precision", c.precision}, {"status", c.status}, {"speedup", figure_json(c.speedup)},
                      {"pct_of_copy", figure_json(c.pct_of_copy)}, {"seconds", figure_json(c.seconds)}});
    for (const auto& s : history::series_of(cases, "", std::nullopt)) {
      const auto metric = history::tracked_metric(s);
      if (!metric) continue;
      for (const auto& c : history::changes_of(s, *metric))
        changes.push_back({{"machine", s.machine}, {"case", s.label()}, {"metric", compare::metric_name(*metric)},
                           {"run_before", c.before->run}, {"run_after", c.after->run}, {"before", c.point.before},
                           {"after", c.point.after}, {"relative_change", c.point.relative_change},
                           {"low", c.point.low}, {"high", c.point.high}, {"p_value", c.point.p_value}});
    }
    fmt::print("{}\n", nlohmann::json{{"cases", rows}, {"change_points", changes}}.dump(1));
    return 0;
  }
  if (args.format != "csv") throw UsageError(fmt::format("bad --format '{}': json or csv", args.format));
  fmt::print("run,created,revision,machine,suite,name,backend,precision,status,speedup,pct_of_copy,seconds\n");
  for (const auto& c : cases)
    fmt::print("{},{},{},{},{},{},{},{},{},{},{},{}\n", c.run, csv_field(c.created), csv_field(c.revision),
               csv_field(c.machine), csv_field(c.suite), csv_field(c.name), csv_field(c.backend),
               csv_field(c.precision), c.status, csv_number(c.speedup), csv_number(c.pct_of_copy),
               csv_number(c.seconds));
  return 0;
}

}  // namespace

void add_history_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("history",
                                 "A result history in one SQLite file or on a PostgreSQL server (DB a postgresql:// URL): add runs, show each series' trend, check a new "
                                 "run against its series (exit as compare: 1 regressed, 3 nothing compared), export");
  cmd->require_subcommand(1);
  auto args = std::make_shared<HistoryArgs>();
  auto* add = cmd->add_subcommand("add", "store result documents (a document stored before is not stored again)");
  add->add_option("db", args->db, "the history: a file (created when missing) or a postgresql:// URL (its tables created when missing)")->required();
  add->add_option("results", args->documents, "result documents")->required();
  add->callback([args, &exit_code] { exit_code = run_add(*args); });

  auto* show = cmd->add_subcommand("show", "each series' latest figure, its change over the last runs and their range");
  show->add_option("db", args->db, "the history: a file or a postgresql:// URL")->required();
  show->add_option("--machine", args->machine, "only machines whose name contains this");
  show->add_option("--filter", args->filter, "regular expression on suite/name/backend/precision");
  show->add_option("--last", args->last, "runs the trend is over (default 10)")->check(CLI::Range(1, 100000));
  show->callback([args, &exit_code] { exit_code = run_show(*args); });

  auto* check = cmd->add_subcommand(
      "check", "judge RESULT against the last runs of each of its series, as compare judges a new run against "
               "several base runs; exit 0 no regression, 1 regressed, 3 nothing compared");
  check->add_option("db", args->db, "the history: a file or a postgresql:// URL")->required();
  check->add_option("result", args->documents, "the new result document")->required()->expected(1);
  check->add_option("--last", args->last, "runs of each series to judge against (default 10)")
      ->check(CLI::Range(1, 100000));
  check->add_option("--format", args->format, "text, markdown or json (default text)");
  check->callback([args, &exit_code] { exit_code = run_check(*args); });

  auto* exported = cmd->add_subcommand(
      "export", "every stored case with its figures, as JSON or CSV on stdout; with --latest N, the whole "
                "documents of each machine's last N runs instead (JSON)");
  exported->add_option("db", args->db, "the history: a file or a postgresql:// URL")->required();
  exported->add_option("--format", args->format, "json or csv (default csv; json with --latest)")->default_str("csv");
  exported->add_option("--latest", args->latest, "the whole documents of each machine's last N runs, as JSON")
      ->check(CLI::Range(1, 100000));
  exported->callback([args, &exit_code] {
    if (args->format == "text") args->format = args->latest ? "json" : "csv";
    exit_code = run_export(*args);
  });
}

}  // namespace mpbench::cli
