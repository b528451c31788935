#pragma once
// `mpbench run --profile` for the microbenchmark suites. After a case's measurement (never during
// it), a CUDA case's operation runs kProfiledIterations more times under the CUPTI collector, and
// details.profile says which kernels it ran (the cuBLASLt kernel of a GEMM, say), what the name
// rules of profiler/classify.hpp make of them, and how much of the measured median they cover.
// Where CUPTI cannot collect, and on the CPU, cases are unprofiled with the reason.
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/backend.hpp"
#include "microbench/suite.hpp"
#include "profiler/activity.hpp"

namespace mpbench::microbench {

inline constexpr int kProfiledIterations = 5;
inline constexpr std::size_t kProfiledTopKernels = 5;

// details.profile from the records of `iterations` back-to-back runs of a case's op that measured
// `measured_s` per run:
//   {"status": "profiled", "source": "cupti", "iterations": n,
//    "kernels": [{"name", "category", "tensor_cores", "launches", "total_s", "mean_s"}, ...],
//    "distinct_kernels": d, "kernel_s_per_iteration": k, "measured_s": m, "kernel_share": k / m}
// `kernels` is the kProfiledTopKernels longest by total time, grouped by name; memcpy and memset
// records count too, as "[memcpy HtoD]", "[memset]" in category copy (a device copy or a pinned
// transfer is no kernel). `tensor_cores` is classify_kernel's evidence: "named" where a name rule
// says Tensor Cores, "no_evidence" otherwise (no counters are collected). A trace without any GPU
// activity is {"status": "unprofiled", "reason": ...}: the collector missed the op. The profiled
// runs go back to back without the cache flush a GEMM's measurement makes before each sample, so
// a GEMM whose operands fit in the L2 can show a share below 1.
nlohmann::json summarize_case_profile(const profiler::Trace& trace, int iterations, double measured_s);

// Sets measured_s and kernel_share of a profiled details.profile to another median (repetitions
// pool their samples into one case); leaves an unprofiled one as it is.
void rebase_case_profile(nlohmann::json& profile, double measured_s);

// The profiler --profile uses on `device`: CUPTI on a CUDA GPU; elsewhere every case is unprofiled
// with the reason. `note` hears, once, the first reason a case went unprofiled.
std::unique_ptr<CaseProfiler> make_case_profiler(const DeviceInfo& device,
                                                 std::function<void(const std::string&)> note);

}  // namespace mpbench::microbench
