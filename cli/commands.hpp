#pragma once
// Each subcommand adds itself to the application and records its exit code in `exit_code`
// when CLI11 runs its callback. main() returns that code.
#include <CLI/CLI.hpp>

namespace mpbench::cli {

void add_env_command(CLI::App& app, int& exit_code);
void add_list_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_numerics_command(CLI::App& app, int& exit_code);
void add_policy_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);
void add_explain_command(CLI::App& app, int& exit_code);
void add_history_command(CLI::App& app, int& exit_code);

}  // namespace mpbench::cli
