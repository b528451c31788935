#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace mpbench {

// Storage types of buffers. Names follow the precision names users type (fp32, fp16, ...).
enum class DType { f32, f16, bf16, e4m3, e5m2 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::e4m3:
    case DType::e5m2: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t);
DType parse_dtype(std::string_view name);  // throws UsageError naming the known types

}  // namespace mpbench
