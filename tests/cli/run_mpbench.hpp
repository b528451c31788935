#pragma once
// Runs the mpbench binary with arguments and captures its exit status, stdout and stderr.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace mpbench::testing {

struct Invocation {
  int status = -1;
  std::string out, err;
};

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q.append("'\\''");
    else
      q.push_back(c);
  }
  q.push_back('\'');
  return q;
}

// The binary under test: $MPBENCH_BIN (the device script's unpacked build), else the one built here.
inline std::string mpbench_binary() {
  const char* from_env = std::getenv("MPBENCH_BIN");
  return from_env && *from_env ? from_env : MPBENCH_BINARY;
}

inline Invocation run_mpbench(const std::vector<std::string>& args, const std::filesystem::path& folder) {
  std::string command = shell_quote(mpbench_binary());
  for (const auto& a : args) command.append(" ").append(shell_quote(a));
  const auto out = folder / "stdout.txt", err = folder / "stderr.txt";
  command.append(" >").append(shell_quote(out.string())).append(" 2>").append(shell_quote(err.string()));
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_all(out), read_all(err)};
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace mpbench::testing
