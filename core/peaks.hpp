#pragma once
// Datasheet peaks per GPU generation: dense Tensor Core / CUDA core TFLOP/s and memory bandwidth,
// each row with its source. Achieved rates are reported as a percentage of these.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/gemm.hpp"

namespace mpbench {

struct DatasheetPeaks {
  std::string_view gpu;           // e.g. "H100 SXM"
  std::vector<std::string_view> driver_names;  // the variant's names as the driver reports them
  double fp32_tflops;             // CUDA cores
  double tf32_tflops;             // 0 where the GPU has no TF32 Tensor Cores
  double fp16_tflops;             // fp16 (and bf16 where the GPU has it) with fp32 accumulate
  double bf16_tflops;
  double fp8_tflops;
  double memory_gb_per_s;
  std::string_view source;
};

const std::vector<DatasheetPeaks>& datasheet_table();
// The row of that exact device (the driver's name, case and surrounding blanks aside): a variant
// the table does not list gets none, never a similar GPU's figures.
std::optional<DatasheetPeaks> find_datasheet(std::string_view device_name);
// 0 when the datasheet gives no figure for that precision.
double peak_tflops(const DatasheetPeaks& row, GemmPrecision precision);

}  // namespace mpbench
