#include "backends/cuda/capabilities.hpp"

#include <fmt/format.h>

namespace mpbench::cuda {

namespace {

struct Requirement {
  GemmPrecision precision;
  int major, minor;  // the oldest compute capability that runs it natively
  const char* what;  // what runs it there
};

// Tensor Cores took fp16 on Volta (7.0), TF32 and bf16 on Ampere (8.0), fp8 on Ada and Hopper
// (8.9, 9.0); fp32 is pedantic (CUDA cores) everywhere.
constexpr Requirement kRequirements[] = {
    {GemmPrecision::fp32, 0, 0, "cuBLASLt, CUDA cores (CUBLAS_COMPUTE_32F_PEDANTIC)"},
    {GemmPrecision::tf32, 8, 0, "cuBLASLt, TF32 Tensor Cores (Ampere and newer)"},
    {GemmPrecision::fp16, 7, 0, "cuBLASLt, fp16 Tensor Cores (Volta and newer)"},
    {GemmPrecision::fp16_acc16, 7, 0, "cuBLASLt, fp16 Tensor Cores accumulating in fp16 (Volta and newer)"},
    {GemmPrecision::bf16, 8, 0, "cuBLASLt, bf16 Tensor Cores (Ampere and newer)"},
    {GemmPrecision::fp8_e4m3, 8, 9, "cuBLASLt, fp8 Tensor Cores (Ada, Hopper and newer)"},
};

bool at_least(const DeviceInfo& gpu, int major, int minor) {
  return gpu.compute_capability_major > major ||
         (gpu.compute_capability_major == major && gpu.compute_capability_minor >= minor);
}

}  // namespace

CapabilityTable gpu_capabilities(const DeviceInfo& gpu) {
  std::vector<GemmCapability> rows;
  for (const Requirement& r : kRequirements) {
    if (at_least(gpu, r.major, r.minor)) {
      rows.push_back({r.precision, GemmPath::native, r.what});
      continue;
    }
    rows.push_back({r.precision, GemmPath::unsupported,
                    fmt::format("{} GEMMs need compute capability {}.{} or newer; {} is {}.{}",
                                gemm_precision_info(r.precision).name, r.major, r.minor, gpu.name,
                                gpu.compute_capability_major, gpu.compute_capability_minor)});
  }
  return CapabilityTable(std::move(rows));
}

}  // namespace mpbench::cuda
