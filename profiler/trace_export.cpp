#include "profiler/trace_export.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "core/result.hpp"
#include "profiler/attribute.hpp"
#include "profiler/classify.hpp"

namespace mpbench::profiler {

namespace {

using nlohmann::json;

// Relative microseconds keep nanosecond resolution in a double (absolute ns need 19 digits).
struct Clock {
  std::uint64_t base_ns = 0;
  double us(std::uint64_t t_ns) const { return t_ns > base_ns ? static_cast<double>(t_ns - base_ns) / 1000.0 : 0.0; }
  double dur_us(const Interval& t) const { return static_cast<double>(t.duration_ns()) / 1000.0; }
};

json complete(std::string_view name, std::string_view cat, std::uint64_t pid, std::uint64_t tid, const Interval& t,
              const Clock& clock, json args) {
  return {{"ph", "X"}, {"name", name},          {"cat", cat},  {"pid", pid}, {"tid", tid},
          {"ts", clock.us(t.start_ns)}, {"dur", clock.dur_us(t)}, {"args", std::move(args)}};
}

json metadata(std::string_view what, std::uint64_t pid, std::uint64_t tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

json flow(char phase, std::uint32_t id, std::uint64_t pid, std::uint64_t tid, std::uint64_t t_ns, const Clock& clock) {
  json e = {{"ph", std::string(1, phase)}, {"id", id}, {"name", "launch"}, {"cat", "ac2g"},
            {"pid", pid}, {"tid", tid}, {"ts", clock.us(t_ns)}};
  if (phase == 'f') e["bp"] = "e";  // bind to the slice that encloses the end (the kernel)
  return e;
}

class Exporter {
 public:
  explicit Exporter(const Trace& trace) : trace_(trace), attributor_(trace) {
    if (auto span = trace.span()) clock_.base_ns = span->start_ns;
    for (const auto& a : trace.api_calls) api_by_correlation_.try_emplace(a.correlation_id, &a);
  }

  json run() {
    add_kernels();
    add_copies();
    add_host();
    add_track_names();
    return {{"traceEvents", std::move(events_)},
            {"displayTimeUnit", "ms"},
            {"otherData", {{"generator", "mpbench"}, {"baseTimeNanoseconds", clock_.base_ns}}}};
  }

 private:
  std::string op_of(std::uint32_t correlation_id) const {
    const auto a = attributor_.attribute(correlation_id);
    return a.range ? trace_.ranges[*a.range].name : std::string();
  }

  void add_gpu_event(std::string_view name, std::string_view cat, const Interval& t, const GpuPlacement& where, json args) {
    args["correlation"] = where.correlation_id;
    if (auto op = op_of(where.correlation_id); !op.empty()) args["op"] = op;
    events_.push_back(complete(name, cat, where.device, where.stream, t, clock_, std::move(args)));
    streams_[where.device].insert(where.stream);
    add_flow(where, t);
  }

  void add_flow(const GpuPlacement& where, const Interval& t) {
    auto it = api_by_correlation_.find(where.correlation_id);
    if (it == api_by_correlation_.end()) return;
    events_.push_back(flow('s', where.correlation_id, trace_.process_id, it->second->thread, it->second->time.start_ns, clock_));
    events_.push_back(flow('f', where.correlation_id, where.device, where.stream, t.start_ns, clock_));
  }

  void add_kernels() {
    for (const auto& k : trace_.kernels) {
      const auto c = classify_kernel(k, op_of(k.where.correlation_id));
      add_gpu_event(k.name, "kernel", k.time, k.where,
                    {{"category", category_name(c.category)},
                     {"tensor_cores", evidence_name(c.tensor_cores)},
                     {"grid", k.grid},
                     {"block", k.block},
                     {"registers per thread", k.registers_per_thread},
                     {"shared memory", k.shared_memory_bytes}});
    }
  }

  void add_copies() {
    for (const auto& m : trace_.memcpys)
      add_gpu_event(fmt::format("Memcpy {}", copy_kind_name(m.kind)), "gpu_memcpy", m.time, m.where, {{"bytes", m.bytes}});
    for (const auto& m : trace_.memsets) add_gpu_event("Memset", "gpu_memset", m.time, m.where, {{"bytes", m.bytes}});
  }

  void add_host() {
    for (const auto& a : trace_.api_calls) {
      events_.push_back(complete(a.name, "cuda_runtime", trace_.process_id, a.thread, a.time, clock_,
                                 {{"correlation", a.correlation_id}}));
      threads_.insert(a.thread);
    }
    for (const auto& r : trace_.ranges) {
      json args = json::object();
      if (r.external_id != 0) args["external id"] = r.external_id;
      events_.push_back(complete(r.name, "user_annotation", trace_.process_id, range_track(r.thread), r.time, clock_, args));
    }
    for (const auto& r : trace_.nvtx_ranges)
      events_.push_back(complete(r.name, "nvtx", trace_.process_id, nvtx_track(r.thread), r.time, clock_, json::object()));
  }

  std::uint64_t range_track(std::uint64_t thread) {
    auto [it, inserted] = range_tracks_.try_emplace(thread, kRangeTrackBase + range_tracks_.size());
    return it->second;
  }

  std::uint64_t nvtx_track(std::uint64_t thread) {
    auto [it, inserted] = nvtx_tracks_.try_emplace(thread, kNvtxTrackBase + nvtx_tracks_.size());
    return it->second;
  }

  void add_track_names() {
    for (const auto& [device, streams] : streams_) {
      events_.push_back(metadata("process_name", device, 0, fmt::format("GPU {}", device)));
      for (auto s : streams) events_.push_back(metadata("thread_name", device, s, fmt::format("stream {}", s)));
    }
    if (threads_.empty() && range_tracks_.empty() && nvtx_tracks_.empty()) return;
    events_.push_back(metadata("process_name", trace_.process_id, 0, fmt::format("host (pid {})", trace_.process_id)));
    for (auto t : threads_) events_.push_back(metadata("thread_name", trace_.process_id, t, fmt::format("thread {}", t)));
    for (const auto& [thread, track] : range_tracks_)
      events_.push_back(metadata("thread_name", trace_.process_id, track, fmt::format("ranges (thread {})", thread)));
    for (const auto& [thread, track] : nvtx_tracks_)
      events_.push_back(metadata("thread_name", trace_.process_id, track, fmt::format("NVTX (thread {})", thread)));
  }

  const Trace& trace_;
  Attributor attributor_;
  Clock clock_;
  std::map<std::uint32_t, const ApiRecord*> api_by_correlation_;
  std::map<std::uint32_t, std::set<std::uint32_t>> streams_;
  std::set<std::uint64_t> threads_;
  std::map<std::uint64_t, std::uint64_t> range_tracks_;
  std::map<std::uint64_t, std::uint64_t> nvtx_tracks_;
  json events_ = json::array();
};

}  // namespace

json chrome_trace(const Trace& trace) { return Exporter(trace).run(); }

void write_chrome_trace(const std::filesystem::path& path, const Trace& trace) {
  write_file_atomically(path, chrome_trace(trace).dump());
}

}  // namespace mpbench::profiler
