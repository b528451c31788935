// `mpbench compare BASE NEW`: exit 0 when nothing regressed, 1 when something did; unusable input
// throws UsageError, which main() turns into exit 2.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/compare.hpp"

namespace mpbench::cli {

namespace {

struct CompareArgs {
  std::string base, current;
  std::string threshold = "5%";
  std::string format = "text";
  std::string baseline = "fp32";
  std::string out;
  double alpha = 0.05;
  bool absolute = false;
};

int run_compare(const CompareArgs& args) {
  compare::Options options;
  options.threshold = compare::parse_threshold(args.threshold);
  options.alpha = args.alpha;
  options.absolute = args.absolute;
  options.baseline = args.baseline;
  const compare::Format format = compare::parse_format(args.format);
  if (!args.out.empty()) check_writable(args.out);

  const auto base = compare::load_result_set(args.base, options.baseline);
  const auto current = compare::load_result_set(args.current, options.baseline);
  const auto report = compare::compare(base, current, options);
  if (args.out.empty()) {
    fmt::print("{}", compare::render(report, format));
  } else {
    // The file gets the requested format (e.g. markdown for a CI comment), the log the text.
    write_file_atomically(args.out, compare::render(report, format));
    fmt::print("{}", compare::render_text(report));
  }
  return report.exit_code();
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare", "Compare two result documents (or folders of them) case by case; exit 1 on a regression");
  cmd->add_option("base", args->base, "baseline result document, or a folder of them")->required();
  cmd->add_option("new", args->current, "new result document, or a folder of them")->required();
  cmd->add_option("--threshold", args->threshold,
                  "smallest relative change that counts, e.g. 5% or 0.05 (default 5%)");
  cmd->add_flag("--absolute", args->absolute, "also compare median times, not only speedups");
  cmd->add_option("--format", args->format, "text, markdown or json (default text)");
  cmd->add_option("--baseline", args->baseline, "precision the speedups are taken over (default fp32)");
  cmd->add_option("--alpha", args->alpha, "significance level of the rank test on samples (default 0.05)")
      ->check(CLI::Range(1e-9, 0.5));
  cmd->add_option("--out", args->out, "write the report to FILE in --format; the text goes to stdout");
  cmd->callback([args, &exit_code] { exit_code = run_compare(*args); });
}

}  // namespace mpbench::cli
