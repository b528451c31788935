#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.hpp"

namespace mpbench {

// GEMM precisions of the microbenchmark: input type, output type and accumulation.
enum class GemmPrecision { fp32, tf32, fp16, fp16_acc16, bf16, fp8_e4m3 };

struct GemmPrecisionInfo {
  GemmPrecision precision;
  std::string_view name;        // as typed on the command line
  DType input;                  // A and B
  DType output;                 // C
  bool accumulate_in_input_type;  // fp16 accumulation
  std::string_view peak_column;   // which datasheet peak applies
  std::string_view description;
};

const std::array<GemmPrecisionInfo, 6>& gemm_precisions();
const GemmPrecisionInfo& gemm_precision_info(GemmPrecision p);
GemmPrecision parse_gemm_precision(std::string_view name);  // throws UsageError

// C[b][m][n] = sum_k A[b][m][k] * B[b][n][k], all row-major: B is stored like the weight of a
// Linear layer (y = x W^T). In cuBLAS's column-major terms this is the "TN" layout, the one fp8
// requires, so every precision runs the same layout.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  double flops() const { return 2.0 * static_cast<double>(batch) * m * n * k; }
  std::size_t a_elements() const { return static_cast<std::size_t>(batch * m * k); }
  std::size_t b_elements() const { return static_cast<std::size_t>(batch * n * k); }
  std::size_t c_elements() const { return static_cast<std::size_t>(batch * m * n); }
};

// Bytes of A, B and C in the precision's storage types.
std::uint64_t gemm_operand_bytes(GemmPrecision precision, const GemmShape& shape);
// Why the libraries refuse this shape in this precision (fp8: m, n and k multiples of 16), or nullopt.
std::optional<std::string> gemm_shape_rule(GemmPrecision precision, const GemmShape& shape);

}  // namespace mpbench
