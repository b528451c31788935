#include "core/env.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/version.hpp"

namespace mpbench {

namespace {

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\"");
  const auto last = s.find_last_not_of(" \t\"\n");
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

// Value of the first "key : value" line of /proc/cpuinfo with that key.
std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return "";
}

std::string os_pretty_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("PRETTY_NAME=", 0) == 0) return trim(line.substr(12));
  return "unknown";
}

std::uint64_t physical_memory_bytes() {
  return static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

bool CpuDescription::has(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

CpuDescription describe_cpu() {
  CpuDescription cpu;
  cpu.model = cpuinfo_field("model name");
  if (cpu.model.empty()) cpu.model = "unknown";
  cpu.logical_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::istringstream flags(cpuinfo_field("flags"));
  for (std::string f; flags >> f;) cpu.flags.push_back(f);
  return cpu;
}

const std::vector<std::string>& mixed_precision_cpu_flags() {
  static const std::vector<std::string> kFlags = {
      "sse4_2",      "avx",         "avx2",        "fma",      "f16c",        "avx512f",
      "avx512bw",    "avx512vl",    "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni",
      "amx_tile",    "amx_bf16",    "amx_int8",    "amx_fp16"};
  return kFlags;
}

std::string mpbench_version() { return MPBENCH_VERSION; }

namespace {

// OMP_NUM_THREADS as the process found it (null when unset): it caps the threads of every
// parallel loop and of oneDNN, so runs under different values time differently.
nlohmann::json omp_num_threads_variable() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  return value ? nlohmann::json(value) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json host_environment(const std::vector<std::string>& command_line) {
  utsname uts{};
  uname(&uts);
  const CpuDescription cpu = describe_cpu();
  nlohmann::json flags = nlohmann::json::object();
  for (const auto& f : mixed_precision_cpu_flags()) flags[f] = cpu.has(f);
  return {
      {"host", uts.nodename},
      {"os", {{"name", os_pretty_name()}, {"kernel", uts.release}, {"machine", uts.machine}}},
      {"cpu", {{"model", cpu.model}, {"logical_cores", cpu.logical_cores}, {"flags", flags},
               {"memory_bytes", physical_memory_bytes()}, {"omp_num_threads", omp_num_threads_variable()}}},
      {"compiler", std::string(MPBENCH_CXX_COMPILER)},
      {"mpbench", {{"version", mpbench_version()}, {"git_revision", mpbench_git_revision()},
                   {"build_type", std::string(MPBENCH_BUILD_TYPE)}}},
      {"command", command_line},
  };
}

}  // namespace mpbench
