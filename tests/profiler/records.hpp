#pragma once
// Hand-built activity records for the profiler tests; times in nanoseconds.
#include <string>

#include "profiler/activity.hpp"

namespace mpbench::profiler::testing {

inline KernelRecord kernel(std::string name, std::uint64_t start, std::uint64_t end, std::uint32_t correlation,
                           std::uint32_t stream = 7, std::uint32_t device = 0) {
  KernelRecord k;
  k.name = std::move(name);
  k.time = {start, end};
  k.where = {device, stream, correlation};
  return k;
}

inline ApiRecord launch(std::uint64_t start, std::uint64_t end, std::uint32_t correlation, std::uint64_t thread = 100) {
  return {"cudaLaunchKernel", {start, end}, thread, correlation};
}

inline RangeRecord range(std::string name, std::uint64_t start, std::uint64_t end, std::uint64_t external_id = 0,
                         std::uint64_t thread = 100) {
  return {std::move(name), {start, end}, thread, external_id};
}

}  // namespace mpbench::profiler::testing
