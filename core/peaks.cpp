#include "core/peaks.hpp"

#include <algorithm>
#include <cctype>

namespace mpbench {

namespace {
// Dense figures (sparsity halved where NVIDIA quotes it sparse), from NVIDIA's datasheets: each row
// names its source and the names the driver gives the exact variant it describes (the A100 40GB,
// H100 NVL or H200 NVL have other clocks, bandwidths or power limits, so they get no row).
const std::vector<DatasheetPeaks> kTable = {
    {"V100 SXM2", {"Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB"}, 15.7, 0, 125, 0, 0, 900,
     "NVIDIA Tesla V100 datasheet (SXM2: 15.7 FP32, 125 Tensor, 900 GB/s)"},
    {"T4", {"Tesla T4"}, 8.1, 0, 65, 0, 0, 320, "NVIDIA T4 datasheet (8.1 FP32, 65 FP16 mixed, 320 GB/s)"},
    {"A100 SXM", {"NVIDIA A100-SXM4-80GB"}, 19.5, 156, 312, 312, 0, 2039,
     "NVIDIA A100 datasheet (19.5 FP32, 156 TF32, 312 FP16/BF16 dense; 80GB SXM 2039 GB/s)"},
    {"A100 PCIe", {"NVIDIA A100 80GB PCIe"}, 19.5, 156, 312, 312, 0, 1935,
     "NVIDIA A100 datasheet (PCIe 80GB: 1935 GB/s)"},
    {"L4", {"NVIDIA L4"}, 30.3, 60, 121, 121, 242.5, 300,
     "NVIDIA L4 datasheet (TF32 120, FP16 242, FP8 485 with sparsity; 300 GB/s)"},
    {"L40S", {"NVIDIA L40S"}, 91.6, 183, 362, 362, 733, 864,
     "NVIDIA L40S datasheet (TF32 366, FP16 733, FP8 1466 with sparsity; 864 GB/s)"},
    {"H100 SXM", {"NVIDIA H100 80GB HBM3"}, 67, 494.5, 989, 989, 1979, 3350,
     "NVIDIA H100 datasheet (SXM: 67 FP32, 494.5 TF32, 989 FP16/BF16, 1979 FP8 dense; 3.35 TB/s)"},
    {"H100 PCIe", {"NVIDIA H100 PCIe"}, 51, 378, 756, 756, 1513, 2000,
     "NVIDIA H100 datasheet (PCIe: 51 FP32, 756 FP16 dense, 1513 FP8 dense; 2.0 TB/s)"},
    {"H200 SXM", {"NVIDIA H200"}, 67, 494.5, 989, 989, 1979, 4800,
     "NVIDIA H200 datasheet (SXM: same Tensor Core peaks as H100 SXM; 4.8 TB/s HBM3e)"},
    {"B200", {"NVIDIA B200"}, 80, 1125, 2250, 2250, 4500, 8000,
     "NVIDIA DGX B200 datasheet (80 FP32, 1125 TF32, 2250 FP16/BF16, 4500 FP8 dense; 8 TB/s)"},
};

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}
}  // namespace

const std::vector<DatasheetPeaks>& datasheet_table() { return kTable; }

std::optional<DatasheetPeaks> find_datasheet(std::string_view device_name) {
  const std::string name = lower(trim(device_name));
  for (const auto& row : kTable)
    for (const auto& driver_name : row.driver_names)
      if (name == lower(driver_name)) return row;
  return std::nullopt;
}

double peak_tflops(const DatasheetPeaks& row, GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::fp32: return row.fp32_tflops;
    case GemmPrecision::tf32: return row.tf32_tflops;
    case GemmPrecision::fp16:
    case GemmPrecision::fp16_acc16: return row.fp16_tflops;
    case GemmPrecision::bf16: return row.bf16_tflops;
    case GemmPrecision::fp8_e4m3: return row.fp8_tflops;
  }
  return 0;
}

}  // namespace mpbench
