// mpbench list [--suite S[,S...]] [--device D] [--quick] [--cpu-gemm G] [--cpu-isa I]: the device's
// capability table, then the suites and the cases they would run there.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "backends/cpu/isa.hpp"
#include "backends/registry.hpp"
#include "cli/commands.hpp"
#include "cli/suite_selection.hpp"
#include "workloads/model.hpp"
#include "workloads/transformer_suite.hpp"

namespace mpbench::cli {

namespace {

// " (converted)" or " (skipped: why)" after a case that does not run natively.
std::string path_note(const Backend& backend, GemmPrecision precision, const std::optional<std::string>& skipped) {
  if (skipped) return fmt::format("  (skipped: {})", *skipped);
  return backend.capabilities().path(precision) == GemmPath::converted ? "  (converted)" : "";
}

void list_microbenchmark(const microbench::Suite& suite, Backend& backend, bool quick) {
  microbench::SuiteOptions options;
  options.quick = quick;
  const auto cases = suite.cases(backend, options);
  fmt::print("{} — {}\n  precisions: {}\n  {} cases on {}:\n", suite.name, suite.description,
             fmt::join(suite.precisions, ", "), cases.size(), backend.device().name);
  for (const auto& c : cases) {
    const bool gemm = suite.name == "gemm";
    const std::string note = gemm ? path_note(backend, parse_gemm_precision(c.precision), c.skip_reason)
                             : c.skip_reason ? fmt::format("  (skipped: {})", *c.skip_reason)
                                             : "";
    fmt::print("    {}{}\n", c.id(), note);
  }
}

// "fp16 GEMMs converted" or "tf32 GEMMs unsupported, skipped: why": how a mode's GEMMs run on the
// device (the reasons for native and converted are the capability table's, printed above).
std::string mode_note(const Backend& backend, amp::Mode mode) {
  const GemmCapability row = workloads::workload_gemm_capability(backend.capabilities(), workloads::gemm_precision(mode));
  const std::string gemms = fmt::format("{} GEMMs {}", gemm_precision_info(row.precision).name, gemm_path_name(row.path));
  return row.path == GemmPath::unsupported ? fmt::format("{}, skipped: {}", gemms, row.reason) : gemms;
}

// The transformer's modes on this device: those `run --suite transformer` trains, then those it
// runs only when --precision names them (the fp8 modes), each with how its GEMMs run.
void list_transformer(const Backend& backend, bool quick) {
  workloads::TransformerSuiteOptions options;
  options.quick = quick;
  const workloads::TransformerPlan plan = workloads::plan_transformer_run(options, backend.device());
  std::vector<amp::Mode> others;
  for (const amp::ModePolicy& p : amp::all_policies())
    if (std::find(plan.modes.begin(), plan.modes.end(), p.mode) == plan.modes.end()) others.push_back(p.mode);
  const auto id = [&plan](amp::Mode mode) {
    return fmt::format("{}/{}/{}", workloads::kTransformerSuite, plan.case_name(), amp::mode_name(mode));
  };
  std::size_t width = 0;
  for (const amp::ModePolicy& p : amp::all_policies()) width = std::max(width, id(p.mode).size());
  const auto print_modes = [&](const std::vector<amp::Mode>& modes) {
    for (amp::Mode mode : modes) fmt::print("    {:<{}}  {}\n", id(mode), width, mode_note(backend, mode));
  };
  fmt::print("{} — {}\n  precisions (modes): {}\n  {} training modes on {}, case {} ({} steps), with how their GEMMs run:\n",
             workloads::kTransformerSuite, workloads::kTransformerSuiteDescription, amp::mode_names(),
             plan.modes.size(), backend.device().name, plan.case_name(), plan.train.steps);
  print_modes(plan.modes);
  if (others.empty()) return;
  std::vector<std::string_view> names;
  for (amp::Mode mode : others) names.push_back(amp::mode_name(mode));
  fmt::print("  in a run only when --precision names them ({}):\n", fmt::join(names, ","));
  print_modes(others);
}

}  // namespace

void add_list_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "list", "show the device's capability table (per GEMM precision: native, converted or unsupported, and why) "
              "and the cases each suite runs there");
  auto suites = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"all"});
  auto device = std::make_shared<std::string>("auto");
  auto quick = std::make_shared<bool>(false);
  auto cpu_gemm = std::make_shared<std::string>("auto");
  auto cpu_isa = std::make_shared<std::string>();
  cmd->add_option("--suite", *suites, fmt::format("{} or all (repeat or comma-separate)", fmt::join(suite_names(), ", ")))
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--device", *device, "auto, cuda, cuda:N or cpu: sizes follow the device's cache and memory")->capture_default_str();
  cmd->add_flag("--quick", *quick, "the cases of a --quick run");
  cmd->add_option("--cpu-gemm", *cpu_gemm, "auto, native or converted: as `run --cpu-gemm`")
      ->check(CLI::IsMember({"auto", "native", "converted"}))
      ->capture_default_str();
  cmd->add_option("--cpu-isa", *cpu_isa, fmt::format("as `run --cpu-isa`: {}", fmt::join(cpu::isa_names(), ", ")));
  cmd->callback([suites, device, quick, cpu_gemm, cpu_isa, &exit_code] {
    const SuiteSelection selection = select_suites(*suites);
    if (!cpu_isa->empty()) cpu::limit_isa(*cpu_isa);
    BackendChoice choice = choose_backend(*device, {cpu::parse_gemm_path_choice(*cpu_gemm)});
    if (!choice.note.empty()) fmt::print(stderr, "mpbench: note: {}\n", choice.note);
    Backend& backend = *choice.backend;
    fmt::print("capabilities of {} ({}):\n{}\n", backend.device().name, backend.device().backend,
               backend.capabilities().to_text());
    for (const auto* suite : selection.microbenchmarks) list_microbenchmark(*suite, backend, *quick);
    if (selection.transformer) list_transformer(backend, *quick);
    exit_code = 0;
  });
}

}  // namespace mpbench::cli
