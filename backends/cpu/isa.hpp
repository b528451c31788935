#pragma once
// Which instruction sets oneDNN may use: the user's choice (--cpu-isa), or mpbench's default.
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/self_check.hpp"

namespace mpbench::cpu {

// Limits the instruction sets oneDNN may use (DNNL_MAX_CPU_ISA); must run before the first
// backend is made. Throws UsageError for a name oneDNN does not know or after oneDNN started.
void limit_isa(const std::string& isa);
const std::vector<std::string>& isa_names();
// The ISA oneDNN dispatches to now, by its isa_names() name.
std::string effective_isa_name();
// Whether that ISA includes every instruction of the isa_names() ISA `name` (logic_error for an
// unknown name): false where the CPU lacks them or where a limit (--cpu-isa) leaves them out.
bool effective_isa_covers(const std::string& name);

// mpbench's default, applied once before oneDNN's first primitive unless an ISA was chosen
// (limit_isa, or DNNL_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA in the environment): on a CPU with AMX-BF16
// a self-check runs (self_check.hpp: bf16 products in a child process against the exact ones).
// Failed: AMX is left out (AVX512-BF16 stays). Passed or not run: AMX stays on bare metal; under a
// hypervisor it is left out still, where this project's VMs with oneDNN 2.6.3 gave wrong AMX bf16
// GEMM results now and then and sometimes SIGILL (faults a start-up check cannot rule out).
// `--cpu-isa all` uses AMX anyway. Returns why it limited oneDNN.
std::optional<std::string> apply_default_isa_limit();
// The AMX self-check's outcome where the default ran one (a CPU with AMX-BF16, no ISA chosen).
std::optional<SelfCheck> amx_self_check();

}  // namespace mpbench::cpu
