#include "core/gemm.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "core/error.hpp"

namespace mpbench {

namespace {
constexpr std::array<GemmPrecisionInfo, 6> kGemmPrecisions{{
    {GemmPrecision::fp32, "fp32", DType::f32, DType::f32, false, "fp32",
     "fp32 in/out, fp32 math, Tensor Cores off (pedantic)"},
    {GemmPrecision::tf32, "tf32", DType::f32, DType::f32, false, "tf32",
     "fp32 in/out, inputs rounded to tf32 on Tensor Cores, fp32 accumulate"},
    {GemmPrecision::fp16, "fp16", DType::f16, DType::f16, false, "fp16",
     "fp16 in/out, fp32 accumulate"},
    {GemmPrecision::fp16_acc16, "fp16-acc16", DType::f16, DType::f16, true, "fp16",
     "fp16 in/out, fp16 accumulate"},
    {GemmPrecision::bf16, "bf16", DType::bf16, DType::bf16, false, "bf16",
     "bf16 in/out, fp32 accumulate"},
    {GemmPrecision::fp8_e4m3, "fp8-e4m3", DType::e4m3, DType::bf16, false, "fp8",
     "fp8 e4m3 in with per-tensor scales, bf16 out, fp32 accumulate"},
}};
}  // namespace

const std::array<GemmPrecisionInfo, 6>& gemm_precisions() { return kGemmPrecisions; }

const GemmPrecisionInfo& gemm_precision_info(GemmPrecision p) {
  for (const auto& info : kGemmPrecisions)
    if (info.precision == p) return info;
  throw std::logic_error("gemm precision without a table entry");
}

GemmPrecision parse_gemm_precision(std::string_view name) {
  for (const auto& info : kGemmPrecisions)
    if (info.name == name) return info.precision;
  throw UsageError(fmt::format(
      "unknown GEMM precision '{}': use one of fp32, tf32, fp16, fp16-acc16, bf16, fp8-e4m3", name));
}

std::uint64_t gemm_operand_bytes(GemmPrecision precision, const GemmShape& shape) {
  const auto& info = gemm_precision_info(precision);
  return static_cast<std::uint64_t>((shape.a_elements() + shape.b_elements()) * dtype_size(info.input) +
                                    shape.c_elements() * dtype_size(info.output));
}

std::optional<std::string> gemm_shape_rule(GemmPrecision precision, const GemmShape& shape) {
  if (precision == GemmPrecision::fp8_e4m3 && (shape.m % 16 || shape.n % 16 || shape.k % 16))
    return "fp8 GEMMs need m, n and k to be multiples of 16 (cuBLASLt's fp8 rule)";
  return std::nullopt;
}

}  // namespace mpbench
