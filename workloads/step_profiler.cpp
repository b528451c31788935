#include "workloads/step_profiler.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cctype>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profiler/cupti_collector.hpp"
#include "profiler/kernel_counters.hpp"

namespace mpbench::workloads {
namespace {

std::uint64_t this_thread() { return static_cast<std::uint64_t>(pthread_self()); }

// The ranges open on the one thread that runs the ops, innermost last.
class RangeStack {
 public:
  void open(std::string name, std::uint64_t start_ns, std::uint64_t external_id = 0) {
    open_.push_back({std::move(name), {start_ns, start_ns}, this_thread(), external_id});
  }
  // Closes the innermost range and returns its external id.
  std::uint64_t close(std::uint64_t end_ns) {
    profiler::RangeRecord r = std::move(open_.back());
    open_.pop_back();
    r.time.end_ns = end_ns;
    closed_.push_back(std::move(r));
    return closed_.back().external_id;
  }
  std::vector<profiler::RangeRecord> take() { return std::exchange(closed_, {}); }

 private:
  std::vector<profiler::RangeRecord> open_, closed_;
};

class HostStepProfiler final : public StepProfiler {
 public:
  void op_begin(std::string_view op, int layer, Phase phase) override { ranges_.open(op_range_name(op, layer, phase), now_ns()); }
  void op_end(std::string_view, int, Phase) override { ranges_.close(now_ns()); }

  profiler::Trace finish() override {
    profiler::Trace trace;
    trace.process_id = static_cast<std::uint64_t>(::getpid());
    trace.ranges = ranges_.take();
    return trace;
  }
  bool records_gpu_activity() const override { return false; }
  std::string source() const override { return "host steady clock around each op (CPU ops run synchronously)"; }

 private:
  static std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
  }
  RangeStack ranges_;
};

class CuptiStepProfiler : public StepProfiler {
 public:
  explicit CuptiStepProfiler(OpsMemory& ops) : ops_(ops) {}

  void op_begin(std::string_view op, int layer, Phase phase) override {
    const std::uint64_t id = ++last_id_;
    ranges_.open(op_range_name(op, layer, phase), collector_.timestamp_ns(), id);
    collector_.push_external_id(id);
  }
  void op_end(std::string_view, int, Phase) override {
    collector_.pop_external_id();
    ranges_.close(collector_.timestamp_ns());
  }

  profiler::Trace finish() override {
    ops_.synchronize();
    profiler::Trace trace = collector_.stop();
    if (const auto why = collector_.incomplete())
      throw profiler::CuptiUnavailable(*why + ": the breakdown would be incomplete");
    trace.ranges = ranges_.take();
    use_cupti_thread_ids(trace);
    return trace;
  }
  bool records_gpu_activity() const override { return true; }
  std::string source() const override {
    return "CUPTI activity records (concurrent kernels, memcpy, memset, runtime and driver API, NVTX markers), each op range pushing an "
           "external correlation id";
  }

 private:
  // CUPTI names host threads its own way; the API calls tied to a range by its external id say
  // which id its thread has, so ranges and API calls share a track and the enclosing-range
  // attribution compares like with like.
  static void use_cupti_thread_ids(profiler::Trace& trace) {
    std::unordered_map<std::uint32_t, std::uint64_t> thread_by_correlation;
    for (const auto& a : trace.api_calls) thread_by_correlation.emplace(a.correlation_id, a.thread);
    std::optional<std::uint64_t> cupti_thread;
    for (const auto& link : trace.external_correlations)
      if (auto it = thread_by_correlation.find(link.correlation_id); it != thread_by_correlation.end()) {
        cupti_thread = it->second;
        break;
      }
    if (!cupti_thread) return;
    for (auto& r : trace.ranges) r.thread = *cupti_thread;
  }

 protected:
  OpsMemory& ops_;

 private:
  profiler::CuptiCollector collector_;
  RangeStack ranges_;
  std::uint64_t last_id_ = 0;
};

// The activity collector for attribution, the range profiler for the counts; both see the same
// kernels, so the counts attach in launch order.
class CountingStepProfiler final : public CuptiStepProfiler {
 public:
  CountingStepProfiler(OpsMemory& ops, std::size_t max_kernels)
      : CuptiStepProfiler(ops), counters_(profiler::tensor_pipe_metric_candidates(), max_kernels) {}

  profiler::Trace finish() override {
    ops_.synchronize();
    const std::vector<double> counts = counters_.stop();
    profiler::Trace trace = CuptiStepProfiler::finish();
    if (counters_.dropped_kernels() > 0 || !profiler::attach_tensor_pipe_counters(trace, counts))
      throw profiler::CuptiUnavailable(fmt::format(
          "the range profiler counted {} kernels ({} dropped) where the activity records hold {}: counts not attached",
          counts.size(), counters_.dropped_kernels(), trace.kernels.size()));
    return trace;
  }
  std::string source() const override {
    return CuptiStepProfiler::source() + "; each kernel counted by CUPTI's range profiler (auto range, kernel replay)";
  }
  std::optional<std::string> counted_metric() const override { return counters_.metric(); }

 private:
  profiler::KernelCounterCollector counters_;
};

}  // namespace

std::unique_ptr<StepProfiler> host_step_profiler() { return std::make_unique<HostStepProfiler>(); }

std::unique_ptr<StepProfiler> cupti_step_profiler(OpsMemory& ops) { return std::make_unique<CuptiStepProfiler>(ops); }

std::unique_ptr<StepProfiler> counting_step_profiler(OpsMemory& ops, std::size_t max_kernels) {
  return std::make_unique<CountingStepProfiler>(ops, max_kernels);
}

std::unique_ptr<StepProfiler> start_step_profiler(const DeviceInfo& device, OpsMemory& ops) {
  if (device.backend == "cuda") return cupti_step_profiler(ops);
  return host_step_profiler();
}

std::string op_key_of_range(std::string_view range_name) {
  const auto first = range_name.find(' ');
  if (first == std::string_view::npos || first + 2 >= range_name.size() || range_name[first + 1] != 'L')
    return std::string(range_name);
  std::size_t end = first + 2;
  while (end < range_name.size() && std::isdigit(static_cast<unsigned char>(range_name[end]))) ++end;
  if (end == first + 2 || end >= range_name.size() || range_name[end] != ' ') return std::string(range_name);
  return std::string(range_name.substr(0, first)) + std::string(range_name.substr(end));
}

TokenBatch TimedTokenSource::next_batch(int batch, int seq_len) {
  const auto start = std::chrono::steady_clock::now();
  TokenBatch b = inner_.next_batch(batch, seq_len);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return b;
}

}  // namespace mpbench::workloads
