#include "amp/multi_tensor_plan.hpp"

namespace mpbench::amp {

std::vector<Launch> plan_launches(std::span<const int64_t> sizes, int max_tensors, int max_blocks,
                                  int64_t chunk_elements) {
  std::vector<Launch> launches;
  Launch current;
  auto close_launch = [&] {
    launches.push_back(std::move(current));
    current = {};
  };
  for (int t = 0; t < int(sizes.size()); ++t) {
    const int64_t chunks = (sizes[t] + chunk_elements - 1) / chunk_elements;
    for (int64_t c = 0; c < chunks; ++c) {
      if (current.tensors.empty() || current.tensors.back() != t) {
        if (int(current.tensors.size()) == max_tensors) close_launch();
        current.tensors.push_back(t);
      }
      current.blocks.push_back({int(current.tensors.size()) - 1, int32_t(c)});
      if (int(current.blocks.size()) == max_blocks) close_launch();
    }
  }
  if (!current.blocks.empty()) close_launch();
  return launches;
}

}  // namespace mpbench::amp
