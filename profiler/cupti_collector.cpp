#include "profiler/cupti_collector.hpp"

#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "profiler/cupti_library.hpp"

namespace mpbench::profiler {

namespace {

// The newest record layouts the headers provide (13.0: Kernel10, Memcpy6; 12.x: Kernel9, Memcpy5),
// chosen as Kineto does.
#if CUDA_VERSION >= 13000
using KernelActivity = CUpti_ActivityKernel10;
using MemcpyActivity = CUpti_ActivityMemcpy6;
#else
using KernelActivity = CUpti_ActivityKernel9;
using MemcpyActivity = CUpti_ActivityMemcpy5;
#endif
using MemsetActivity = CUpti_ActivityMemset4;
using MarkerActivity = CUpti_ActivityMarker2;

constexpr std::size_t kBufferBytes = 8 << 20;  // CUPTI recommends 1-10 MB
constexpr std::size_t kBufferAlign = 8;
// Driver API calls too: a kernel's correlation id is that of the call that launched it, and
// libraries launch some kernels through the driver (cuLaunchKernelEx), not the runtime.
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET,           CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER,           CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                         CUPTI_ACTIVITY_KIND_MARKER};
constexpr auto kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// The CUPTI functions mpbench calls, resolved from libcupti at run time.
struct Cupti {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push_external = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop_external = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};


}  // namespace

// Loaded once and never closed: closing CUPTI 13.0-13.1 crashes at exit (PAPI PR #594).
void* detail::cupti_library() {
  static void* const library = [] {
    void* found = nullptr;
    for (const char* name : {"libcupti.so.13", "libcupti.so"})
      if ((found = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!found)
      throw CuptiUnavailable("libcupti was not found: add the CUDA toolkit's lib64 (or the nvidia-cuda-cupti wheel's "
                             "lib folder) to LD_LIBRARY_PATH",
                             true);
    return found;
  }();
  return library;
}

namespace {

using detail::cupti_library;
using detail::resolve;

const Cupti& cupti() {
  static const Cupti loaded = [] {
    void* library = cupti_library();
    Cupti c;
    resolve(library, "libcupti", "cuptiActivityRegisterCallbacks", c.register_callbacks);
    resolve(library, "libcupti", "cuptiActivityEnable", c.enable);
    resolve(library, "libcupti", "cuptiActivityDisable", c.disable);
    resolve(library, "libcupti", "cuptiActivityFlushAll", c.flush_all);
    resolve(library, "libcupti", "cuptiActivityGetNextRecord", c.next_record);
    resolve(library, "libcupti", "cuptiActivityGetNumDroppedRecords", c.dropped);
    resolve(library, "libcupti", "cuptiActivityPushExternalCorrelationId", c.push_external);
    resolve(library, "libcupti", "cuptiActivityPopExternalCorrelationId", c.pop_external);
    resolve(library, "libcupti", "cuptiGetTimestamp", c.timestamp);
    resolve(library, "libcupti", "cuptiGetCallbackName", c.callback_name);
    resolve(library, "libcupti", "cuptiGetResultString", c.result_string);
    return c;
  }();
  return loaded;
}

std::string result_text(CUptiResult r) {
  const char* text = nullptr;
  if (cupti().result_string(r, &text) != CUPTI_SUCCESS || !text) return fmt::format("CUPTI error {}", static_cast<int>(r));
  return text;
}

void check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return;
  std::string hint;
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    hint = ": another profiler (Nsight Systems, Nsight Compute, compute-sanitizer) is attached";
  else if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    hint = ": profiling is restricted to admin users on this machine (NVreg_RestrictProfilingToAdminUsers)";
  throw CuptiUnavailable(fmt::format("{} failed: {}{}", call, result_text(r), hint), detail::refused_by_the_machine(r));
}

// Records land here from CUPTI's completion callback, which may run on CUPTI's own thread.
std::mutex collected_mutex;
Trace collected;
std::vector<MarkerEvent> collected_markers;  // paired into collected.nvtx_ranges at stop()
std::uint64_t collected_untimed = 0;         // records CUPTI gave no times
bool collector_running = false;

std::string api_name(CUpti_ActivityKind kind, CUpti_CallbackId cbid) {
  const bool runtime = kind == CUPTI_ACTIVITY_KIND_RUNTIME;
  const char* name = nullptr;
  if (cupti().callback_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) ==
          CUPTI_SUCCESS &&
      name)
    return name;
  return fmt::format("{} API {}", runtime ? "runtime" : "driver", cbid);
}

// CUPTI reports start = end = 0 when it could not collect a GPU activity's times.
bool untimed(std::uint64_t start, std::uint64_t end) { return start == 0 && end == 0; }

CopyKind copy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CopyKind::host_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CopyKind::device_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CopyKind::device_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::host_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::peer;
    default: return CopyKind::other;
  }
}

KernelRecord to_kernel(const KernelActivity& k) {
  KernelRecord r;
  r.name = k.name ? k.name : "";
  r.time = {k.start, k.end};
  r.where = {k.deviceId, k.streamId, k.correlationId};
  r.grid = {static_cast<std::uint32_t>(k.gridX), static_cast<std::uint32_t>(k.gridY), static_cast<std::uint32_t>(k.gridZ)};
  r.block = {static_cast<std::uint32_t>(k.blockX), static_cast<std::uint32_t>(k.blockY),
             static_cast<std::uint32_t>(k.blockZ)};
  r.registers_per_thread = k.registersPerThread;
  r.shared_memory_bytes = static_cast<std::uint32_t>(k.staticSharedMemory + k.dynamicSharedMemory);
  return r;
}

// A marker's start, end or instant; NVTX's name strings belong to CUPTI, so it is copied.
MarkerEvent to_marker(const MarkerActivity& m) {
  MarkerEvent e;
  e.kind = (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START)  ? MarkerEvent::Kind::start
           : (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) ? MarkerEvent::Kind::end
                                                         : MarkerEvent::Kind::instant;
  e.id = m.id;
  e.timestamp_ns = m.timestamp;
  if (m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) e.thread = m.objectId.pt.threadId;
  if (m.name) e.name = m.name;
  return e;
}

// Called with collected_mutex held. Records without times are counted, not kept: a time of 0
// would stretch the trace's span back to the clock's origin.
void add_record(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto& k = *reinterpret_cast<const KernelActivity*>(record);
      if (untimed(k.start, k.end)) ++collected_untimed;
      else collected.kernels.push_back(to_kernel(k));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = *reinterpret_cast<const MemcpyActivity*>(record);
      if (untimed(m.start, m.end)) ++collected_untimed;
      else collected.memcpys.push_back({copy_kind(m.copyKind), m.bytes, {m.start, m.end}, {m.deviceId, m.streamId, m.correlationId}});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = *reinterpret_cast<const MemsetActivity*>(record);
      if (untimed(m.start, m.end)) ++collected_untimed;
      else collected.memsets.push_back({m.bytes, {m.start, m.end}, {m.deviceId, m.streamId, m.correlationId}});
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = *reinterpret_cast<const CUpti_ActivityAPI*>(record);
      if (untimed(a.start, a.end)) ++collected_untimed;
      else collected.api_calls.push_back({api_name(record->kind, a.cbid), {a.start, a.end}, a.threadId, a.correlationId});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto& m = *reinterpret_cast<const MarkerActivity*>(record);
      if (m.timestamp == 0) ++collected_untimed;
      else collected_markers.push_back(to_marker(m));
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (e.externalKind == kExternalKind) collected.external_correlations.push_back({e.externalId, e.correlationId});
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  {
    std::lock_guard lock(collected_mutex);
    CUpti_Activity* record = nullptr;
    while (cupti().next_record(buffer, valid_bytes, &record) == CUPTI_SUCCESS) add_record(record);
  }
  std::free(buffer);
}

}  // namespace

CuptiCollector::CuptiCollector() {
  const Cupti& c = cupti();
  {
    std::lock_guard lock(collected_mutex);
    if (collector_running) throw CuptiUnavailable("a CUPTI collector is already running in this process");
    collected = Trace{};
    collected_markers.clear();
    collected_untimed = 0;
    collected.process_id = static_cast<std::uint64_t>(::getpid());
  }
  check(c.register_callbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  for (std::size_t i = 0; i < std::size(kKinds); ++i) {
    if (const CUptiResult r = c.enable(kKinds[i]); r != CUPTI_SUCCESS) {
      for (std::size_t j = 0; j < i; ++j) c.disable(kKinds[j]);
      check(r, "cuptiActivityEnable");
    }
  }
  std::lock_guard lock(collected_mutex);
  collector_running = running_ = true;
}

CuptiCollector::~CuptiCollector() {
  if (!running_) return;
  try {
    stop();
  } catch (const CuptiUnavailable&) {  // a failed flush: nobody is left to read the records
  }
}

Trace CuptiCollector::stop() {
  if (!running_) return {};
  const Cupti& c = cupti();
  for (auto kind : kKinds) c.disable(kind);
  const CUptiResult flushed = c.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  if (c.dropped(nullptr, 0, &dropped) == CUPTI_SUCCESS) dropped_ = dropped;
  std::lock_guard lock(collected_mutex);
  collector_running = running_ = false;
  untimed_ = std::exchange(collected_untimed, 0);
  collected.nvtx_ranges = ranges_from_markers(std::exchange(collected_markers, {}));
  Trace trace = std::exchange(collected, Trace{});
  check(flushed, "cuptiActivityFlushAll");
  return trace;
}

void CuptiCollector::push_external_id(std::uint64_t id) {
  check(cupti().push_external(kExternalKind, id), "cuptiActivityPushExternalCorrelationId");
}

void CuptiCollector::pop_external_id() {
  std::uint64_t last = 0;
  check(cupti().pop_external(kExternalKind, &last), "cuptiActivityPopExternalCorrelationId");
}

std::uint64_t CuptiCollector::timestamp_ns() const {
  std::uint64_t t = 0;
  check(cupti().timestamp(&t), "cuptiGetTimestamp");
  return t;
}

std::string arrange_nvtx_injection() {
  constexpr const char* kVariable = "NVTX_INJECTION64_PATH";
  if (const char* set = std::getenv(kVariable); set && *set)
    return fmt::format("{} was already set to {}: left as is", kVariable, set);
  const link_map* map = nullptr;
  if (dlinfo(detail::cupti_library(), RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name || !*map->l_name) {
    const char* why = dlerror();
    throw CuptiUnavailable(fmt::format("cannot tell where libcupti was loaded from: {}", why ? why : "no path in its link map"));
  }
  if (::setenv(kVariable, map->l_name, 0) != 0)
    throw CuptiUnavailable(fmt::format("cannot set {}: {}", kVariable, std::strerror(errno)));
  return fmt::format("{}={} (set at start-up, before the first NVTX call)", kVariable, map->l_name);
}

}  // namespace mpbench::profiler
