#include "profiler/host_evidence.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace mpbench::profiler {

namespace {

// A CUPTI runtime name without its "_v3020" version suffix.
std::string_view without_version(std::string_view name) {
  const auto v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 == name.size()) return name;
  const auto digits = name.substr(v + 2);
  return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ? name.substr(0, v)
                                                                                                : name;
}

double seconds(const Interval& t) { return static_cast<double>(t.duration_ns()) * 1e-9; }

}  // namespace

bool is_host_sync(std::string_view api_name) {
  // Runtime calls only: each makes a driver call of its own, which CUPTI records as well.
  constexpr std::array<std::string_view, 8> kBlocking = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
      "cudaMemcpy2D",          "cudaMemcpyFromSymbol",  "cudaMemcpyToSymbol",   "cudaThreadSynchronize"};
  const std::string_view stem = without_version(api_name);
  return std::find(kBlocking.begin(), kBlocking.end(), stem) != kBlocking.end();
}

HostEvidence host_evidence(const Trace& trace, std::size_t steps, double data_seconds, double step_median_s,
                           bool gpu_activity) {
  HostEvidence h;
  const double n = steps > 0 ? static_cast<double>(steps) : 1.0;
  h.data_s_per_step = data_seconds / n;
  h.step_s = step_median_s;
  for (const RangeRecord& r : trace.ranges)
    if (r.name.rfind("inputs ", 0) == 0) h.staging_s_per_step += seconds(r.time) / n;
  if (!gpu_activity) return h;
  double syncs = 0, device = 0;
  for (const ApiRecord& a : trace.api_calls) syncs += is_host_sync(a.name);
  for (const KernelRecord& k : trace.kernels) device += seconds(k.time);
  for (const MemcpyRecord& m : trace.memcpys) device += seconds(m.time);
  for (const MemsetRecord& m : trace.memsets) device += seconds(m.time);
  h.host_syncs_per_step = syncs / n;
  h.kernel_s_per_step = device / n;
  return h;
}

nlohmann::json HostEvidence::to_json() const {
  nlohmann::json j = {{"input_wait_s_per_step", input_wait_s_per_step()},
                      {"data_s_per_step", data_s_per_step},
                      {"staging_s_per_step", staging_s_per_step},
                      {"step_s", step_s}};
  j["host_syncs_per_step"] = host_syncs_per_step ? nlohmann::json(*host_syncs_per_step) : nlohmann::json();
  j["kernel_s_per_step"] = kernel_s_per_step ? nlohmann::json(*kernel_s_per_step) : nlohmann::json();
  return j;
}

}  // namespace mpbench::profiler
