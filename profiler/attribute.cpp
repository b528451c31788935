#include "profiler/attribute.hpp"

namespace mpbench::profiler {

namespace {

// Nested ranges each push their own id, so an id maps to one range; should two share it, the
// later-starting (inner) one wins.
std::unordered_map<std::uint64_t, std::size_t> ranges_by_external_id(const Trace& trace) {
  std::unordered_map<std::uint64_t, std::size_t> out;
  for (std::size_t i = 0; i < trace.ranges.size(); ++i) {
    const auto& r = trace.ranges[i];
    if (r.external_id == 0) continue;
    auto [it, inserted] = out.try_emplace(r.external_id, i);
    if (!inserted && trace.ranges[it->second].time.start_ns < r.time.start_ns) it->second = i;
  }
  return out;
}

}  // namespace

Attributor::Attributor(const Trace& trace) : trace_(trace) {
  const auto by_external = ranges_by_external_id(trace);
  for (const auto& link : trace.external_correlations)
    if (auto it = by_external.find(link.external_id); it != by_external.end())
      range_by_correlation_[link.correlation_id] = it->second;
  for (std::size_t i = 0; i < trace.api_calls.size(); ++i)
    api_by_correlation_.try_emplace(trace.api_calls[i].correlation_id, i);
}

std::optional<std::size_t> Attributor::innermost_enclosing(const ApiRecord& call) const {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < trace_.ranges.size(); ++i) {
    const auto& r = trace_.ranges[i];
    if (r.thread != call.thread || !r.time.contains(call.time)) continue;
    if (!best || r.time.duration_ns() < trace_.ranges[*best].time.duration_ns()) best = i;
  }
  return best;
}

Attribution Attributor::attribute(std::uint32_t correlation_id) const {
  if (auto it = range_by_correlation_.find(correlation_id); it != range_by_correlation_.end())
    return {it->second, AttributionMethod::external_correlation};
  if (auto it = api_by_correlation_.find(correlation_id); it != api_by_correlation_.end())
    if (auto range = innermost_enclosing(trace_.api_calls[it->second])) return {range, AttributionMethod::enclosing_range};
  return {};
}

KernelAttributions attribute_kernels(const Trace& trace) {
  const Attributor attributor(trace);
  KernelAttributions out;
  for (const auto& k : trace.kernels) {
    out.per_kernel.push_back(attributor.attribute(k.where.correlation_id));
    if (!out.per_kernel.back().range) ++out.unattributed;
  }
  return out;
}

}  // namespace mpbench::profiler
