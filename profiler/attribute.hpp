#pragma once
// Which op range launched each GPU activity. Exact when the range pushed an external correlation
// id (range -> external id -> correlation ids -> kernels); otherwise the innermost range that
// encloses the launching API call on the same host thread. Host and GPU times are never compared:
// launches are asynchronous.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "profiler/activity.hpp"

namespace mpbench::profiler {

enum class AttributionMethod { external_correlation, enclosing_range, none };

struct Attribution {
  std::optional<std::size_t> range;  // index into Trace::ranges
  AttributionMethod method = AttributionMethod::none;
};

class Attributor {
 public:
  explicit Attributor(const Trace& trace);
  // The range that launched the activity with this correlation id.
  Attribution attribute(std::uint32_t correlation_id) const;

 private:
  std::optional<std::size_t> innermost_enclosing(const ApiRecord& call) const;

  const Trace& trace_;
  std::unordered_map<std::uint32_t, std::size_t> range_by_correlation_;
  std::unordered_map<std::uint32_t, std::size_t> api_by_correlation_;
};

struct KernelAttributions {
  std::vector<Attribution> per_kernel;  // parallel to Trace::kernels
  std::size_t unattributed = 0;
};

KernelAttributions attribute_kernels(const Trace& trace);

}  // namespace mpbench::profiler
