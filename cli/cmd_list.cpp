// mpbench list [--suite S] [--device D] [--quick]: the suites and the cases they would run here.
#include <fmt/format.h>

#include "backends/registry.hpp"
#include "cli/commands.hpp"
#include "microbench/suite.hpp"

namespace mpbench::cli {

void add_list_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("list", "list the suites and the cases each runs on the chosen device");
  auto suite = std::make_shared<std::string>("all");
  auto device = std::make_shared<std::string>("auto");
  auto quick = std::make_shared<bool>(false);
  cmd->add_option("--suite", *suite, "gemm, bandwidth, cast or all")->capture_default_str();
  cmd->add_option("--device", *device, "auto, cuda, cuda:N or cpu: sizes follow the device's cache and memory")->capture_default_str();
  cmd->add_flag("--quick", *quick, "the cases of a --quick run");
  cmd->callback([suite, device, quick, &exit_code] {
    std::vector<const microbench::Suite*> chosen;
    if (*suite == "all") for (const auto& s : microbench::suites()) chosen.push_back(&s);
    else chosen.push_back(&microbench::find_suite(*suite));
    BackendChoice choice = choose_backend(*device);
    if (!choice.note.empty()) fmt::print(stderr, "mpbench: note: {}\n", choice.note);
    microbench::SuiteOptions options;
    options.quick = *quick;
    for (const auto* s : chosen) {
      const auto cases = s->cases(*choice.backend, options);
      fmt::print("{} — {}\n  precisions: {}\n  {} cases on {}:\n", s->name, s->description, fmt::join(s->precisions, ", "),
                 cases.size(), choice.backend->device().name);
      for (const auto& c : cases)
        fmt::print("    {}{}\n", c.id(), c.skip_reason ? fmt::format("  (skipped: {})", *c.skip_reason) : "");
    }
    exit_code = 0;
  });
}

}  // namespace mpbench::cli
