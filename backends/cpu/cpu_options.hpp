#pragma once
// How the CPU device layer runs (chosen on the command line, before the device starts).
#include <string_view>

namespace mpbench::cpu {

// How low-precision GEMMs run (--cpu-gemm): native where the CPU has the instructions, converted
// elsewhere (auto); native only (a precision without native support is unsupported); converted
// always (operands widened to fp32, the fp32 matmul, the result rounded to the output format).
enum class GemmPathChoice { automatic, native, converted };
std::string_view gemm_path_choice_name(GemmPathChoice choice);  // "auto", "native", "converted"
GemmPathChoice parse_gemm_path_choice(std::string_view name);   // UsageError for another name

struct CpuOptions {
  GemmPathChoice gemm_path = GemmPathChoice::automatic;
};

}  // namespace mpbench::cpu
