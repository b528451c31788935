#pragma once
#include <string>
#include <vector>

namespace mpbench::cli {

// The command line of this process (from /proc/self/cmdline), recorded in every result.
std::vector<std::string> command_line_of_process();

}  // namespace mpbench::cli
