#pragma once
// How a multi-tensor kernel covers a list of tensors: each launch carries a small table of tensors
// and, per thread block, which tensor and which chunk of it the block processes. Planned on the
// host without CUDA so the packing is tested everywhere.
#include <cstdint>
#include <span>
#include <vector>

namespace mpbench::amp {

struct BlockWork {
  int tensor_slot;  // index into Launch::tensors
  int32_t chunk;    // the block covers elements [chunk * chunk_elements, +chunk_elements)
};

struct Launch {
  std::vector<int> tensors;  // indices into the caller's tensor list
  std::vector<BlockWork> blocks;
};

// Every chunk of every non-empty tensor appears in exactly one block; no launch holds more than
// max_tensors tensors or max_blocks blocks.
std::vector<Launch> plan_launches(std::span<const int64_t> sizes, int max_tensors, int max_blocks,
                                  int64_t chunk_elements);

}  // namespace mpbench::amp
