// `mpbench explain RESULT.json [--baseline fp32] [--peer TORCH.json] [--against OLD.json]
// [--noise OTHER_SEED.json] [--json]`
// (or `mpbench explain --list-rules`: the rules' table):
// why each precision is or is not faster than the baseline, from what the result document recorded;
// with --peer mpbench against PyTorch's document of the same cases; with --against the same cases
// under other library versions, naming a changed GEMM algorithm as the cause of a changed speedup. A malformed document is a UsageError (exit 2).
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/result.hpp"
#include "profiler/against.hpp"
#include "profiler/explain.hpp"
#include "compare/sides.hpp"
#include "profiler/peer.hpp"
#include "profiler/rules.hpp"

namespace mpbench::cli {

namespace {

struct ExplainArgs {
  std::string result;
  std::string baseline = "fp32";
  std::string peer;
  std::string against;
  std::string noise;
  bool json = false;
  bool list_rules = false;
};

// The PyTorch document of --peer, checked to be one, beside an mpbench RESULT.
ResultDocument load_peer(const ExplainArgs& args, const ResultDocument& document) {
  if (compare::is_torch_document(document))
    throw UsageError(fmt::format("'{}' is PyTorch's document (backend torch): give mpbench's as RESULT and PyTorch's "
                                 "with --peer",
                                 args.result));
  ResultDocument peer = load_result(args.peer);
  if (!compare::is_torch_document(peer))
    throw UsageError(fmt::format("--peer '{}' holds cases of other backends than torch and torch-compile: --peer "
                                 "takes a document of scripts/torch_baseline.py",
                                 args.peer));
  return peer;
}

// The mpbench document a second option names (--against, --noise), refused when it is PyTorch's;
// `takes` says what the option takes instead.
ResultDocument load_other_mpbench_document(const std::string& option, const std::string& path,
                                           std::string_view takes) {
  ResultDocument other = load_result(path);
  if (compare::is_torch_document(other))
    throw UsageError(fmt::format("{} '{}' is PyTorch's document (backend torch): {} takes {}", option, path, option,
                                 takes));
  return other;
}

int run_explain(const ExplainArgs& args) {
  if (args.list_rules) {
    fmt::print("{}", profiler::rules_text());
    return 0;
  }
  if (args.result.empty()) throw UsageError("explain: result is required: see mpbench explain --help");  // as CLI11 says it
  const ResultDocument document = load_result(args.result);
  const auto peer = args.peer.empty() ? std::optional<ResultDocument>() : load_peer(args, document);
  const auto noise = args.noise.empty() ? std::optional<ResultDocument>()
                                         : load_other_mpbench_document("--noise", args.noise,
                                                                       "mpbench's run of the same cases with another --seed");
  auto explanation = [&] {
    try {
      return profiler::explain(document, args.baseline, noise ? &*noise : nullptr);
    } catch (const UsageError& e) {  // what the document lacks: say which document
      throw UsageError(fmt::format("'{}': {}", args.result, e.what()));
    }
  }();
  if (peer) {
    explanation.peer_label = profiler::peer_label(*peer);
    explanation.peer = profiler::peer_findings(document, *peer, args.baseline);
  }
  if (!args.against.empty()) {
    const ResultDocument old = load_other_mpbench_document(
        "--against", args.against, "an mpbench document of the same cases, --peer PyTorch's");
    explanation.against_label = args.against;
    try {
      explanation.against = profiler::against_findings(document, explanation, old, args.baseline);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--against '{}': {}", args.against, e.what()));
    }
  }
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
  cmd->add_option("result", args->result, "result document written by mpbench run (required unless --list-rules)");
  cmd->add_option("--baseline", args->baseline, "precision the speedups are taken over (default fp32)");
  cmd->add_option("--peer", args->peer,
                  "PyTorch's document of the same cases (scripts/torch_baseline.py): mpbench against PyTorch per "
                  "suite and precision, and where PyTorch's low-precision path is much slower than the hardware allows");
  cmd->add_option("--against", args->against,
                  "mpbench's document of the same cases under other library versions (another CUDA, cuBLAS or "
                  "driver): names a changed GEMM algorithm as the cause where a speedup moved");
  cmd->add_option("--noise", args->noise,
                  "mpbench's document of the same transformer run with another --seed: its bf16 losses against "
                  "RESULT's are the noise the fp8 modes' loss drift is judged by (without it: 3% of bf16's loss)");
  cmd->add_flag("--json", args->json, "print the explanation as JSON");
  cmd->add_flag("--list-rules", args->list_rules,
                "print explain's rules (name, what each reads, its threshold, the fix it names) and exit");
  cmd->callback([args, &exit_code] { exit_code = run_explain(*args); });
}

}  // namespace mpbench::cli
