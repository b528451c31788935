#pragma once
// The fused cast-transpose-amax of fp8 training (Transformer Engine's cast_transpose with amax): one
// pass over a row-major bf16 matrix X [rows x cols] with a given per-tensor scale writes the e4m3
// codes of X * scale (rows x cols), the same codes transposed (cols x rows, row-major, for the
// GEMM that needs X^T) and the amax of X. The per-element and per-tile math below is what the
// reference loops, the CPU backend's tiled loop and the CUDA kernel all run.
#include <cstddef>
#include <cstdint>

#include "amp/fp8_scaling.hpp"
#include "backends/elementwise.hpp"
#include "core/hostdevice.hpp"

namespace mpbench::elem {

// What one pass gathers besides the codes: the amax of X as fp32 bits (amp::fold_amax_bits: |x|
// in bit order, a NaN anywhere gives bits above inf, so the amax is NaN), and the count of finite
// values (and infinities) that x * scale pushed past e4m3's range and saturated to +-448.
struct CastTransposeTotals {
  std::uint32_t amax_bits = 0;
  std::uint32_t saturated = 0;
};

// Folds another part's totals in (a reduction over tiles, threads or blocks).
MPB_HD void merge(CastTransposeTotals& into, const CastTransposeTotals& part) {
  into.amax_bits = into.amax_bits > part.amax_bits ? into.amax_bits : part.amax_bits;
  into.saturated += part.saturated;
}

// One element: its |x| folded into the amax, and its e4m3 code of x * scale (round to nearest
// even, saturating to +-448, NaN stays NaN with its sign): amp/fp8_scaling.hpp's
// quantize_fp8_branchless, the same code as quantize_fp8(x, scale, e4m3).
MPB_HD std::uint8_t cast_transpose_element(bf16_bits x, float scale, CastTransposeTotals& totals) {
  const float value = load(x);
  totals.amax_bits = amp::fold_amax_bits(totals.amax_bits, value);
  std::uint32_t underflowed = 0;  // not reported: the branchless form counts it for free
  return amp::quantize_fp8_branchless<true>(value, scale, totals.saturated, underflowed);
}

// The tile of rows [row0, row0 + tile_rows) and columns [col0, col0 + tile_cols), clipped to the
// matrix: codes[r * cols + c] and transposed[c * rows + r] both get element (r, c)'s code.
MPB_HD void cast_transpose_tile(const bf16_bits* x, std::size_t rows, std::size_t cols, std::size_t row0,
                                std::size_t col0, std::size_t tile_rows, std::size_t tile_cols, float scale,
                                std::uint8_t* codes, std::uint8_t* transposed, CastTransposeTotals& totals) {
  const std::size_t row_end = row0 + tile_rows < rows ? row0 + tile_rows : rows;
  const std::size_t col_end = col0 + tile_cols < cols ? col0 + tile_cols : cols;
  for (std::size_t r = row0; r < row_end; ++r)
    for (std::size_t c = col0; c < col_end; ++c) {
      const std::uint8_t code = cast_transpose_element(x[r * cols + c], scale, totals);
      codes[r * cols + c] = code;
      transposed[c * rows + r] = code;
    }
}

// Bytes one pass moves per element: the bf16 read once, two e4m3 codes written.
constexpr double kCastTransposeBytesPerElement = 2.0 + 1.0 + 1.0;

}  // namespace mpbench::elem
