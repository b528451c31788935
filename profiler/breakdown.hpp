#pragma once
// Where the GPU time of a region went: per kernel category, per op range, the top kernels, and
// the launch gaps (GPU idle between consecutive activities on a stream). Written into a case's
// details["breakdown"] as
//   {"categories": {category: s}, "ops": {op: s}, "kernel_count": N, "top_kernels": [...],
//    "gaps_s": x, "region_s": y, "unattributed_s": z}
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "profiler/activity.hpp"
#include "profiler/classify.hpp"

namespace mpbench::profiler {

struct TopKernel {
  std::string name;
  Category category = Category::other;
  TensorCoreEvidence tensor_cores = TensorCoreEvidence::no_evidence;
  double total_s = 0;
  std::size_t count = 0;
};

struct Breakdown {
  std::map<std::string, double> categories;  // seconds; memcpy/memset count as "copy"
  std::map<std::string, double> ops;         // seconds per op range name (attributed activities only)
  std::size_t kernel_count = 0;
  std::vector<TopKernel> top_kernels;        // by total time, longest first
  double gaps_s = 0;
  double region_s = 0;
  double unattributed_s = 0;  // GPU time no op range could be found for

  nlohmann::json to_json() const;
};

struct BreakdownOptions {
  std::optional<Interval> region;  // default: the trace's span
  std::size_t top_kernels = 10;
};

// The n longest of kernels grouped by name, by total time, longest first; equal totals stay in
// name order, so the list is reproducible.
std::vector<TopKernel> longest_kernels(std::map<std::string, TopKernel> by_name, std::size_t n);

// Activities are clipped to the region; time in a category is summed over streams, so with
// concurrent streams the categories can add up to more than the region.
Breakdown compute_breakdown(const Trace& trace, const BreakdownOptions& options = {});

// The per-category seconds of a case's details.breakdown: the "categories" object, or a flat
// {category: seconds} mapping as older documents and hand-written fixtures have.
std::map<std::string, double> breakdown_categories(const nlohmann::json& breakdown);

}  // namespace mpbench::profiler
