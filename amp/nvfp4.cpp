#include "amp/nvfp4.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

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
  const std::size_t per_row = nvfp4_blocks_per_row(cols), blocks = rows * per_row;
  const float s = stats.tensor_scale;
  uint64_t saturated = 0, underflowed = 0, nan_blocks = 0;
  // Each block is independent once s is known: blocks shared among the threads.
#pragma omp parallel for schedule(static) reduction(+ : saturated, underflowed, nan_blocks) \
    if (rows * cols >= kFp8ParallelElements)
  for (std::size_t block = 0; block < blocks; ++block) {
    const std::size_t r = block / per_row, b = block % per_row;
    const std::size_t begin = r * cols + b * kNvfp4BlockSize;
    const int n = static_cast<int>(std::min<std::size_t>(kNvfp4BlockSize, cols - b * kNvfp4BlockSize));
    uint32_t block_saturated = 0, block_underflowed = 0;
    scales[block] = nvfp4_quantize_block(x.data() + begin, n, s, codes.data() + begin, block_saturated,
                                         block_underflowed);
    saturated += block_saturated;
    underflowed += block_underflowed;
    nan_blocks += scales[block] == kNvfp4NanScale ? 1 : 0;
  }
  stats.blocks = {rows * cols, blocks, saturated, underflowed, nan_blocks};
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
