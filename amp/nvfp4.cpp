#include "amp/nvfp4.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "amp/row_blocks.hpp"

namespace mpbench::amp {
namespace {

void check_sizes(std::size_t codes, std::size_t scales, std::size_t rows, std::size_t cols, const char* what) {
  if (codes != rows * cols || scales != rows * nvfp4_blocks_per_row(cols))
    throw std::invalid_argument(std::string(what) + ": rows * cols codes and rows * ceil(cols / 16) scales");
}

}  // namespace

Nvfp4Stats nvfp4_quantize_rows(std::span<const float> x, std::size_t rows, std::size_t cols, std::span<uint8_t> codes,
                               std::span<uint8_t> scales) {
  if (x.size() != rows * cols) throw std::invalid_argument("nvfp4_quantize_rows: x holds rows * cols values");
  check_sizes(codes.size(), scales.size(), rows, cols, "nvfp4_quantize_rows");
  Nvfp4Stats stats;
  stats.amax = num::bits_to_float(amax_bits(x));
  stats.tensor_scale = nvfp4_tensor_scale(stats.amax);
  const float s = stats.tensor_scale;
  // Each block is independent once s is known.
  const RowBlockCounts counts =
      for_each_row_block(rows, cols, kNvfp4BlockSize, [&](std::size_t block, std::size_t begin, std::size_t n) {
        uint32_t saturated = 0, underflowed = 0;
        scales[block] = nvfp4_quantize_block(x.data() + begin, static_cast<int>(n), s, codes.data() + begin,
                                             saturated, underflowed);
        return RowBlockCounts{saturated, underflowed, scales[block] == kNvfp4NanScale ? 1u : 0u};
      });
  stats.blocks = {rows * cols, scales.size(), counts.saturated, counts.underflowed, counts.nan_blocks};
  return stats;
}

void nvfp4_dequantize_rows(std::span<const uint8_t> codes, std::span<const uint8_t> scales, std::size_t rows,
                           std::size_t cols, float tensor_scale, std::span<float> out) {
  check_sizes(codes.size(), scales.size(), rows, cols, "nvfp4_dequantize_rows");
  if (out.size() != rows * cols) throw std::invalid_argument("nvfp4_dequantize_rows: out holds rows * cols values");
  const std::size_t per_row = nvfp4_blocks_per_row(cols);
#pragma omp parallel for schedule(static) if (rows * cols >= kFp8ParallelElements)
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const std::size_t r = i / cols, c = i % cols;
    out[i] = nvfp4_dequantize_element(codes[i], scales[r * per_row + c / kNvfp4BlockSize], tensor_scale);
  }
}

}  // namespace mpbench::amp
