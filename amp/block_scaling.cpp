#include "amp/block_scaling.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "amp/row_blocks.hpp"

namespace mpbench::amp {
namespace {

bool is_e4m3(num::Format f, const char* what) {
  if (f != num::Format::e4m3 && f != num::Format::e5m2) {
    throw std::invalid_argument(std::string(what) + ": the element format must be fp8-e4m3 or fp8-e5m2");
  }
  return f == num::Format::e4m3;
}

// Every block of a rows x cols matrix (mx_quantize_rows's layout), blocks shared among the threads:
// the block's amax, its scale code, then its elements as mx_quantize_element does them (a NaN
// scale: every element 0x7F, nothing counted).
void quantize_blocks(const float* x, std::size_t rows, std::size_t cols, bool e4m3, MxScaleRounding rounding,
                     uint8_t* out, uint8_t* scales, BlockQuantizeStats& stats) {
  const RowBlockCounts counts =
      for_each_row_block(rows, cols, kMxBlockSize, [&](std::size_t block, std::size_t begin, std::size_t n) {
        const uint8_t code = mx_scale_code(num::bits_to_float(amax_bits_serial(x + begin, n)), e4m3, rounding);
        scales[block] = code;
        if (code == kE8m0Nan) {
          std::fill(out + begin, out + begin + n, kMxNanElement);
          return RowBlockCounts{0, 0, 1};
        }
        const Fp8TensorCounts c = quantize_fp8_serial(x + begin, n, pow2_f32(kE8m0Bias - int(code)), e4m3, out + begin);
        return RowBlockCounts{c.saturated, c.underflowed, 0};
      });
  stats.saturated = counts.saturated;
  stats.underflowed = counts.underflowed;
  stats.nan_blocks = counts.nan_blocks;
}

// One block's values: the format's value of each code times the block's scale (NaN for a NaN scale).
void dequantize_block(const uint8_t* q, int n, uint8_t code, const float* table, float* out) {
  if (code == kE8m0Nan) {
    std::fill(out, out + n, num::bits_to_float(0x7FC00000u));
    return;
  }
  const float scale = e8m0_to_f32(code);
#pragma omp simd
  for (int i = 0; i < n; ++i) out[i] = table[q[i]] * scale;
}

// ---- blocks down the columns: a strip of up to 32 rows holds one block per column ----------------

struct ColumnCounts {
  uint64_t saturated = 0;
  uint64_t underflowed = 0;
  uint64_t nan_blocks = 0;
};

// Per-thread columns' state of one strip.
struct StripScratch {
  explicit StripScratch(std::size_t cols) : amax(cols), scale(cols), finite(cols) {}
  std::vector<uint32_t> amax;    // max |x| of each column's block, as fp32 bits
  std::vector<float> scale;      // 2^-e of the column's scale code, 0 for a NaN scale
  std::vector<uint32_t> finite;  // 1, or 0 for a NaN scale
};

// The strip's scale codes (into scales) from its columns' amax, one row at a time so every loop
// runs along contiguous columns.
template <bool E4m3>
[[gnu::always_inline]] inline uint64_t strip_scales(const float* x, std::size_t height, std::size_t cols,
                                                    MxScaleRounding rounding, uint8_t* scales, StripScratch& s) {
  uint32_t* amax = s.amax.data();
  std::fill(amax, amax + cols, 0u);
  for (std::size_t r = 0; r < height; ++r) {
    const float* row = x + r * cols;
#pragma omp simd
    for (std::size_t c = 0; c < cols; ++c) amax[c] = fold_amax_bits(amax[c], row[c]);
  }
  uint64_t nan_blocks = 0;
  for (std::size_t c = 0; c < cols; ++c) {
    const uint8_t code = mx_scale_code(num::bits_to_float(amax[c]), E4m3, rounding);
    scales[c] = code;
    s.finite[c] = code != kE8m0Nan ? 1u : 0u;
    s.scale[c] = code != kE8m0Nan ? pow2_f32(kE8m0Bias - int(code)) : 0.0f;
    nan_blocks += code == kE8m0Nan ? 1 : 0;
  }
  return nan_blocks;
}

// One strip: scales, then each row's elements with their column's scale, as mx_quantize_element
// does them (a NaN-scale column's elements are 0x7F and not counted), selected without branches.
template <bool E4m3>
[[gnu::always_inline]] inline ColumnCounts quantize_strip(const float* x, std::size_t height, std::size_t cols,
                                                          MxScaleRounding rounding, uint8_t* out, uint8_t* scales,
                                                          StripScratch& s) {
  ColumnCounts counts;
  counts.nan_blocks = strip_scales<E4m3>(x, height, cols, rounding, scales, s);
  const float* scale = s.scale.data();
  const uint32_t* finite = s.finite.data();
  for (std::size_t r = 0; r < height; ++r) {
    const float* row = x + r * cols;
    uint8_t* codes = out + r * cols;
    uint32_t saturated = 0, underflowed = 0;  // at most cols per row
#pragma omp simd reduction(+ : saturated, underflowed)
    for (std::size_t c = 0; c < cols; ++c) {
      uint32_t element_saturated = 0, element_underflowed = 0;
      const uint8_t q = quantize_fp8_branchless<E4m3>(row[c], scale[c], element_saturated, element_underflowed);
      codes[c] = uint8_t(select_bits(finite[c] != 0, q, kMxNanElement));
      saturated += element_saturated & finite[c];
      underflowed += element_underflowed & finite[c];
    }
    counts.saturated += saturated;
    counts.underflowed += underflowed;
  }
  return counts;
}

template <bool E4m3>
ColumnCounts quantize_strip_baseline(const float* x, std::size_t height, std::size_t cols, MxScaleRounding rounding,
                                     uint8_t* out, uint8_t* scales, StripScratch& s) {
  return quantize_strip<E4m3>(x, height, cols, rounding, out, scales, s);
}
template <bool E4m3>
MPB_FP8_AVX512 ColumnCounts quantize_strip_avx512(const float* x, std::size_t height, std::size_t cols,
                                                  MxScaleRounding rounding, uint8_t* out, uint8_t* scales,
                                                  StripScratch& s) {
  return quantize_strip<E4m3>(x, height, cols, rounding, out, scales, s);
}

using StripKernel = ColumnCounts (*)(const float*, std::size_t, std::size_t, MxScaleRounding, uint8_t*, uint8_t*,
                                     StripScratch&);

StripKernel strip_kernel(bool e4m3) {
  if (fp8_loop_isa() == Fp8LoopIsa::avx512) return e4m3 ? &quantize_strip_avx512<true> : &quantize_strip_avx512<false>;
  return e4m3 ? &quantize_strip_baseline<true> : &quantize_strip_baseline<false>;
}

}  // namespace

const char* mx_scale_rounding_name(MxScaleRounding rounding) {
  return rounding == MxScaleRounding::up ? "up" : "down";
}

BlockQuantizeStats mx_quantize_rows(std::span<const float> x, std::size_t rows, std::size_t cols,
                                    num::Format element, std::span<uint8_t> out, std::span<uint8_t> scales,
                                    MxScaleRounding rounding) {
  const bool e4m3 = is_e4m3(element, "mx_quantize");
  const std::size_t per_row = mx_blocks_per_row(cols);
  if (x.size() != rows * cols || out.size() < x.size() || scales.size() < rows * per_row) {
    throw std::invalid_argument("mx_quantize: sizes do not match rows x cols");
  }
  BlockQuantizeStats stats;
  stats.elements = x.size();
  stats.blocks = rows * per_row;
  quantize_blocks(x.data(), rows, cols, e4m3, rounding, out.data(), scales.data(), stats);
  return stats;
}

void mx_dequantize_rows(std::span<const uint8_t> q, std::span<const uint8_t> scales, std::size_t rows,
                        std::size_t cols, num::Format element, std::span<float> out) {
  const bool e4m3 = is_e4m3(element, "mx_dequantize");
  const std::size_t per_row = mx_blocks_per_row(cols);
  if (q.size() != rows * cols || out.size() < q.size() || scales.size() < rows * per_row) {
    throw std::invalid_argument("mx_dequantize: sizes do not match rows x cols");
  }
  const float* table = fp8_value_table(e4m3);
  const std::size_t blocks = rows * per_row;
#pragma omp parallel for schedule(static) if (q.size() >= kFp8ParallelElements)
  for (std::size_t block = 0; block < blocks; ++block) {
    const std::size_t r = block / per_row, b = block % per_row;
    const std::size_t begin = r * cols + b * kMxBlockSize;
    const int n = int(std::min<std::size_t>(kMxBlockSize, cols - b * kMxBlockSize));
    dequantize_block(q.data() + begin, n, scales[block], table, out.data() + begin);
  }
}

BlockQuantizeStats mx_quantize(std::span<const float> x, num::Format element, std::span<uint8_t> out,
                               std::span<uint8_t> scales, MxScaleRounding rounding) {
  return mx_quantize_rows(x, 1, x.size(), element, out, scales, rounding);
}

void mx_dequantize(std::span<const uint8_t> q, std::span<const uint8_t> scales, num::Format element,
                   std::span<float> out) {
  mx_dequantize_rows(q, scales, 1, q.size(), element, out);
}

BlockQuantizeStats mx_quantize_columns(std::span<const float> x, std::size_t rows, std::size_t cols,
                                       num::Format element, std::span<uint8_t> out, std::span<uint8_t> scales,
                                       MxScaleRounding rounding) {
  const bool e4m3 = is_e4m3(element, "mx_quantize_columns");
  const std::size_t strips = mx_blocks_per_row(rows);
  if (x.size() != rows * cols || out.size() < x.size() || scales.size() < strips * cols) {
    throw std::invalid_argument("mx_quantize_columns: sizes do not match rows x cols");
  }
  BlockQuantizeStats stats;
  stats.elements = x.size();
  stats.blocks = strips * cols;
  const StripKernel kernel = strip_kernel(e4m3);
  uint64_t saturated = 0, underflowed = 0, nan_blocks = 0;
#pragma omp parallel reduction(+ : saturated, underflowed, nan_blocks) if (x.size() >= kFp8ParallelElements)
  {
    StripScratch scratch(cols);
#pragma omp for schedule(static)
    for (std::size_t s = 0; s < strips; ++s) {
      const std::size_t first = s * kMxBlockSize, height = std::min<std::size_t>(kMxBlockSize, rows - first);
      const ColumnCounts counts =
          kernel(x.data() + first * cols, height, cols, rounding, out.data() + first * cols, scales.data() + s * cols,
                 scratch);
      saturated += counts.saturated;
      underflowed += counts.underflowed;
      nan_blocks += counts.nan_blocks;
    }
  }
  stats.saturated = saturated;
  stats.underflowed = underflowed;
  stats.nan_blocks = nan_blocks;
  return stats;
}

void mx_dequantize_columns(std::span<const uint8_t> q, std::span<const uint8_t> scales, std::size_t rows,
                           std::size_t cols, num::Format element, std::span<float> out) {
  const bool e4m3 = is_e4m3(element, "mx_dequantize_columns");
  const std::size_t strips = mx_blocks_per_row(rows);
  if (q.size() != rows * cols || out.size() < q.size() || scales.size() < strips * cols) {
    throw std::invalid_argument("mx_dequantize_columns: sizes do not match rows x cols");
  }
  const float* table = fp8_value_table(e4m3);
  // Row r's elements take the scales of strip r / 32; a NaN scale decodes every element to NaN.
#pragma omp parallel for schedule(static) if (q.size() >= kFp8ParallelElements)
  for (std::size_t r = 0; r < rows; ++r) {
    const uint8_t* codes = q.data() + r * cols;
    const uint8_t* strip_scales = scales.data() + (r / kMxBlockSize) * cols;
    float* values = out.data() + r * cols;
#pragma omp simd
    for (std::size_t c = 0; c < cols; ++c) {
      const uint32_t value = num::float_to_bits(table[codes[c]] * e8m0_to_f32(strip_scales[c]));
      values[c] = num::bits_to_float(select_bits(strip_scales[c] == kE8m0Nan, 0x7FC00000u, value));
    }
  }
}

CurrentScalingResult quantize_current_scaling(std::span<const float> x, num::Format format, std::span<uint8_t> out,
                                              int margin) {
  const bool e4m3 = is_e4m3(format, "quantize_current_scaling");
  if (out.size() < x.size()) throw std::invalid_argument("quantize_current_scaling: output smaller than input");
  if (margin < 0 || margin > 30) throw std::invalid_argument("quantize_current_scaling: margin in [0, 30]");
  CurrentScalingResult result;
  result.amax = num::bits_to_float(amax_bits(x));
  result.elements = x.size();
  result.scale = fp8_scale_from_amax(result.amax, float(num::format_info(format).max_finite), margin, 1.0f);
  result.scale_inv = 1.0f / result.scale;
  const Fp8TensorCounts counts = quantize_fp8_tensor(x, result.scale, e4m3, out);
  result.saturated = counts.saturated;
  result.underflowed = counts.underflowed;
  return result;
}

void dequantize_per_tensor(std::span<const uint8_t> q, float scale_inv, num::Format format, std::span<float> out) {
  const bool e4m3 = is_e4m3(format, "dequantize_per_tensor");
  if (out.size() < q.size()) throw std::invalid_argument("dequantize_per_tensor: output smaller than input");
  dequantize_fp8_tensor(q, scale_inv, e4m3, out);
}

}  // namespace mpbench::amp
