#include "backends/cuda/nvml.hpp"

#include "backends/cuda/dynamic_library.hpp"

namespace mpbench::cuda {

namespace {

// The few NVML declarations used (NVML's header does not come with the CUDA toolkit). Its
// enums are passed as unsigned, which has the same calling convention.
struct nvmlDevice_st;
using NvmlDevice = nvmlDevice_st*;
constexpr int kNvmlSuccess = 0;
constexpr unsigned kNvmlClockSm = 1;       // NVML_CLOCK_SM
constexpr unsigned kNvmlClockMemory = 2;   // NVML_CLOCK_MEM
constexpr unsigned kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

struct Nvml {
  int (*handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*system_driver_version)(char*, unsigned) = nullptr;
  int (*clock_info)(NvmlDevice, unsigned, unsigned*) = nullptr;
  int (*temperature)(NvmlDevice, unsigned, unsigned*) = nullptr;
  int (*power_usage)(NvmlDevice, unsigned*) = nullptr;            // milliwatts
  int (*enforced_power_limit)(NvmlDevice, unsigned*) = nullptr;   // milliwatts
  int (*clock_event_reasons)(NvmlDevice, unsigned long long*) = nullptr;
};

std::optional<Nvml> load_nvml() {
  void* library = open_library({"libnvidia-ml.so.1"});
  auto* init = library_symbol<int()>(library, "nvmlInit_v2");
  if (!init || init() != kNvmlSuccess) return std::nullopt;
  Nvml nvml;
  nvml.handle_by_pci_bus_id = library_symbol<int(const char*, NvmlDevice*)>(library, "nvmlDeviceGetHandleByPciBusId_v2");
  nvml.system_driver_version = library_symbol<int(char*, unsigned)>(library, "nvmlSystemGetDriverVersion");
  nvml.clock_info = library_symbol<int(NvmlDevice, unsigned, unsigned*)>(library, "nvmlDeviceGetClockInfo");
  nvml.temperature = library_symbol<int(NvmlDevice, unsigned, unsigned*)>(library, "nvmlDeviceGetTemperature");
  nvml.power_usage = library_symbol<int(NvmlDevice, unsigned*)>(library, "nvmlDeviceGetPowerUsage");
  nvml.enforced_power_limit = library_symbol<int(NvmlDevice, unsigned*)>(library, "nvmlDeviceGetEnforcedPowerLimit");
  // Renamed in newer drivers; the old name stays exported for compatibility.
  nvml.clock_event_reasons = library_symbol<int(NvmlDevice, unsigned long long*)>(library, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!nvml.clock_event_reasons)
    nvml.clock_event_reasons = library_symbol<int(NvmlDevice, unsigned long long*)>(library, "nvmlDeviceGetCurrentClocksThrottleReasons");
  return nvml;
}

const Nvml* nvml() {
  static const std::optional<Nvml> loaded = load_nvml();
  return loaded ? &*loaded : nullptr;
}

// Calls getter(device, args..., &value) when NVML has the function; nullopt on any failure.
template <typename Value, typename Getter, typename... Args>
std::optional<Value> read(Getter* getter, NvmlDevice device, Args... args) {
  Value value{};
  if (!getter || getter(device, args..., &value) != kNvmlSuccess) return std::nullopt;
  return value;
}

std::optional<double> milliwatts_to_watts(std::optional<unsigned> milliwatts) {
  if (!milliwatts) return std::nullopt;
  return *milliwatts / 1000.0;
}

}  // namespace

std::optional<NvmlReadings> nvml_readings(const std::string& pci_bus_id) {
  const Nvml* api = nvml();
  NvmlDevice device = nullptr;
  if (!api || !api->handle_by_pci_bus_id || api->handle_by_pci_bus_id(pci_bus_id.c_str(), &device) != kNvmlSuccess)
    return std::nullopt;
  NvmlReadings readings;
  readings.sm_clock_mhz = read<unsigned>(api->clock_info, device, kNvmlClockSm);
  readings.memory_clock_mhz = read<unsigned>(api->clock_info, device, kNvmlClockMemory);
  readings.temperature_c = read<unsigned>(api->temperature, device, kNvmlTemperatureGpu);
  readings.power_w = milliwatts_to_watts(read<unsigned>(api->power_usage, device));
  readings.power_limit_w = milliwatts_to_watts(read<unsigned>(api->enforced_power_limit, device));
  readings.clock_event_reasons = read<unsigned long long>(api->clock_event_reasons, device);
  return readings;
}

std::optional<std::string> nvml_driver_version() {
  const Nvml* api = nvml();
  char version[96] = {};
  if (!api || !api->system_driver_version || api->system_driver_version(version, sizeof version) != kNvmlSuccess)
    return std::nullopt;
  return std::string(version);
}

}  // namespace mpbench::cuda
