#pragma once
// Activity records as plain structs, apart from CUPTI: the collector fills them from CUPTI's
// buffers, the tests build them by hand, and everything downstream (classification, attribution,
// breakdowns, traces) reads only these. Times are nanoseconds on one clock (CUPTI's timestamp).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpbench::profiler {

struct Interval {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
  bool contains(const Interval& inner) const { return start_ns <= inner.start_ns && inner.end_ns <= end_ns; }
};

// Where a GPU activity ran and which API call enqueued it.
struct GpuPlacement {
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;  // matches ApiRecord::correlation_id of the launch
};

struct KernelRecord {
  std::string name;  // as CUPTI gives it (mangled); rules match identifiers inside it
  Interval time;
  GpuPlacement where;
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t registers_per_thread = 0;
  std::uint32_t shared_memory_bytes = 0;  // static + dynamic
  // Tensor pipe activity from the range profiler (percent of peak), when counters were collected.
  std::optional<double> tensor_pipe_pct;
};

enum class CopyKind { host_to_device, device_to_host, device_to_device, host_to_host, peer, other };
std::string_view copy_kind_name(CopyKind kind);

struct MemcpyRecord {
  CopyKind kind = CopyKind::other;
  std::uint64_t bytes = 0;
  Interval time;
  GpuPlacement where;
};

struct MemsetRecord {
  std::uint64_t bytes = 0;
  Interval time;
  GpuPlacement where;
};

// A CUDA runtime (or driver) API call on a host thread.
struct ApiRecord {
  std::string name;  // cudaLaunchKernel, cudaMemcpyAsync, ...
  Interval time;
  std::uint64_t thread = 0;
  std::uint32_t correlation_id = 0;
};

// An NVTX range or a host-timed op range. `external_id` is the id the range pushed for external
// correlation (0: none), which CUPTI ties to every API call made while it was on top.
struct RangeRecord {
  std::string name;
  Interval time;
  std::uint64_t thread = 0;
  std::uint64_t external_id = 0;
};

// One NVTX marker as CUPTI reports it: a range's start (which carries the name) or its end, the
// two tied by id; or an instantaneous mark. Markers become ranges through ranges_from_markers.
struct MarkerEvent {
  enum class Kind { start, end, instant };
  Kind kind = Kind::instant;
  std::uint32_t id = 0;
  std::uint64_t timestamp_ns = 0;
  std::uint64_t thread = 0;
  std::string name;
};

// NVTX ranges from markers in any delivery order: each start joined with the next end of its id
// in time, in start order; marks and starts or ends without their partner (a range open across
// the collection's edges) are left out.
std::vector<RangeRecord> ranges_from_markers(const std::vector<MarkerEvent>& markers);

struct ExternalCorrelation {
  std::uint64_t external_id = 0;
  std::uint32_t correlation_id = 0;
};

struct Trace {
  std::uint64_t process_id = 0;  // the host process; GPU activities are placed by device
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<ApiRecord> api_calls;
  std::vector<RangeRecord> ranges;
  // NVTX ranges CUPTI recorded (the ops' own NVTX ranges, libraries'), when NVTX injection reached
  // it; external_id is 0. Attribution goes through `ranges`' external ids, not through these.
  std::vector<RangeRecord> nvtx_ranges;
  std::vector<ExternalCorrelation> external_correlations;

  // The span from the first start to the last end of every record; nullopt when empty.
  std::optional<Interval> span() const;
};

}  // namespace mpbench::profiler
