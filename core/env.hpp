#pragma once
// The host part of the environment that makes a result reproducible: host, OS, CPU model and ISA
// flags, compiler, mpbench version and revision, the command line. Backends add their libraries
// and devices (Backend::environment, backends/registry.hpp).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mpbench {

struct CpuDescription {
  std::string model;
  int logical_cores = 0;
  std::vector<std::string> flags;  // every flag /proc/cpuinfo lists
  bool has(std::string_view flag) const;
};

CpuDescription describe_cpu();
// The ISA flags that decide which low-precision paths the CPU has.
const std::vector<std::string>& mixed_precision_cpu_flags();
nlohmann::json host_environment(const std::vector<std::string>& command_line);
std::string mpbench_version();
std::string mpbench_git_revision();

}  // namespace mpbench
