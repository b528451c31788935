#pragma once
// Collects CUPTI activity records (concurrent kernels, memcpy, memset, runtime and driver API
// calls, external correlations, NVTX markers paired into ranges) into a Trace. libcupti is loaded with dlopen, so mpbench links no CUPTI
// and runs where it is missing; every failure is a CuptiUnavailable naming the cause, and the
// caller goes on unprofiled. `mpbench run --profile` uses it through workloads/step_profiler.hpp.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "profiler/activity.hpp"

namespace mpbench::profiler {

class CuptiUnavailable : public std::runtime_error {
 public:
  explicit CuptiUnavailable(const std::string& what, bool refused_by_the_machine = false)
      : std::runtime_error(what), refused_by_the_machine_(refused_by_the_machine) {}
  // The cause is the machine's, not mpbench's: no libcupti, a build without CUDA, no permission,
  // another profiler attached, a device CUPTI does not profile. Tests skip on these only.
  bool refused_by_the_machine() const { return refused_by_the_machine_; }

 private:
  bool refused_by_the_machine_;
};

// One at a time per process: CUPTI delivers records to process-wide callbacks.
class CuptiCollector {
 public:
  // Loads CUPTI and enables the activity kinds. Throws CuptiUnavailable (no libcupti, built
  // without CUDA, another profiler attached, no permission, a collector already running).
  CuptiCollector();
  ~CuptiCollector();
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  // Flushes and returns the records; CuptiUnavailable when the flush fails. Synchronize the device
  // first: CUPTI's flush does not, and kernels still running would have no times.
  Trace stop();
  // Why stop()'s records are incomplete, if they are: records CUPTI dropped for lack of buffer
  // space, or records that came without times (left out of the trace).
  std::optional<std::string> incomplete() const {
    if (dropped_ > 0) return "CUPTI dropped " + std::to_string(dropped_) + " activity records for lack of buffer space";
    if (untimed_ > 0) return "CUPTI gave " + std::to_string(untimed_) + " activity records no times";
    return std::nullopt;
  }

  // API calls made on this thread while an id is pushed are tied to it (RangeRecord::external_id).
  void push_external_id(std::uint64_t id);
  void pop_external_id();
  // CUPTI's clock, the one its records use: for timing host ranges beside them.
  std::uint64_t timestamp_ns() const;

 private:
  bool running_ = false;
  std::uint64_t dropped_ = 0;
  std::uint64_t untimed_ = 0;
};

// NVTX reaches CUPTI only if NVTX_INJECTION64_PATH names libcupti at the process's first NVTX
// call: call this before any. Sets it to the libcupti this process loads, unless it is already set
// (e.g. by Nsight Systems), and returns what it did. Throws CuptiUnavailable without libcupti.
std::string arrange_nvtx_injection();

}  // namespace mpbench::profiler
