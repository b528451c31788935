// `mpbench explain RESULT.json [--baseline fp32] [--json]`: why each precision is or is not faster
// than the baseline, from what the result document recorded. A malformed document is a UsageError
// (exit 2).
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/result.hpp"
#include "profiler/explain.hpp"

namespace mpbench::cli {

namespace {

struct ExplainArgs {
  std::string result;
  std::string baseline = "fp32";
  bool json = false;
};

int run_explain(const ExplainArgs& args) {
  const ResultDocument document = load_result(args.result);
  const auto explanation = [&] {
    try {
      return profiler::explain(document, args.baseline);
    } catch (const UsageError& e) {  // what the document lacks: say which document
      throw UsageError(fmt::format("'{}': {}", args.result, e.what()));
    }
  }();
  if (args.json) fmt::print("{}\n", explanation.to_json().dump(2));
  else fmt::print("{}", explanation.to_text());
  return 0;
}

}  // namespace

void add_explain_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExplainArgs>();
  auto* cmd = app.add_subcommand(
      "explain", "Explain each precision's speedup over the baseline from a result document: the time by kernel "
                 "category (Amdahl) and the rules that fired, with their evidence");
  cmd->add_option("result", args->result, "result document written by mpbench run")->required();
  cmd->add_option("--baseline", args->baseline, "precision the speedups are taken over (default fp32)");
  cmd->add_flag("--json", args->json, "print the explanation as JSON");
  cmd->callback([args, &exit_code] { exit_code = run_explain(*args); });
}

}  // namespace mpbench::cli
