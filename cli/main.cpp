// mpbench: when, and why, does mixed precision speed training up on this machine?
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

namespace {

std::string command_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// A parse error of CLI11 as one line naming the command and where its options are listed: an
// argument it did not take (CLI11 checks required ones first, so that comes first) or CLI11's own
// words for the rest ("result is required").
std::string parse_error_line(CLI::App& app, const CLI::ParseError& e) {
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  const CLI::App& command = parsed.empty() ? app : *parsed.front();
  const std::string help = parsed.empty() ? "mpbench --help" : "mpbench " + command.get_name() + " --help";
  const std::string prefix = parsed.empty() ? "" : command.get_name() + ": ";
  const std::vector<std::string> extras = command.remaining();
  if (extras.empty()) return fmt::format("{}{}: see {}", prefix, e.what(), help);
  const std::string what = extras.front().rfind('-', 0) == 0 ? "unknown option" : "unexpected argument";
  return fmt::format("{}{} '{}': see {}", prefix, what, extras.front(), help);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mpbench: measures when, and why, mixed precision speeds training up on this machine"};
  app.set_version_flag("--version", mpbench::mpbench_version() + " (" + mpbench::mpbench_git_revision() + ")");
  app.require_subcommand(1);
  int exit_code = 0;
  mpbench::cli::add_env_command(app, exit_code);
  mpbench::cli::add_list_command(app, exit_code);
  mpbench::cli::add_run_command(app, exit_code);
  mpbench::cli::add_numerics_command(app, exit_code);
  mpbench::cli::add_policy_command(app, exit_code);
  mpbench::cli::add_compare_command(app, exit_code);
  mpbench::cli::add_explain_command(app, exit_code);
  mpbench::cli::add_history_command(app, exit_code);
  if (argc == 1) {  // the help, and why it came: a script that forgot its command must not pass
    std::fputs(app.help().c_str(), stderr);
    std::fprintf(stderr, "mpbench: error: give a command: one of %s\n", command_names(app).c_str());
    return 2;
  }
  if (argc > 1 && argv[1][0] == '-' && std::string(argv[1]) != "--help" && std::string(argv[1]) != "-h" &&
      std::string(argv[1]) != "--version") {
    std::fprintf(stderr, "mpbench: error: unknown option '%s' before the command: write mpbench COMMAND [OPTIONS] "
                 "(see mpbench --help)\n", mpbench::printable(argv[1]).c_str());
    return 2;
  }
  const auto commands = app.get_subcommands([](CLI::App*) { return true; });
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(commands.begin(), commands.end(), [&](const CLI::App* sub) { return sub->get_name() == argv[1]; })) {
    std::fprintf(stderr, "mpbench: error: unknown command '%s': use one of %s\n", mpbench::printable(argv[1]).c_str(),
                 command_names(app).c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "mpbench: error: %s\n", mpbench::printable(parse_error_line(app, e)).c_str());
    return 2;
  } catch (const mpbench::UsageError& e) {
    std::fprintf(stderr, "mpbench: error: %s\n", mpbench::printable(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpbench: error: %s\n", mpbench::printable(e.what()).c_str());
    return 1;
  }
  return exit_code;
}
