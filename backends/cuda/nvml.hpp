#pragma once
// What the driver's NVML says about a GPU now: clocks, temperature, power. NVML ships with the
// driver, not the toolkit, so it is opened at run time and everything here is optional.
#include <optional>
#include <string>

namespace mpbench::cuda {

struct NvmlReadings {
  std::optional<unsigned> sm_clock_mhz;
  std::optional<unsigned> memory_clock_mhz;
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  // nvmlClocksEventReasons bits (power cap, thermal, ...): why the clocks are below maximum.
  std::optional<unsigned long long> clock_event_reasons;
};

// nullopt when NVML cannot be loaded or initialized, or does not know the device.
std::optional<NvmlReadings> nvml_readings(const std::string& pci_bus_id);
std::optional<std::string> nvml_driver_version();  // e.g. "580.82.07"

}  // namespace mpbench::cuda
