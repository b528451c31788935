#pragma once
// Chrome trace-event JSON (opens in Perfetto UI and chrome://tracing): "X" events with ts/dur in
// microseconds relative to the trace's first timestamp, GPU activities on pid = device and
// tid = stream, API calls on the host process by thread, op ranges and NVTX ranges each on their
// own host track per thread (Perfetto needs the events of one track to nest), and "s"/"f" flow arrows from each
// launching API call to its kernel or copy (id = correlation id).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "profiler/activity.hpp"

namespace mpbench::profiler {

// Range tracks are numbered from here so they never share a tid with a real thread's API calls.
inline constexpr std::uint64_t kRangeTrackBase = 1ull << 40;
inline constexpr std::uint64_t kNvtxTrackBase = 1ull << 41;

nlohmann::json chrome_trace(const Trace& trace);
// Written atomically; throws UsageError naming the path when it cannot be written.
void write_chrome_trace(const std::filesystem::path& path, const Trace& trace);

}  // namespace mpbench::profiler
