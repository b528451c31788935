#include "profiler/kernel_counters.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "profiler/attribute.hpp"

namespace mpbench::profiler {

bool attach_tensor_pipe_counters(Trace& trace, const std::vector<double>& counters, std::size_t steps) {
  if (counters.empty() || counters.size() * steps != trace.kernels.size()) return false;
  // One host thread launches them all, so correlation ids are in launch order; kernels of one
  // launch call (a graph, a library's multi-kernel launch) run on one stream, in start order.
  std::vector<std::size_t> order(trace.kernels.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const KernelRecord &x = trace.kernels[a], &y = trace.kernels[b];
    return std::pair(x.where.correlation_id, x.time.start_ns) < std::pair(y.where.correlation_id, y.time.start_ns);
  });
  for (std::size_t i = 0; i < order.size(); ++i)
    trace.kernels[order[i]].tensor_pipe_pct = counters[i % counters.size()];
  return true;
}

namespace {

using KernelKey = std::pair<std::string, std::string>;  // op range name, kernel name

KernelKey key_of(const Trace& trace, const Attribution& a, const KernelRecord& k) {
  return {a.range ? trace.ranges[*a.range].name : std::string(), k.name};
}

}  // namespace

std::size_t carry_tensor_pipe_counters(const Trace& counted, Trace& target) {
  std::map<KernelKey, std::pair<double, int>> sums;
  const KernelAttributions from = attribute_kernels(counted);
  for (std::size_t i = 0; i < counted.kernels.size(); ++i) {
    const KernelRecord& k = counted.kernels[i];
    if (!k.tensor_pipe_pct) continue;
    auto& [sum, count] = sums[key_of(counted, from.per_kernel[i], k)];
    sum += *k.tensor_pipe_pct;
    ++count;
  }
  const KernelAttributions to = attribute_kernels(target);
  std::size_t set = 0;
  for (std::size_t i = 0; i < target.kernels.size(); ++i) {
    KernelRecord& k = target.kernels[i];
    if (k.tensor_pipe_pct) continue;
    const auto it = sums.find(key_of(target, to.per_kernel[i], k));
    if (it == sums.end()) continue;
    k.tensor_pipe_pct = it->second.first / it->second.second;
    ++set;
  }
  return set;
}

}  // namespace mpbench::profiler
