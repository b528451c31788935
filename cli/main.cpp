// mpbench: when, and why, does mixed precision speed training up on this machine?
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

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
  if (argc > 1 && argv[1][0] == '-' && std::string(argv[1]) != "--help" && std::string(argv[1]) != "-h" &&
      std::string(argv[1]) != "--version") {
    std::fprintf(stderr, "mpbench: error: unknown option '%s' before the command: write mpbench COMMAND [OPTIONS] "
                 "(see mpbench --help)\n", mpbench::printable(argv[1]).c_str());
    return 2;
  }
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known |= sub->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr, "mpbench: error: unknown command '%s': use one of %s\n", mpbench::printable(argv[1]).c_str(),
                   names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "mpbench: error: %s (see mpbench --help, or mpbench COMMAND --help)\n",
                 mpbench::printable(e.what()).c_str());
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
