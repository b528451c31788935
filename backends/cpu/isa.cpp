#include "backends/cpu/isa.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_version.h>
#include <utility>

#include "backends/cpu/self_check.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

namespace mpbench::cpu {
namespace {

const std::vector<std::pair<std::string, dnnl::cpu_isa>>& isa_table() {
  // oneDNN 3 names three more (an effective ISA is named by them on CPUs that have them) and
  // calls no limit isa_default.
  static const std::vector<std::pair<std::string, dnnl::cpu_isa>> kTable = {
      {"sse41", dnnl::cpu_isa::sse41},
      {"avx", dnnl::cpu_isa::avx},
      {"avx2", dnnl::cpu_isa::avx2},
      {"avx2_vnni", dnnl::cpu_isa::avx2_vnni},
#if DNNL_VERSION_MAJOR >= 3
      {"avx2_vnni_2", dnnl::cpu_isa::avx2_vnni_2},
#endif
      {"avx512_core", dnnl::cpu_isa::avx512_core},
      {"avx512_core_vnni", dnnl::cpu_isa::avx512_core_vnni},
      {"avx512_core_bf16", dnnl::cpu_isa::avx512_core_bf16},
#if DNNL_VERSION_MAJOR >= 3
      {"avx512_core_fp16", dnnl::cpu_isa::avx512_core_fp16},
#endif
      {"avx512_core_amx", dnnl::cpu_isa::avx512_core_amx},
#if DNNL_VERSION_MAJOR >= 3
      {"avx512_core_amx_fp16", dnnl::cpu_isa::avx512_core_amx_fp16},
      {"all", dnnl::cpu_isa::isa_default},
#else
      {"all", dnnl::cpu_isa::all},
#endif
  };
  return kTable;
}

// Set once an ISA was chosen, by the user or by the default.
std::once_flag isa_decided;
std::optional<std::string> default_limit_reason;
std::optional<SelfCheck> amx_check;

// On bare metal the AMX self-check decides. In a guest AMX stays out for now whatever it finds: on
// this project's VMs oneDNN 2.6.3's AMX faults came now and then (one conformance run in four),
// which six products cannot rule out; the outcome is recorded so that runs on such VMs show
// whether 3.2.0 is right there before the default changes.
std::optional<std::string> decide_default() {
  if (std::getenv("DNNL_MAX_CPU_ISA") || std::getenv("ONEDNN_MAX_CPU_ISA")) return std::nullopt;
  const CpuDescription cpu = describe_cpu();
  if (!cpu.has("amx_tile") || !cpu.has("amx_bf16")) return std::nullopt;
  amx_check = run_bf16_self_check("all", "amx");
  const bool failed = amx_check->outcome == SelfCheck::Outcome::failed;
  if (!failed && !cpu.has("hypervisor")) return std::nullopt;
  dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_bf16);
  if (failed) return fmt::format("AMX left out: its bf16 self-check failed ({}); --cpu-isa all uses it", amx_check->detail);
  return fmt::format("AMX left out under a hypervisor (wrong bf16 GEMM results now and then and SIGILL seen on this "
                     "project's VMs; its bf16 self-check {} here); --cpu-isa all uses it",
                     outcome_name(amx_check->outcome));
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
      // oneDNN's C++ API returns the status here rather than throwing it.
      if (const dnnl::status status = dnnl::set_max_cpu_isa(value); status != dnnl::status::success)
        throw UsageError(fmt::format("--cpu-isa {}: oneDNN refused it (status {}); it takes a limit only before "
                                     "its first CPU work",
                                     isa, static_cast<int>(status)));
      std::call_once(isa_decided, [] {});
      return;
    }
  throw UsageError(fmt::format("unknown --cpu-isa '{}': use one of {}", isa, fmt::join(isa_names(), ", ")));
}

std::optional<std::string> apply_default_isa_limit() {
  std::call_once(isa_decided, [] { default_limit_reason = decide_default(); });
  return default_limit_reason;
}

std::optional<SelfCheck> amx_self_check() { return amx_check; }

}  // namespace mpbench::cpu
