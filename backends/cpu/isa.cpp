#include "backends/cpu/isa.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <oneapi/dnnl/dnnl.hpp>
#include <utility>

#include "core/env.hpp"
#include "core/error.hpp"

namespace mpbench::cpu {
namespace {

const std::vector<std::pair<std::string, dnnl::cpu_isa>>& isa_table() {
  static const std::vector<std::pair<std::string, dnnl::cpu_isa>> kTable = {
      {"sse41", dnnl::cpu_isa::sse41},
      {"avx", dnnl::cpu_isa::avx},
      {"avx2", dnnl::cpu_isa::avx2},
      {"avx2_vnni", dnnl::cpu_isa::avx2_vnni},
      {"avx512_core", dnnl::cpu_isa::avx512_core},
      {"avx512_core_vnni", dnnl::cpu_isa::avx512_core_vnni},
      {"avx512_core_bf16", dnnl::cpu_isa::avx512_core_bf16},
      {"avx512_core_amx", dnnl::cpu_isa::avx512_core_amx},
      {"all", dnnl::cpu_isa::all},
  };
  return kTable;
}

// Set once an ISA was chosen, by the user or by the default.
std::once_flag isa_decided;
std::optional<std::string> default_limit_reason;

std::optional<std::string> decide_default() {
  if (std::getenv("DNNL_MAX_CPU_ISA") || std::getenv("ONEDNN_MAX_CPU_ISA")) return std::nullopt;
  const CpuDescription cpu = describe_cpu();
  if (!cpu.has("hypervisor") || !cpu.has("amx_tile")) return std::nullopt;
  dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_bf16);
  return "AMX left out under a hypervisor (its tile state is not reliable in guests: wrong bf16 GEMM results and "
         "SIGILL seen on this project's VMs); --cpu-isa all uses it";
}

}  // namespace

const std::vector<std::string>& isa_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& [name, value] : isa_table()) names.push_back(name);
    return names;
  }();
  return kNames;
}

std::string effective_isa_name() {
  const auto isa = dnnl::get_effective_cpu_isa();
  for (const auto& [name, value] : isa_table())
    if (value == isa) return name;
  return fmt::format("isa#{}", static_cast<int>(isa));
}

bool effective_isa_covers(const std::string& name) {
  for (const auto& [known, value] : isa_table()) {
    if (known != name) continue;
    const auto needed = static_cast<unsigned>(value), effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (effective & needed) == needed;
  }
  throw std::logic_error("effective_isa_covers: unknown ISA " + name);
}

void limit_isa(const std::string& isa) {
  for (const auto& [name, value] : isa_table())
    if (name == isa) {
      try {
        dnnl::set_max_cpu_isa(value);
      } catch (const dnnl::error& e) {
        throw UsageError(fmt::format("--cpu-isa {}: oneDNN refused it ({}); give it before any CPU work", isa, e.what()));
      }
      std::call_once(isa_decided, [] {});
      return;
    }
  throw UsageError(fmt::format("unknown --cpu-isa '{}': use one of {}", isa, fmt::join(isa_names(), ", ")));
}

std::optional<std::string> apply_default_isa_limit() {
  std::call_once(isa_decided, [] { default_limit_reason = decide_default(); });
  return default_limit_reason;
}

}  // namespace mpbench::cpu
