#include "workloads/ops.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.hpp"

namespace mpbench::workloads {

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
    case Phase::scaler: return "scaler";
  }
  return "unknown";
}

std::optional<std::string> workload_gemm_rule(GemmPrecision precision) {
  if (precision == GemmPrecision::fp16_acc16)
    return "the Transformer workload accumulates every GEMM in fp32; fp16 accumulation is a GEMM-suite precision";
  return std::nullopt;
}

GemmCapability workload_gemm_capability(const CapabilityTable& table, GemmPrecision precision) {
  if (auto reason = workload_gemm_rule(precision)) return {precision, GemmPath::unsupported, std::move(*reason)};
  GemmCapability row = table.gemm(precision);
  if (precision == GemmPrecision::fp8_e4m3 && row.path == GemmPath::native)
    return {precision, GemmPath::unsupported,
            "no fp8 GEMM path on CUDA yet: the Transformer's fp8 modes run on the converted path (CPU) only"};
  if (precision == GemmPrecision::fp8_e4m3 && row.path == GemmPath::converted)
    row.reason += "; the Transformer's fp8 modes: each operand quantized with its scales (per tensor; mxfp8: per "
                  "32-element block) and dequantized to fp32 (workloads/fp8_gemm.hpp), the fp32 matmul";
  return row;
}

std::string_view tensor_core_policy_name(TensorCorePolicy policy) {
  switch (policy) {
    case TensorCorePolicy::on: return "on";
    case TensorCorePolicy::off: return "off";
    case TensorCorePolicy::batched_off: return "batched-off";
  }
  return "unknown";
}

TensorCorePolicy parse_tensor_core_policy(std::string_view name) {
  for (TensorCorePolicy policy : {TensorCorePolicy::on, TensorCorePolicy::off, TensorCorePolicy::batched_off})
    if (tensor_core_policy_name(policy) == name) return policy;
  throw UsageError("unknown Tensor Core policy '" + std::string(name) + "': use on, off or batched-off");
}

std::string_view attention_kernels_name(AttentionKernels kernels) {
  return kernels == AttentionKernels::fused ? "fused" : "unfused";
}

AttentionKernels parse_attention_kernels(std::string_view name) {
  for (AttentionKernels kernels : {AttentionKernels::unfused, AttentionKernels::fused})
    if (attention_kernels_name(kernels) == name) return kernels;
  throw UsageError("unknown attention kernels '" + std::string(name) + "': use fused or unfused");
}

std::size_t fused_attention_statistics_elements(int B, int T, int NH) {
  const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
  return (rows + 63) / 64 * 64;  // so that the output after them starts 256-byte aligned
}

std::size_t attention_saved_elements(AttentionKernels kernels, int B, int T, int C, int NH) {
  if (kernels == AttentionKernels::unfused) return static_cast<std::size_t>(B) * NH * T * T;
  return fused_attention_statistics_elements(B, T, NH) + (static_cast<std::size_t>(B) * T * C + 1) / 2;
}

std::string_view storage_name(Storage storage) {
  switch (storage) {
    case Storage::real: return "real";
    case Storage::fp16: return "fp16";
    case Storage::bf16: return "bf16";
  }
  return "unknown";
}

Storage half_storage(num::Format format) {
  if (format == num::Format::fp16) return Storage::fp16;
  if (format == num::Format::bf16) return Storage::bf16;
  return Storage::real;
}

std::string op_range_name(std::string_view op, int layer, Phase phase) {
  std::string name(op);
  if (layer >= 0) name += " L" + std::to_string(layer);
  return name + " " + std::string(phase_name(phase));
}

void OpTimes::add(std::string_view op, Phase phase, double seconds) {
  seconds_[std::string(op) + " " + std::string(phase_name(phase))] += seconds;
  ++ranges_;
}

void* OpsMemory::allocate(std::size_t bytes) {
  void* p = allocate_zeroed(bytes);
  live_bytes_ += bytes;
  if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
  return p;
}

void OpsMemory::release(void* p, std::size_t bytes) noexcept {
  free_memory(p);
  live_bytes_ -= bytes;
}

void* HostOpsMemory::allocate_zeroed(std::size_t bytes) {
  // 64-byte alignment: whole cache lines and aligned AVX-512 loads.
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = rounded == 0 ? nullptr : std::aligned_alloc(64, rounded);
  if (rounded != 0 && p == nullptr) {
    throw OutOfMemoryError("could not allocate " + std::to_string(bytes) + " bytes of host memory", bytes);
  }
  if (p != nullptr) std::memset(p, 0, rounded);
  return p;
}

void HostOpsMemory::free_memory(void* p) noexcept { std::free(p); }

void HostOpsMemory::copy_to_device(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

void HostOpsMemory::copy_to_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

void HostOpsMemory::fill_zero(void* p, std::size_t bytes) { std::memset(p, 0, bytes); }

}  // namespace mpbench::workloads
