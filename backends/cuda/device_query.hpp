#pragma once
// Facts about the GPUs and the CUDA libraries, shared by environment() and the backend.
#include <nlohmann/json.hpp>
#include <string>

#include "core/backend.hpp"

namespace mpbench::cuda {

DeviceInfo query_device(int index);
std::string query_pci_bus_id(int index);  // "0000:3B:00.0", the key NVML finds the GPU by
// The "cuda" part of environment(): versions of the runtime, driver and libraries (null when
// absent), queried once per process.
const nlohmann::json& cuda_versions();

}  // namespace mpbench::cuda
