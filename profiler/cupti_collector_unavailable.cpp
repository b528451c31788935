// Builds without a CUDA toolkit have no CUPTI headers: the collector only says so.
#include "profiler/cupti_collector.hpp"
#include "profiler/kernel_counters.hpp"

namespace mpbench::profiler {

CuptiCollector::CuptiCollector() {
  throw CuptiUnavailable("this mpbench was built without CUDA, so it cannot profile with CUPTI", true);
}
CuptiCollector::~CuptiCollector() = default;
Trace CuptiCollector::stop() { return {}; }
void CuptiCollector::push_external_id(std::uint64_t) {}
void CuptiCollector::pop_external_id() {}
std::uint64_t CuptiCollector::timestamp_ns() const { return 0; }
std::string arrange_nvtx_injection() {
  throw CuptiUnavailable("this mpbench was built without CUDA, so NVTX has no CUPTI to reach", true);
}

struct KernelCounterCollector::Session {};
KernelCounterCollector::KernelCounterCollector(const std::vector<std::string>&, std::size_t) {
  throw CuptiUnavailable("this mpbench was built without CUDA, so it has no CUPTI to read GPU counters with", true);
}
KernelCounterCollector::~KernelCounterCollector() = default;
std::vector<double> KernelCounterCollector::stop() { return {}; }
std::string first_known_metric(const std::string&, const std::vector<std::string>&) {
  throw CuptiUnavailable("this mpbench was built without CUDA, so it has no CUPTI metric tables", true);
}

}  // namespace mpbench::profiler
