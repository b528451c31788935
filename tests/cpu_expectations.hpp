#pragma once
// What the CPU under test can do, from its own flags (cpuid, as /proc/cpuinfo lists them) and the
// instruction sets oneDNN may use (a --cpu-isa or DNNL_MAX_CPU_ISA limit imitates a CPU without
// them): never from the library's answer to the question a test asks.
#include "backends/cpu/isa.hpp"
#include "core/env.hpp"

namespace mpbench::testing {

// bf16 matmul instructions (AVX512-BF16 or AMX-BF16) that oneDNN may use here.
inline bool cpu_runs_bf16_natively() {
  const CpuDescription cpu = describe_cpu();
  return (cpu.has("avx512_bf16") || cpu.has("amx_bf16")) && cpu::effective_isa_covers("avx512_core_bf16");
}

// The build's oneDNN is the 2.x API (Debian 12's 2.6.3), which has no fp16 or fp8 matmul on any
// CPU: those run converted wherever --cpu-gemm allows it.
inline bool cpu_runs_fp16_natively() { return false; }
inline bool cpu_runs_fp8_natively() { return false; }

}  // namespace mpbench::testing
