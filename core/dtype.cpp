#include "core/dtype.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "core/error.hpp"
#include "core/gemm.hpp"

namespace mpbench {

namespace {
constexpr std::array<std::pair<DType, std::string_view>, 5> kDTypeNames{{
    {DType::f32, "fp32"},
    {DType::f16, "fp16"},
    {DType::bf16, "bf16"},
    {DType::e4m3, "fp8-e4m3"},
    {DType::e5m2, "fp8-e5m2"},
}};

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

std::string_view dtype_name(DType t) {
  for (const auto& [type, name] : kDTypeNames)
    if (type == t) return name;
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  for (const auto& [type, known] : kDTypeNames)
    if (known == name) return type;
  throw UsageError(fmt::format("unknown dtype '{}': use one of fp32, fp16, bf16, fp8-e4m3, fp8-e5m2", name));
}

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

}  // namespace mpbench
