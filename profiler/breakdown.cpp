#include "profiler/breakdown.hpp"

#include <algorithm>
#include <tuple>

#include "profiler/attribute.hpp"

namespace mpbench::profiler {

namespace {

constexpr double kSecondsPerNs = 1e-9;

double clipped_seconds(const Interval& t, const Interval& region) {
  const auto start = std::max(t.start_ns, region.start_ns);
  const auto end = std::min(t.end_ns, region.end_ns);
  return end > start ? static_cast<double>(end - start) * kSecondsPerNs : 0.0;
}

// One GPU activity reduced to what the breakdown needs.
struct Activity {
  Interval time;
  GpuPlacement where;
};

std::vector<Activity> gpu_activities(const Trace& trace) {
  std::vector<Activity> out;
  for (const auto& k : trace.kernels) out.push_back({k.time, k.where});
  for (const auto& m : trace.memcpys) out.push_back({m.time, m.where});
  for (const auto& m : trace.memsets) out.push_back({m.time, m.where});
  return out;
}

// Idle time between consecutive activities of one stream, inside the region. Overlapping
// activities on a stream (which CUDA does not produce, but clipping and clocks can) add no gap.
double launch_gaps_s(const Trace& trace, const Interval& region) {
  auto activities = gpu_activities(trace);
  std::erase_if(activities, [&](const Activity& a) { return clipped_seconds(a.time, region) <= 0; });
  std::sort(activities.begin(), activities.end(), [](const Activity& a, const Activity& b) {
    return std::tie(a.where.device, a.where.stream, a.time.start_ns) <
           std::tie(b.where.device, b.where.stream, b.time.start_ns);
  });
  double gaps = 0;
  std::uint64_t busy_until = 0;  // the furthest end so far on the current stream
  for (std::size_t i = 0; i < activities.size(); ++i) {
    const auto& a = activities[i];
    const bool same_stream = i > 0 && activities[i - 1].where.device == a.where.device &&
                             activities[i - 1].where.stream == a.where.stream;
    if (same_stream && a.time.start_ns > busy_until) gaps += clipped_seconds({busy_until, a.time.start_ns}, region);
    busy_until = same_stream ? std::max(busy_until, a.time.end_ns) : a.time.end_ns;
  }
  return gaps;
}

void add_copy(Breakdown& b, const Attributor& attributor, const Trace& trace, const Interval& time,
              std::uint32_t correlation_id, const Interval& region) {
  const double s = clipped_seconds(time, region);
  if (s <= 0) return;
  b.categories[std::string(category_name(Category::copy))] += s;
  const auto a = attributor.attribute(correlation_id);
  if (a.range) b.ops[trace.ranges[*a.range].name] += s;
  else b.unattributed_s += s;
}

}  // namespace

std::vector<TopKernel> longest_kernels(std::map<std::string, TopKernel> by_name, std::size_t n) {
  std::vector<TopKernel> all;
  for (auto& [name, k] : by_name) all.push_back(std::move(k));
  std::stable_sort(all.begin(), all.end(), [](const TopKernel& a, const TopKernel& b) { return a.total_s > b.total_s; });
  if (all.size() > n) all.resize(n);
  return all;
}

Breakdown compute_breakdown(const Trace& trace, const BreakdownOptions& options) {
  Breakdown b;
  const auto region = options.region ? options.region : trace.span();
  if (!region) return b;
  b.region_s = static_cast<double>(region->duration_ns()) * kSecondsPerNs;

  const Attributor attributor(trace);
  std::map<std::string, TopKernel> by_name;
  for (const auto& k : trace.kernels) {
    const double s = clipped_seconds(k.time, *region);
    if (s <= 0) continue;
    ++b.kernel_count;
    const auto a = attributor.attribute(k.where.correlation_id);
    const std::string_view op = a.range ? std::string_view(trace.ranges[*a.range].name) : std::string_view{};
    const auto c = classify_kernel(k, op);
    b.categories[std::string(category_name(c.category))] += s;
    if (a.range) b.ops[std::string(op)] += s;
    else b.unattributed_s += s;
    auto& top = by_name[k.name];
    top.name = k.name;
    top.category = c.category;
    top.tensor_cores = c.tensor_cores;
    top.total_s += s;
    ++top.count;
  }
  for (const auto& m : trace.memcpys) add_copy(b, attributor, trace, m.time, m.where.correlation_id, *region);
  for (const auto& m : trace.memsets) add_copy(b, attributor, trace, m.time, m.where.correlation_id, *region);
  b.top_kernels = longest_kernels(std::move(by_name), options.top_kernels);
  b.gaps_s = launch_gaps_s(trace, *region);
  return b;
}

nlohmann::json Breakdown::to_json() const {
  nlohmann::json top = nlohmann::json::array();
  for (const auto& k : top_kernels)
    top.push_back({{"name", k.name},
                   {"category", category_name(k.category)},
                   {"tensor_cores", evidence_name(k.tensor_cores)},
                   {"total_s", k.total_s},
                   {"count", k.count}});
  return {{"categories", categories}, {"ops", ops},         {"kernel_count", kernel_count},
          {"top_kernels", top},       {"gaps_s", gaps_s},   {"region_s", region_s},
          {"unattributed_s", unattributed_s}};
}

std::map<std::string, double> breakdown_categories(const nlohmann::json& breakdown) {
  std::map<std::string, double> out;
  if (!breakdown.is_object()) return out;
  const auto& source = breakdown.contains("categories") ? breakdown["categories"] : breakdown;
  if (!source.is_object()) return out;
  for (const auto& [name, value] : source.items())
    if (value.is_number()) out[name] = value.get<double>();
  return out;
}

}  // namespace mpbench::profiler

