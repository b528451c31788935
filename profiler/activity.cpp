#include "profiler/activity.hpp"

#include <algorithm>
#include <unordered_map>

namespace mpbench::profiler {

std::string_view copy_kind_name(CopyKind kind) {
  switch (kind) {
    case CopyKind::host_to_device: return "HtoD";
    case CopyKind::device_to_host: return "DtoH";
    case CopyKind::device_to_device: return "DtoD";
    case CopyKind::host_to_host: return "HtoH";
    case CopyKind::peer: return "PtoP";
    case CopyKind::other: break;
  }
  return "other";
}

namespace {

void widen(std::optional<Interval>& span, const Interval& t) {
  if (!span) {
    span = t;
    return;
  }
  span->start_ns = std::min(span->start_ns, t.start_ns);
  span->end_ns = std::max(span->end_ns, t.end_ns);
}

}  // namespace

std::optional<Interval> Trace::span() const {
  std::optional<Interval> span;
  for (const auto& k : kernels) widen(span, k.time);
  for (const auto& m : memcpys) widen(span, m.time);
  for (const auto& m : memsets) widen(span, m.time);
  for (const auto& a : api_calls) widen(span, a.time);
  for (const auto& r : ranges) widen(span, r.time);
  for (const auto& r : nvtx_ranges) widen(span, r.time);
  return span;
}

std::vector<RangeRecord> ranges_from_markers(const std::vector<MarkerEvent>& delivered) {
  // CUPTI's buffers need not deliver markers in time order: pair them in time order, a start
  // before an end of the same instant.
  std::vector<MarkerEvent> markers = delivered;
  std::stable_sort(markers.begin(), markers.end(), [](const MarkerEvent& a, const MarkerEvent& b) {
    if (a.timestamp_ns != b.timestamp_ns) return a.timestamp_ns < b.timestamp_ns;
    return a.kind == MarkerEvent::Kind::start && b.kind != MarkerEvent::Kind::start;
  });
  std::unordered_map<std::uint32_t, const MarkerEvent*> open;
  std::vector<RangeRecord> ranges;
  for (const MarkerEvent& m : markers) {
    if (m.kind == MarkerEvent::Kind::start) {
      open[m.id] = &m;
    } else if (m.kind == MarkerEvent::Kind::end) {
      const auto it = open.find(m.id);
      if (it == open.end()) continue;
      const MarkerEvent& start = *it->second;
      ranges.push_back({start.name, {start.timestamp_ns, m.timestamp_ns}, start.thread, 0});
      open.erase(it);
    }
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const RangeRecord& a, const RangeRecord& b) { return a.time.start_ns < b.time.start_ns; });
  return ranges;
}

}  // namespace mpbench::profiler
