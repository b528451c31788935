#pragma once
// What a training step spends on the host side, from the profiled steps' records: the time it
// waits for its input (reading the batch, then staging it to the device: the "inputs" op
// ranges), the host-device synchronisations it makes (runtime calls that block the host until the
// device is done), and the device time of its kernels and copies, which explain sets against the
// step time: a mode whose kernels got faster and whose step did not is held by the host.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "profiler/activity.hpp"

namespace mpbench::profiler {

struct HostEvidence {
  double data_s_per_step = 0;     // reading the next batch (the token source), on the host clock
  double staging_s_per_step = 0;  // the "inputs" op ranges: host-to-device staging of the batch
  double input_wait_s_per_step() const { return data_s_per_step + staging_s_per_step; }
  // Blocking runtime calls per step; none on the CPU (its ops run synchronously: nothing to count).
  std::optional<double> host_syncs_per_step;
  // Device time of kernels, copies and memsets per step; none without GPU activity.
  std::optional<double> kernel_s_per_step;
  double step_s = 0;  // the profiled steps' median

  nlohmann::json to_json() const;
};

// Whether a runtime API call (as CUPTI names it, "cudaStreamSynchronize_v3020") blocks the host
// until the device is done: device, stream and event synchronisation, and the synchronous copies.
bool is_host_sync(std::string_view api_name);

// `data_seconds`: the token source's time over all `steps`; `gpu_activity`: the trace holds
// CUPTI's records (api calls, kernels), not the host clock's ranges only.
HostEvidence host_evidence(const Trace& trace, std::size_t steps, double data_seconds, double step_median_s,
                           bool gpu_activity);

}  // namespace mpbench::profiler
