#include "cli/command_line.hpp"

#include <fstream>
#include <iterator>

namespace mpbench::cli {

std::vector<std::string> command_line_of_process() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string current;
  for (char ch : raw) {
    if (ch == '\0') {
      args.push_back(current);
      current.clear();
    } else {
      current += ch;
    }
  }
  if (!current.empty()) args.push_back(current);
  return args;
}

}  // namespace mpbench::cli
