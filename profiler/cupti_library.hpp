#pragma once
// libcupti as the collectors load it (dlopen, once per process; mpbench links no CUPTI), and its
// functions by name. For the collectors' own .cpp files only.
#include <cupti_result.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include "profiler/cupti_collector.hpp"

namespace mpbench::profiler::detail {

// Whether CUPTI's answer is the machine's refusal (CuptiUnavailable::refused_by_the_machine).
inline bool refused_by_the_machine(CUptiResult r) {
  return r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ||
         r == CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED || r == CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED ||
         r == CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED;
}

// Throws CuptiUnavailable when no libcupti can be loaded.
void* cupti_library();

// out = the function `symbol` of `library` (named `library_name` in the error), or CuptiUnavailable.
template <typename F>
void resolve(void* library, const char* library_name, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(library, symbol));
  if (!out)
    throw CuptiUnavailable(fmt::format("{} has no {}: it is older than this mpbench expects", library_name, symbol),
                           true);
}

}  // namespace mpbench::profiler::detail
