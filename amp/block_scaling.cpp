#include "amp/block_scaling.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mpbench::amp {
namespace {

bool is_e4m3(num::Format f, const char* what) {
  if (f != num::Format::e4m3 && f != num::Format::e5m2) {
    throw std::invalid_argument(std::string(what) + ": the element format must be fp8-e4m3 or fp8-e5m2");
  }
  return f == num::Format::e4m3;
}

}  // namespace

BlockQuantizeStats mx_quantize_rows(std::span<const float> x, std::size_t rows, std::size_t cols,
                                    num::Format element, std::span<uint8_t> out, std::span<uint8_t> scales) {
  const bool e4m3 = is_e4m3(element, "mx_quantize");
  const std::size_t per_row = mx_blocks_per_row(cols);
  if (x.size() != rows * cols || out.size() < x.size() || scales.size() < rows * per_row) {
    throw std::invalid_argument("mx_quantize: sizes do not match rows x cols");
  }
  BlockQuantizeStats stats;
  stats.elements = x.size();
  stats.blocks = rows * per_row;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t b = 0; b < per_row; ++b) {
      const std::size_t begin = r * cols + b * kMxBlockSize;
      const int n = int(std::min<std::size_t>(kMxBlockSize, cols - b * kMxBlockSize));
      uint32_t saturated = 0;
      uint32_t underflowed = 0;
      const uint8_t code = mx_quantize_block(x.data() + begin, n, e4m3, out.data() + begin, saturated, underflowed);
      scales[r * per_row + b] = code;
      stats.saturated += saturated;
      stats.underflowed += underflowed;
      if (code == kE8m0Nan) stats.nan_blocks += 1;
    }
  }
  return stats;
}

void mx_dequantize_rows(std::span<const uint8_t> q, std::span<const uint8_t> scales, std::size_t rows,
                        std::size_t cols, num::Format element, std::span<float> out) {
  const bool e4m3 = is_e4m3(element, "mx_dequantize");
  const std::size_t per_row = mx_blocks_per_row(cols);
  if (q.size() != rows * cols || out.size() < q.size() || scales.size() < rows * per_row) {
    throw std::invalid_argument("mx_dequantize: sizes do not match rows x cols");
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t b = 0; b < per_row; ++b) {
      const std::size_t begin = r * cols + b * kMxBlockSize;
      const int n = int(std::min<std::size_t>(kMxBlockSize, cols - b * kMxBlockSize));
      mx_dequantize_block(q.data() + begin, n, scales[r * per_row + b], e4m3, out.data() + begin);
    }
  }
}

BlockQuantizeStats mx_quantize(std::span<const float> x, num::Format element, std::span<uint8_t> out,
                               std::span<uint8_t> scales) {
  return mx_quantize_rows(x, 1, x.size(), element, out, scales);
}

void mx_dequantize(std::span<const uint8_t> q, std::span<const uint8_t> scales, num::Format element,
                   std::span<float> out) {
  mx_dequantize_rows(q, scales, 1, q.size(), element, out);
}

CurrentScalingResult quantize_current_scaling(std::span<const float> x, num::Format format, std::span<uint8_t> out,
                                              int margin) {
  const bool e4m3 = is_e4m3(format, "quantize_current_scaling");
  if (out.size() < x.size()) throw std::invalid_argument("quantize_current_scaling: output smaller than input");
  if (margin < 0 || margin > 30) throw std::invalid_argument("quantize_current_scaling: margin in [0, 30]");
  uint32_t amax_bits = 0;
  for (float v : x) amax_bits = fold_amax_bits(amax_bits, v);
  CurrentScalingResult result;
  result.amax = num::bits_to_float(amax_bits);
  result.elements = x.size();
  result.scale = fp8_scale_from_amax(result.amax, float(num::format_info(format).max_finite), margin, 1.0f);
  result.scale_inv = 1.0f / result.scale;
  uint32_t saturated = 0;
  uint32_t underflowed = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[i] = quantize_fp8_counted(x[i], result.scale, e4m3, saturated, underflowed);
    // 32-bit per-element counters in the kernels' style; fold them before they can wrap.
    if (saturated > 0x7FFFFFFFu || underflowed > 0x7FFFFFFFu) {
      result.saturated += saturated;
      result.underflowed += underflowed;
      saturated = underflowed = 0;
    }
  }
  result.saturated += saturated;
  result.underflowed += underflowed;
  return result;
}

void dequantize_per_tensor(std::span<const uint8_t> q, float scale_inv, num::Format format, std::span<float> out) {
  const bool e4m3 = is_e4m3(format, "dequantize_per_tensor");
  if (out.size() < q.size()) throw std::invalid_argument("dequantize_per_tensor: output smaller than input");
  for (std::size_t i = 0; i < q.size(); ++i) out[i] = dequantize_fp8(q[i], scale_inv, e4m3);
}

}  // namespace mpbench::amp
