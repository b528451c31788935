// `mpbench compare BASE NEW` (or --base PATH... --new PATH...): parses the arguments, hands them to
// compare/ and prints its report. Exit status: compare::Report::exit_code(), or for mpbench against
// PyTorch (one side's documents all of backend torch/torch-compile) compare::PeerReport::exit_code();
// unusable input, and a report --out could not write, throw UsageError, which main() turns into exit 2.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "cli/commands.hpp"
#include "compare/peer.hpp"
#include "compare/render.hpp"
#include "compare/report.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace mpbench::cli {

namespace {

struct CompareArgs {
  std::vector<std::string> positional, base, current;
  std::string threshold = "5%";
  std::string format = "text";
  std::string baseline = "fp32";
  std::string out;
  const CLI::Option* out_option = nullptr;  // --out given at all: `--out ''` is not its absence
  std::string alpha = "0.01";
  int min_runs = 1;
  bool absolute = false;
};

using Paths = std::vector<std::filesystem::path>;

// BASE NEW, or every path after --base and after --new; not both forms.
std::pair<Paths, Paths> side_paths(const CompareArgs& args) {
  const bool listed = !args.base.empty() || !args.current.empty();
  if (listed && !args.positional.empty())
    throw UsageError("give the sides either as BASE NEW or with --base PATH... --new PATH..., not both");
  if (listed && (args.base.empty() || args.current.empty()))
    throw UsageError("--base and --new go together: give the paths of both sides");
  if (!listed && args.positional.size() != 2)
    throw UsageError(fmt::format("compare needs two sides, BASE NEW (got {} path{}), or --base PATH... --new PATH...",
                                 args.positional.size(), args.positional.size() == 1 ? "" : "s"));
  if (!listed) return {{args.positional[0]}, {args.positional[1]}};
  return {Paths(args.base.begin(), args.base.end()), Paths(args.current.begin(), args.current.end())};
}

std::string_view extension(compare::Format format) {
  switch (format) {
    case compare::Format::text: return "txt";
    case compare::Format::markdown: return "md";
    case compare::Format::json: return "json";
  }
  return "txt";
}

// What writes the report in the requested format.
using WriteReport = std::function<void(std::ostream&)>;

// Writes the report to `out`. Should that fail (a full disk, a folder gone), the report goes to a
// file of its own in the temporary folder, and the one error line says where: the text is already
// on stdout, but the requested format (a CI comment's markdown) is not lost.
void write_report(const std::string& out, const WriteReport& report, compare::Format format) {
  try {
    write_file_atomically(out, report);
    return;
  } catch (const UsageError& e) {
    std::error_code no_temp;
    const auto temp = std::filesystem::temp_directory_path(no_temp);
    const auto kept = temp / fmt::format("mpbench-compare-{}.{}", ::getpid(), extension(format));
    std::string where;
    try {
      if (no_temp) throw UsageError(fmt::format("no temporary folder: {}", no_temp.message()));
      write_file_atomically(kept, report);
      where = fmt::format("the report is kept in {}", kept.string());
    } catch (const UsageError& second) {
      where = fmt::format("nor could the report be kept in the temporary folder ({}): the text above is all there is",
                          second.what());
    }
    throw UsageError(fmt::format("{}; {}", e.what(), where));
  }
}

// The file gets the requested format (e.g. markdown for a CI comment), written on another thread,
// the log the text: printed as soon as it is made, so that the verdicts are on the screen whatever
// happens to the file; an error writing it comes after.
int print_and_write(const std::string& out, compare::Format format, const std::function<void()>& print_log,
                    const WriteReport& report, int exit_code) {
  auto written = std::async(std::launch::async, [&] { write_report(out, report, format); });
  try {
    print_log();
    std::fflush(stdout);
  } catch (...) {
    written.wait();
    throw;
  }
  written.get();
  return exit_code;
}

// A report holds its own copies of all it says: the cases can go before it is written, which for
// a million cases a side needs as much memory again.
void release(compare::Side& side) { std::vector<compare::Run>().swap(side.runs); }

// Both sides read at once, one on another thread (reading is most of comparing large documents);
// where both are unusable, the base's error is the one said, as when they were read in turn.
std::pair<compare::Side, compare::Side> load_sides(const std::vector<std::filesystem::path>& base_paths,
                                                   const std::vector<std::filesystem::path>& current_paths) {
  auto current = std::async(std::launch::async, [&] { return compare::load_side("new", current_paths); });
  std::optional<compare::Side> base;
  try {
    base = compare::load_side("base", base_paths);
  } catch (...) {
    current.wait();
    throw;
  }
  return {std::move(*base), current.get()};
}

int run_compare(const CompareArgs& args) {
  compare::Options options;
  options.threshold = compare::parse_threshold(args.threshold);
  options.alpha = compare::parse_alpha(args.alpha);
  options.absolute = args.absolute;
  options.baseline = args.baseline;
  options.min_runs = args.min_runs;
  const compare::Format format = compare::parse_format(args.format);
  const bool to_file = args.out_option->count() > 0;
  if (to_file && args.out.empty())
    throw UsageError("--out '' names no file: give the report's file name, or leave --out out to print the report");
  if (to_file) check_writable(args.out);

  const auto [base_paths, current_paths] = side_paths(args);
  if (to_file) {
    for (const auto& path : base_paths) refuse_overwriting({"--out", args.out}, {"BASE", path});
    for (const auto& path : current_paths) refuse_overwriting({"--out", args.out}, {"NEW", path});
  }
  auto [base, current] = load_sides(base_paths, current_paths);
  if (compare::is_peer_comparison(base, current)) {
    const auto report = compare::compare_peers(base, current, options);
    if (!to_file) {
      fmt::print("{}", compare::render_peer(report, format));
      return report.exit_code();
    }
    const auto text = [&report] { fmt::print("{}", compare::render_peer_text(report)); };
    const WriteReport write = [&](std::ostream& o) { o << compare::render_peer(report, format); };
    return print_and_write(args.out, format, text, write, report.exit_code());
  }
  const auto report = compare::compare(base, current, options);
  release(base);
  release(current);
  if (!to_file) {
    fmt::print("{}", compare::render(report, format));
    return report.exit_code();
  }
  if (format == compare::Format::text) {  // the log and the file: one text, made once
    const std::string text = compare::render_text(report);
    return print_and_write(args.out, format, [&text] { fmt::print("{}", text); },
                           [&text](std::ostream& o) { o << text; }, report.exit_code());
  }
  const auto text = [&report] { fmt::print("{}", compare::render_text(report)); };
  const WriteReport write = [&](std::ostream& o) { compare::write_rendered(o, report, format); };
  return print_and_write(args.out, format, text, write, report.exit_code());
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare result documents case by case, one run or several per side; exit 1 on a regression, 3 when nothing "
      "could be compared. mpbench's documents against PyTorch's (scripts/torch_baseline.py) are paired by case: "
      "mpbench vs PyTorch, exit 0 when a pair was compared, 3 when none");
  cmd->add_option("sides", args->positional, "BASE NEW: a result document or a folder of them (repeated runs) each");
  cmd->add_option("--base", args->base, "the base side's documents and folders (instead of BASE NEW)")
      ->expected(1, -1);
  cmd->add_option("--new", args->current, "the new side's documents and folders (instead of BASE NEW)")
      ->expected(1, -1);
  cmd->add_option("--threshold", args->threshold,
                  "smallest relative change that counts, e.g. 5% or 0.05 (default 5%)");
  cmd->add_option("--min-runs", args->min_runs, "runs each side must have (default 1)")->check(CLI::Range(1, 1000));
  cmd->add_flag("--absolute", args->absolute, "also compare the median time of cases tracked by a ratio");
  cmd->add_option("--format", args->format, "text, markdown or json (default text)");
  cmd->add_option("--baseline", args->baseline, "precision the speedups are taken over (default fp32)");
  cmd->add_option("--alpha", args->alpha, "significance level of the tests, 1e-9 to 0.5; intervals are 1 - alpha (default 0.01)");
  args->out_option = cmd->add_option("--out", args->out, "write the report to FILE in --format; the text goes to stdout");
  cmd->callback([args, &exit_code] { exit_code = run_compare(*args); });
}

}  // namespace mpbench::cli
