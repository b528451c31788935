#include "microbench/case_profile.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "profiler/breakdown.hpp"
#include "profiler/classify.hpp"
#include "profiler/cupti_collector.hpp"

namespace mpbench::microbench {

namespace {

constexpr double kSecondsPerNs = 1e-9;

nlohmann::json unprofiled(const std::string& reason) { return {{"status", "unprofiled"}, {"reason", reason}}; }

// CUPTI where the device is a CUDA GPU; elsewhere the reason no case can be profiled.
class RunCaseProfiler final : public CaseProfiler {
 public:
  RunCaseProfiler(std::optional<std::string> cannot_profile, std::function<void(const std::string&)> note)
      : cannot_profile_(std::move(cannot_profile)), note_(std::move(note)) {}

  nlohmann::json profile(Backend& backend, const std::function<void()>& op, double measured_s) override {
    nlohmann::json result = cannot_profile_ ? unprofiled(*cannot_profile_) : collect(backend, op, measured_s);
    if (result["status"] == "unprofiled" && !std::exchange(noted_, true))
      note_(fmt::format("mpbench: note: --profile: microbenchmark cases that cannot be profiled go on unprofiled "
                        "(details.profile.status is \"unprofiled\"); the first reason: {}",
                        result["reason"].get<std::string>()));
    return result;
  }

 private:
  // The op runs back to back, without the measurement's cache flushes and buffer fills, so every
  // record is the op's own.
  static nlohmann::json collect(Backend& backend, const std::function<void()>& op, double measured_s) {
    try {
      profiler::CuptiCollector collector;
      for (int i = 0; i < kProfiledIterations; ++i) op();
      backend.synchronize();  // CUPTI's flush does not wait: a running kernel would have no end time
      const profiler::Trace trace = collector.stop();
      if (const auto why = collector.incomplete()) return unprofiled(*why + ": the kernel list would be incomplete");
      return summarize_case_profile(trace, kProfiledIterations, measured_s);
    } catch (const profiler::CuptiUnavailable& e) {
      return unprofiled(e.what());
    }
  }

  std::optional<std::string> cannot_profile_;
  std::function<void(const std::string&)> note_;
  bool noted_ = false;
};

}  // namespace

nlohmann::json summarize_case_profile(const profiler::Trace& trace, int iterations, double measured_s) {
  if (trace.kernels.empty() && trace.memcpys.empty() && trace.memsets.empty())
    return unprofiled(fmt::format("CUPTI recorded no kernel, memcpy or memset over {} runs of the case's operation",
                                  iterations));
  using profiler::Category, profiler::TensorCoreEvidence;
  std::map<std::string, profiler::TopKernel> by_name;
  double total_s = 0;
  const auto add = [&](const std::string& name, Category category, TensorCoreEvidence tensor_cores,
                       const profiler::Interval& time) {
    profiler::TopKernel& k = by_name[name];
    k.name = name;
    k.category = category;
    k.tensor_cores = tensor_cores;
    ++k.count;
    const double s = static_cast<double>(time.duration_ns()) * kSecondsPerNs;
    k.total_s += s;
    total_s += s;
  };
  for (const auto& k : trace.kernels) {
    const profiler::Classification c = profiler::classify_kernel(k);
    add(k.name, c.category, c.tensor_cores, k.time);
  }
  for (const auto& m : trace.memcpys)
    add(fmt::format("[memcpy {}]", profiler::copy_kind_name(m.kind)), Category::copy, TensorCoreEvidence::no_evidence,
        m.time);
  for (const auto& m : trace.memsets) add("[memset]", Category::copy, TensorCoreEvidence::no_evidence, m.time);

  const std::size_t distinct = by_name.size();
  nlohmann::json kernels = nlohmann::json::array();
  for (const profiler::TopKernel& k : profiler::longest_kernels(std::move(by_name), kProfiledTopKernels)) {
    kernels.push_back({{"name", k.name},
                       {"category", profiler::category_name(k.category)},
                       {"tensor_cores", profiler::evidence_name(k.tensor_cores)},
                       {"launches", k.count},
                       {"total_s", k.total_s},
                       {"mean_s", k.total_s / static_cast<double>(k.count)}});
  }
  nlohmann::json profile = {{"status", "profiled"},
                            {"source", "cupti"},
                            {"iterations", iterations},
                            {"kernels", std::move(kernels)},
                            {"distinct_kernels", distinct},
                            {"kernel_s_per_iteration", total_s / iterations}};
  rebase_case_profile(profile, measured_s);
  return profile;
}

void rebase_case_profile(nlohmann::json& profile, double measured_s) {
  if (profile.value("status", "") != "profiled") return;
  profile["measured_s"] = measured_s;
  profile["kernel_share"] = profile["kernel_s_per_iteration"].get<double>() / measured_s;
}

std::unique_ptr<CaseProfiler> make_case_profiler(const DeviceInfo& device,
                                                 std::function<void(const std::string&)> note) {
  if (device.backend == "cuda") return std::make_unique<RunCaseProfiler>(std::nullopt, std::move(note));
  return std::make_unique<RunCaseProfiler>(
      fmt::format("no kernels to record on the {} backend: microbenchmark cases are profiled with CUPTI on CUDA GPUs "
                  "only (on the CPU, --profile records the transformer suite's op ranges)",
                  device.backend),
      std::move(note));
}

}  // namespace mpbench::microbench
