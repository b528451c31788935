// KernelCounterCollector on CUPTI's range profiler, in the order its API documents the calls:
// profiler initialisation, the chip's name and counter availability, a host object that turns
// metric names into a config image, then on the target the range profiler (auto range, kernel
// replay) with a counter data image sized for the kernels.
// CUPTI and the driver are loaded at run time, like the activity collector.
#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "profiler/cupti_library.hpp"
#include "profiler/kernel_counters.hpp"

namespace mpbench::profiler {

namespace {

using detail::resolve;

struct ProfilerApi {
  decltype(&cuptiProfilerInitialize) initialize = nullptr;
  decltype(&cuptiProfilerDeInitialize) deinitialize = nullptr;
  decltype(&cuptiDeviceGetChipName) chip_name = nullptr;
  decltype(&cuptiProfilerGetCounterAvailability) counter_availability = nullptr;
  decltype(&cuptiProfilerHostInitialize) host_initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) host_deinitialize = nullptr;
  decltype(&cuptiProfilerHostGetMetricProperties) metric_properties = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) add_metrics = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) config_image_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) config_image = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) evaluate = nullptr;
  decltype(&cuptiRangeProfilerEnable) enable = nullptr;
  decltype(&cuptiRangeProfilerDisable) disable = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataSize) counter_data_size = nullptr;
  decltype(&cuptiRangeProfilerCounterDataImageInitialize) counter_data_initialize = nullptr;
  decltype(&cuptiRangeProfilerSetConfig) set_config = nullptr;
  decltype(&cuptiRangeProfilerStart) start = nullptr;
  decltype(&cuptiRangeProfilerStop) stop = nullptr;
  decltype(&cuptiRangeProfilerDecodeData) decode = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataInfo) counter_data_info = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

// The driver's part, apart: CUPTI's host functions (metric tables) work without a driver.
struct DriverApi {
  decltype(&cuCtxGetCurrent) current_context = nullptr;
  decltype(&cuCtxGetDevice) context_device = nullptr;
};


const ProfilerApi& api() {
  static const ProfilerApi loaded = [] {
    void* cupti = detail::cupti_library();
    ProfilerApi a;
    resolve(cupti, "libcupti", "cuptiProfilerInitialize", a.initialize);
    resolve(cupti, "libcupti", "cuptiProfilerDeInitialize", a.deinitialize);
    resolve(cupti, "libcupti", "cuptiDeviceGetChipName", a.chip_name);
    resolve(cupti, "libcupti", "cuptiProfilerGetCounterAvailability", a.counter_availability);
    resolve(cupti, "libcupti", "cuptiProfilerHostInitialize", a.host_initialize);
    resolve(cupti, "libcupti", "cuptiProfilerHostDeinitialize", a.host_deinitialize);
    resolve(cupti, "libcupti", "cuptiProfilerHostGetMetricProperties", a.metric_properties);
    resolve(cupti, "libcupti", "cuptiProfilerHostConfigAddMetrics", a.add_metrics);
    resolve(cupti, "libcupti", "cuptiProfilerHostGetConfigImageSize", a.config_image_size);
    resolve(cupti, "libcupti", "cuptiProfilerHostGetConfigImage", a.config_image);
    resolve(cupti, "libcupti", "cuptiProfilerHostEvaluateToGpuValues", a.evaluate);
    resolve(cupti, "libcupti", "cuptiRangeProfilerEnable", a.enable);
    resolve(cupti, "libcupti", "cuptiRangeProfilerDisable", a.disable);
    resolve(cupti, "libcupti", "cuptiRangeProfilerGetCounterDataSize", a.counter_data_size);
    resolve(cupti, "libcupti", "cuptiRangeProfilerCounterDataImageInitialize", a.counter_data_initialize);
    resolve(cupti, "libcupti", "cuptiRangeProfilerSetConfig", a.set_config);
    resolve(cupti, "libcupti", "cuptiRangeProfilerStart", a.start);
    resolve(cupti, "libcupti", "cuptiRangeProfilerStop", a.stop);
    resolve(cupti, "libcupti", "cuptiRangeProfilerDecodeData", a.decode);
    resolve(cupti, "libcupti", "cuptiRangeProfilerGetCounterDataInfo", a.counter_data_info);
    resolve(cupti, "libcupti", "cuptiGetResultString", a.result_string);
    return a;
  }();
  return loaded;
}

const DriverApi& driver_api() {
  static const DriverApi loaded = [] {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) throw CuptiUnavailable("the CUDA driver (libcuda.so.1) is not loadable");
    DriverApi d;
    resolve(driver, "libcuda", "cuCtxGetCurrent", d.current_context);
    resolve(driver, "libcuda", "cuCtxGetDevice", d.context_device);
    return d;
  }();
  return loaded;
}

// A CUPTI parameter struct: zeroed (pPriv NULL), its size set as CUPTI versions it.
template <typename Params>
Params cupti_params(std::size_t struct_size) {
  Params p{};
  p.structSize = struct_size;
  return p;
}

void check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  const std::string what = api().result_string(r, &text) == CUPTI_SUCCESS && text ? text : fmt::format("error {}", int(r));
  std::string hint;
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    hint = ": reading GPU counters needs root or the driver option NVreg_RestrictProfilingToAdminUsers=0 (what "
           "Nsight Compute reports as ERR_NVGPUCTRPERM)";
  else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    hint = ": another profiler is attached";
  throw CuptiUnavailable(fmt::format("{} failed: {}{}", call, what, hint), detail::refused_by_the_machine(r));
}

void deinitialize_host(CUpti_Profiler_Host_Object* host) {
  auto deinit = cupti_params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
  deinit.pHostObject = host;
  api().host_deinitialize(&deinit);
}

}  // namespace

struct KernelCounterCollector::Session {
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  bool initialized = false;
  bool started = false;
  std::vector<std::uint8_t> config, counter_data;

  ~Session() {
    if (started) {
      auto stop = cupti_params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
      stop.pRangeProfilerObject = profiler;
      api().stop(&stop);
    }
    if (profiler) {
      auto disable = cupti_params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      disable.pRangeProfilerObject = profiler;
      api().disable(&disable);
    }
    if (host) deinitialize_host(host);
    if (initialized) {
      auto deinit = cupti_params<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
      api().deinitialize(&deinit);
    }
  }
};

namespace {

// The chip's name and which counters it makes available in `context`.
std::pair<std::string, std::vector<std::uint8_t>> chip_and_availability(CUcontext context) {
  CUdevice device = 0;
  if (driver_api().context_device(&device) != CUDA_SUCCESS) throw CuptiUnavailable("cuCtxGetDevice failed");
  auto chip = cupti_params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  chip.deviceIndex = static_cast<std::size_t>(device);
  check(api().chip_name(&chip), "cuptiDeviceGetChipName");
  auto availability = cupti_params<CUpti_Profiler_GetCounterAvailability_Params>(CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  availability.ctx = context;
  check(api().counter_availability(&availability), "cuptiProfilerGetCounterAvailability (size)");
  std::vector<std::uint8_t> image(availability.counterAvailabilityImageSize);
  availability.pCounterAvailabilityImage = image.data();
  check(api().counter_availability(&availability), "cuptiProfilerGetCounterAvailability");
  return {chip.pChipName ? chip.pChipName : "", std::move(image)};
}

// Adds the first candidate the chip knows to the host object's configuration; returns its name.
// Each name is looked up first: adding an unknown one fails with INVALID_PARAMETER and leaves the
// host object refusing every later name (CUPTI 13.0).
std::string add_first_known_metric(CUpti_Profiler_Host_Object* host, const std::vector<std::string>& candidates,
                                   const std::string& chip) {
  for (const std::string& name : candidates) {
    auto lookup = cupti_params<CUpti_Profiler_Host_GetMetricProperties_Params>(
        CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
    lookup.pHostObject = host;
    lookup.pMetricName = name.c_str();
    const CUptiResult known = api().metric_properties(&lookup);
    if (known == CUPTI_ERROR_INVALID_METRIC_NAME) continue;
    check(known, "cuptiProfilerHostGetMetricProperties");
    const char* names[] = {name.c_str()};
    auto add = cupti_params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host;
    add.ppMetricNames = names;
    add.numMetrics = 1;
    check(api().add_metrics(&add), "cuptiProfilerHostConfigAddMetrics");
    return name;
  }
  throw CuptiUnavailable(fmt::format("chip {} has none of the metrics {}", chip, fmt::join(candidates, ", ")));
}

}  // namespace

KernelCounterCollector::KernelCounterCollector(const std::vector<std::string>& candidates, std::size_t max_kernels) {
  const ProfilerApi& a = api();
  CUcontext context = nullptr;
  if (driver_api().current_context(&context) != CUDA_SUCCESS || context == nullptr)
    throw CuptiUnavailable("no current CUDA context to count kernels in");
  auto session = std::make_unique<Session>();
  auto initialize = cupti_params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  check(a.initialize(&initialize), "cuptiProfilerInitialize");
  session->initialized = true;
  const auto [chip, availability] = chip_and_availability(context);

  auto host = cupti_params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.c_str();
  host.pCounterAvailabilityImage = availability.data();
  check(a.host_initialize(&host), "cuptiProfilerHostInitialize");
  session->host = host.pHostObject;
  metric_ = add_first_known_metric(session->host, candidates, chip);
  auto size = cupti_params<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  size.pHostObject = session->host;
  check(a.config_image_size(&size), "cuptiProfilerHostGetConfigImageSize");
  if (size.configImageSize == 0)
    throw CuptiUnavailable(fmt::format("CUPTI made an empty configuration for {} on chip {}", metric_, chip));
  session->config.resize(size.configImageSize);
  auto image = cupti_params<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  image.pHostObject = session->host;
  image.configImageSize = session->config.size();
  image.pConfigImage = session->config.data();
  check(a.config_image(&image), "cuptiProfilerHostGetConfigImage");

  auto enable = cupti_params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
  enable.ctx = context;
  check(a.enable(&enable), "cuptiRangeProfilerEnable");
  session->profiler = enable.pRangeProfilerObject;
  const char* metric_names[] = {metric_.c_str()};
  auto data_size = cupti_params<CUpti_RangeProfiler_GetCounterDataSize_Params>(CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  data_size.pRangeProfilerObject = session->profiler;
  data_size.pMetricNames = metric_names;
  data_size.numMetrics = 1;
  data_size.maxNumOfRanges = max_kernels;
  data_size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(max_kernels);
  check(a.counter_data_size(&data_size), "cuptiRangeProfilerGetCounterDataSize");
  session->counter_data.resize(data_size.counterDataSize);
  auto data = cupti_params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  data.pRangeProfilerObject = session->profiler;
  data.counterDataSize = session->counter_data.size();
  data.pCounterData = session->counter_data.data();
  check(a.counter_data_initialize(&data), "cuptiRangeProfilerCounterDataImageInitialize");

  auto config = cupti_params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
  config.pRangeProfilerObject = session->profiler;
  config.configSize = session->config.size();
  config.pConfig = session->config.data();
  config.counterDataImageSize = session->counter_data.size();
  config.pCounterDataImage = session->counter_data.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_KernelReplay;
  config.maxRangesPerPass = max_kernels;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;  // CUPTI documents it as equal to minNestingLevel
  check(a.set_config(&config), "cuptiRangeProfilerSetConfig");
  auto start = cupti_params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
  start.pRangeProfilerObject = session->profiler;
  check(a.start(&start), "cuptiRangeProfilerStart");
  session->started = true;
  session_ = session.release();
}

KernelCounterCollector::~KernelCounterCollector() { delete session_; }

std::string first_known_metric(const std::string& chip, const std::vector<std::string>& candidates) {
  auto host = cupti_params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.c_str();
  check(api().host_initialize(&host), "cuptiProfilerHostInitialize");
  const std::unique_ptr<CUpti_Profiler_Host_Object, void (*)(CUpti_Profiler_Host_Object*)> owned(host.pHostObject,
                                                                                                &deinitialize_host);
  return add_first_known_metric(owned.get(), candidates, chip);
}

std::vector<double> KernelCounterCollector::stop() {
  if (!session_) return {};
  std::unique_ptr<Session> session(std::exchange(session_, nullptr));
  const ProfilerApi& a = api();
  auto stop = cupti_params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
  stop.pRangeProfilerObject = session->profiler;
  session->started = false;
  check(a.stop(&stop), "cuptiRangeProfilerStop");
  if (!stop.isAllPassSubmitted)
    throw CuptiUnavailable(fmt::format("the range profiler wants more passes than kernel replay made for {}", metric_));
  auto decode = cupti_params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  decode.pRangeProfilerObject = session->profiler;
  check(a.decode(&decode), "cuptiRangeProfilerDecodeData");
  dropped_ = decode.numOfRangeDropped;

  auto info = cupti_params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = session->counter_data.data();
  info.counterDataImageSize = session->counter_data.size();
  check(a.counter_data_info(&info), "cuptiRangeProfilerGetCounterDataInfo");
  const char* metric_names[] = {metric_.c_str()};
  std::vector<double> counters;
  for (std::size_t i = 0; i < info.numTotalRanges; ++i) {
    double value = 0;
    auto evaluate = cupti_params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    evaluate.pHostObject = session->host;
    evaluate.pCounterDataImage = session->counter_data.data();
    evaluate.counterDataImageSize = session->counter_data.size();
    evaluate.rangeIndex = i;
    evaluate.ppMetricNames = metric_names;
    evaluate.numMetrics = 1;
    evaluate.pMetricValues = &value;
    check(a.evaluate(&evaluate), "cuptiProfilerHostEvaluateToGpuValues");
    counters.push_back(value);
  }
  return counters;
}

}  // namespace mpbench::profiler
