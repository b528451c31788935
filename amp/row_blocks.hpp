#pragma once
// The loop over the blocks of a row-blocked matrix that the MX and NVFP4 quantizers share (host,
// OpenMP: include it only where the build compiles with OpenMP, as amp/'s own sources are).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "amp/fp8_scaling.hpp"

namespace mpbench::amp {

struct RowBlockCounts {
  uint64_t saturated = 0;
  uint64_t underflowed = 0;
  uint64_t nan_blocks = 0;
};

// Every block of `block_size` consecutive elements along the rows of a row-major rows x cols
// matrix (a shorter tail block per row when cols % block_size != 0), shared among the OpenMP
// threads from kFp8ParallelElements elements on. body(block, begin, n) quantizes block `block`
// (its index in row-major block order: its scale's index), elements [begin, begin + n), and
// returns its counts; their sums come back.
template <typename Body>
RowBlockCounts for_each_row_block(std::size_t rows, std::size_t cols, std::size_t block_size, Body body) {
  const std::size_t per_row = (cols + block_size - 1) / block_size, blocks = rows * per_row;
  uint64_t saturated = 0, underflowed = 0, nan_blocks = 0;
#pragma omp parallel for schedule(static) reduction(+ : saturated, underflowed, nan_blocks) \
    if (rows * cols >= kFp8ParallelElements)
  for (std::size_t block = 0; block < blocks; ++block) {
    const std::size_t b = block % per_row;
    const RowBlockCounts c =
        body(block, (block / per_row) * cols + b * block_size, std::min(block_size, cols - b * block_size));
    saturated += c.saturated;
    underflowed += c.underflowed;
    nan_blocks += c.nan_blocks;
  }
  return {saturated, underflowed, nan_blocks};
}

}  // namespace mpbench::amp
