#include "core/dtype.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "core/error.hpp"

namespace mpbench {

namespace {
constexpr std::array<std::pair<DType, std::string_view>, 5> kDTypeNames{{
    {DType::f32, "fp32"},
    {DType::f16, "fp16"},
    {DType::bf16, "bf16"},
    {DType::e4m3, "fp8-e4m3"},
    {DType::e5m2, "fp8-e5m2"},
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

}  // namespace mpbench
