#pragma once
// Hardware counters per kernel (`mpbench run --counters`): CUPTI's range profiler API (the
// cuptiRangeProfiler* and cuptiProfilerHost* calls) with one range per kernel (auto range), each
// kernel replayed as often as the metrics need (kernel replay). It measures whether a kernel kept
// the Tensor Core pipe busy, the "measured" kind of Tensor Core evidence (classify.hpp).
//
// Counters need permission (NVreg_RestrictProfilingToAdminUsers=0 or root) and a chip CUPTI knows;
// every failure is a CuptiUnavailable naming the cause, and the run goes on without counters.
// Replay serialises and repeats kernels, so counted steps are never timed steps.
#include <cstddef>
#include <string>
#include <vector>

#include "profiler/activity.hpp"
#include "profiler/cupti_collector.hpp"

namespace mpbench::profiler {

// The tensor pipe's busy share, percent of peak while the SMs were active: the first of these the
// chip knows (Hopper and Ampere; Ada's _v2; Blackwell's tc pipe) is collected.
inline const std::vector<std::string>& tensor_pipe_metric_candidates() {
  static const std::vector<std::string> names = {
      "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
      "sm__pipe_tensor_cycles_active_v2.avg.pct_of_peak_sustained_active",
      "sm__pipe_tc_cycles_active.avg.pct_of_peak_sustained_active",
      "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"};
  return names;
}

// Collects one metric for every kernel launched on the current CUDA context between construction
// and stop(). Only one per process, and not beside another CUPTI profiler session.
class KernelCounterCollector {
 public:
  // Starts counting the first metric of `candidates` the chip supports. `max_kernels`: how many
  // launches the counter data can hold (later ones are dropped and counted in dropped_kernels()).
  KernelCounterCollector(const std::vector<std::string>& candidates, std::size_t max_kernels);
  ~KernelCounterCollector();
  KernelCounterCollector(const KernelCounterCollector&) = delete;
  KernelCounterCollector& operator=(const KernelCounterCollector&) = delete;

  const std::string& metric() const { return metric_; }
  // Ends counting (synchronize the device first) and returns the metric's value for each kernel
  // (one auto range each), in launch order.
  std::vector<double> stop();
  std::size_t dropped_kernels() const { return dropped_; }

 private:
  struct Session;
  Session* session_ = nullptr;
  std::string metric_;
  std::size_t dropped_ = 0;
};

// The first of `candidates` that CUPTI's metric tables know for `chip` (a name such as "GH100",
// as cuptiDeviceGetChipName gives it): what KernelCounterCollector would count there. Reads the
// tables on the host, so it needs libcupti but no GPU; CuptiUnavailable when none is known.
std::string first_known_metric(const std::string& chip, const std::vector<std::string>& candidates);

// Sets tensor_pipe_pct of the kernels of `trace` from `counters`, which counted the same kernels
// in the same order (the kernel records sorted by their launch's correlation id); or, with
// `steps` > 1, counted one of the `steps` steps the trace holds, each launching the same kernels:
// kernel i of every step gets counters[i]. Returns false, changing nothing, when the trace does
// not hold steps × counters.size() kernels.
bool attach_tensor_pipe_counters(Trace& trace, const std::vector<double>& counters, std::size_t steps = 1);

// Sets tensor_pipe_pct of each kernel of `target` that has none from the counted kernels of
// `counted` with the same name launched by an op range of the same name (their mean): counts of
// one step carried over to the same kernels of other steps. Returns how many kernels it set.
std::size_t carry_tensor_pipe_counters(const Trace& counted, Trace& target);

}  // namespace mpbench::profiler
