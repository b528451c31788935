#pragma once
// The recording of a few profiled training steps: every op range the model and trainer run (it
// listens to the ops, see OpRangeListener), with its timestamps, and on a GPU the CUPTI activity
// under them, each range pushing an external correlation id so that every kernel, memcpy and
// memset it launches (cuBLAS's included) is tied to its op, layer and phase.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/backend.hpp"
#include "profiler/activity.hpp"
#include "workloads/data.hpp"
#include "workloads/ops.hpp"

namespace mpbench::workloads {

class StepProfiler : public OpRangeListener {
 public:
  // Ends the recording and returns it: the op ranges, and on a GPU the activity records. Work the
  // ops queued is finished first.
  virtual profiler::Trace finish() = 0;
  // Whether the trace holds GPU activity (kernels, copies) for a breakdown.
  virtual bool records_gpu_activity() const = 0;
  // What recorded the trace, for the result document.
  virtual std::string source() const = 0;
  // The hardware metric counted per kernel (KernelRecord::tensor_pipe_pct), when one was.
  virtual std::optional<std::string> counted_metric() const { return std::nullopt; }
};

// Op ranges timed on the host's steady clock, for ops that run synchronously on the host.
std::unique_ptr<StepProfiler> host_step_profiler();
// A CUPTI collector around the steps; op ranges are timed on CUPTI's clock. `ops` is synchronized
// before the collector stops. Throws profiler::CuptiUnavailable when CUPTI cannot collect.
std::unique_ptr<StepProfiler> cupti_step_profiler(OpsMemory& ops);

// As cupti_step_profiler, and every kernel also counted with CUPTI's range profiler (kernel
// replay: slow, never for timed steps); finish() gives each kernel record its tensor pipe %, for
// at most `max_kernels` kernels. Throws profiler::CuptiUnavailable when counters cannot be read
// (no permission among the causes), or when the counts do not match the kernels.
std::unique_ptr<StepProfiler> counting_step_profiler(OpsMemory& ops, std::size_t max_kernels);

// Starts the profiler a run on `device` uses: CUPTI on a GPU, the host clock on the CPU.
using StartStepProfiler = std::function<std::unique_ptr<StepProfiler>(const DeviceInfo& device, OpsMemory& ops)>;
std::unique_ptr<StepProfiler> start_step_profiler(const DeviceInfo& device, OpsMemory& ops);

// A token source that times its batches on the host clock: the data-reading half of the input
// wait a profiled step records (details.host; the other half is the "inputs" op range).
class TimedTokenSource final : public TokenSource {
 public:
  explicit TimedTokenSource(TokenSource& inner) : inner_(inner) {}
  TokenBatch next_batch(int batch, int seq_len) override;
  double seconds() const { return seconds_; }

 private:
  TokenSource& inner_;
  double seconds_ = 0;
};

// A range name (op_range_name) without its layer ("c_fc forward"): ops summed over layers, as breakdowns key them.
std::string op_key_of_range(std::string_view range_name);

}  // namespace mpbench::workloads
