#pragma once
// What the CPU under test can do, from its own flags (cpuid, as /proc/cpuinfo lists them) and the
// instruction sets oneDNN may use (a --cpu-isa or DNNL_MAX_CPU_ISA limit imitates a CPU without
// them): never from the library's answer to the question a test asks.
#include <oneapi/dnnl/dnnl_version.h>

#include "backends/cpu/isa.hpp"
#include "core/env.hpp"

namespace mpbench::testing {

// bf16 matmul instructions (AVX512-BF16 or AMX-BF16) that oneDNN may use here.
inline bool cpu_runs_bf16_natively() {
  const CpuDescription cpu = describe_cpu();
  return (cpu.has("avx512_bf16") || cpu.has("amx_bf16")) && cpu::effective_isa_covers("avx512_core_bf16");
}

// fp16 matmul instructions (AVX512-FP16; AMX-FP16 comes with it) that oneDNN may use here. oneDNN
// 2.x (Debian 12's 2.6.3) has no fp16 matmul on any CPU.
inline bool cpu_runs_fp16_natively() {
#if DNNL_VERSION_MAJOR >= 3
  const CpuDescription cpu = describe_cpu();
  return (cpu.has("avx512_fp16") || cpu.has("amx_fp16")) && cpu::effective_isa_covers("avx512_core_fp16");
#else
  return false;
#endif
}
// No oneDNN has an fp8 matmul on CPUs: fp8 runs converted wherever --cpu-gemm allows it.
inline bool cpu_runs_fp8_natively() { return false; }

}  // namespace mpbench::testing
