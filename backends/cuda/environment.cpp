// Device discovery and the CUDA part of the environment record. Everything here works without a
// GPU or driver: versions of what can be loaded are listed, the rest is null.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <library_types.h>

#include <cstdint>
#include <optional>

#include "backends/cuda/capabilities.hpp"
#include "backends/cuda/check.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/device_query.hpp"
#include "backends/cuda/dynamic_library.hpp"
#include "backends/cuda/nvml.hpp"
#include "core/kernel_images.hpp"

namespace mpbench::cuda {

namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// CUDA's encoding of runtime and driver versions: 1000 * major + 10 * minor.
std::string cuda_version_string(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

// 10000 * major + 100 * minor + patch: cuBLAS(Lt), cuDNN 9, NCCL 2.9+, CUPTI 13+.
std::string five_digit_version(std::uint64_t version) {
  return fmt::format("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100);
}

int attribute(cudaDeviceAttr which, int device) {
  int value = 0;
  check(cudaDeviceGetAttribute(&value, which, device), "cudaDeviceGetAttribute");
  return value;
}

std::optional<std::string> driver_version() {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess || version == 0) return std::nullopt;
  return cuda_version_string(version);
}

std::optional<std::string> cublas_version() {
  using GetProperty = int(libraryPropertyType, int*);
  auto* get = library_symbol<GetProperty>(open_library({fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR), "libcublas.so"}),
                                          "cublasGetProperty");
  int major = 0, minor = 0, patch = 0;
  if (!get || get(MAJOR_VERSION, &major) != 0 || get(MINOR_VERSION, &minor) != 0 || get(PATCH_LEVEL, &patch) != 0)
    return std::nullopt;
  return fmt::format("{}.{}.{}", major, minor, patch);
}

std::optional<std::string> cudnn_version() {
  auto* get = library_symbol<std::size_t()>(open_library({"libcudnn.so.9", "libcudnn.so"}), "cudnnGetVersion");
  if (!get) return std::nullopt;
  const std::size_t version = get();
  // cuDNN 9 counts 10000 per major version, cuDNN 8 counted 1000.
  if (version < 90000) return fmt::format("{}.{}.{}", version / 1000, version % 1000 / 100, version % 100);
  return five_digit_version(version);
}

std::optional<std::string> cupti_version() {
  auto* get = library_symbol<int(std::uint32_t*)>(
      open_library({fmt::format("libcupti.so.{}", CUDART_VERSION / 1000), "libcupti.so"}), "cuptiGetVersion");
  std::uint32_t version = 0;
  if (!get || get(&version) != 0) return std::nullopt;
  // Up to CUDA 12.9 CUPTI had a plain API counter (v28); from 13.0 it is 10000 * major + ...
  if (version < 10000) return fmt::format("api {}", version);
  return five_digit_version(version);
}

std::optional<std::string> nccl_version() {
  auto* get = library_symbol<int(int*)>(open_library({"libnccl.so.2", "libnccl.so"}), "ncclGetVersion");
  int code = 0;
  if (!get || get(&code) != 0) return std::nullopt;
  // NCCL up to 2.8 encoded 1000 * major + 100 * minor + patch.
  if (code < 10000) return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  return five_digit_version(static_cast<std::uint64_t>(code));
}

nlohmann::json describe_gpu(int index) {
  nlohmann::json gpu = query_device(index).to_json();
  gpu.erase("backend");
  const std::string bus_id = query_pci_bus_id(index);
  gpu["pci_bus_id"] = bus_id;
  // The driver's own release number ("580.82.07"), from NVML, or null: the CUDA version the
  // driver supports is env.cuda.driver, and one key must not hold either.
  gpu["driver_version"] = or_null(nvml_driver_version());
  if (const std::optional<NvmlReadings> now = nvml_readings(bus_id)) {
    if (now->power_limit_w) gpu["power_limit_w"] = *now->power_limit_w;
    if (now->temperature_c) gpu["temperature_c"] = *now->temperature_c;
    if (now->sm_clock_mhz) gpu["sm_clock_now_mhz"] = *now->sm_clock_mhz;
    if (now->memory_clock_mhz) gpu["memory_clock_now_mhz"] = *now->memory_clock_mhz;
  }
  return gpu;
}

}  // namespace

DeviceInfo query_device(int index) {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, index), "cudaGetDeviceProperties");
  DeviceInfo info;
  info.backend = "cuda";
  info.name = properties.name;
  info.index = index;
  info.compute_capability_major = properties.major;
  info.compute_capability_minor = properties.minor;
  info.multiprocessors = properties.multiProcessorCount;
  info.memory_bytes = properties.totalGlobalMem;
  info.l2_bytes = static_cast<std::uint64_t>(properties.l2CacheSize);
  info.usable_cache_bytes = info.l2_bytes;  // one kernel's blocks reach the whole L2
  info.usable_cache_basis = "the GPU's L2";
  info.memory_bus_bits = properties.memoryBusWidth;
  // CUDA 13 dropped the clock fields of cudaDeviceProp; the attributes remain (kHz).
  info.sm_clock_mhz = attribute(cudaDevAttrClockRate, index) / 1000.0;
  info.memory_clock_mhz = attribute(cudaDevAttrMemoryClockRate, index) / 1000.0;
  return info;
}

std::string query_pci_bus_id(int index) {
  char bus_id[32] = {};
  check(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index), "cudaDeviceGetPCIBusId");
  return bus_id;
}

const nlohmann::json& cuda_versions() {
  static const nlohmann::json versions = [] {
    int runtime = 0;
    check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    return nlohmann::json{{"runtime", cuda_version_string(runtime)},
                          {"driver", or_null(driver_version())},
                          {"cublas", or_null(cublas_version())},
                          {"cublaslt", five_digit_version(cublasLtGetVersion())},
                          {"cudnn", or_null(cudnn_version())},
                          {"cupti", or_null(cupti_version())},
                          {"nccl", or_null(nccl_version())}};
  }();
  return versions;
}

std::optional<std::string> unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess) {
    if (count == 0) return "no CUDA GPU found";
    return std::nullopt;
  }
  cudaGetLastError();
  const std::string detail = fmt::format("cudaGetDeviceCount: {} ({})", cudaGetErrorString(status), cudaGetErrorName(status));
  const std::optional<std::string> driver = driver_version();
  if (status == cudaErrorNoDevice) return fmt::format("no CUDA GPU found ({})", detail);
  if (!driver) return fmt::format("no CUDA driver found ({})", detail);
  if (status == cudaErrorInsufficientDriver) {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return fmt::format("the CUDA driver supports CUDA {}, this build needs {}: update the driver ({})", *driver,
                       cuda_version_string(runtime), detail);
  }
  return fmt::format("CUDA is not usable ({})", detail);
}

// The GPU code this binary carries, read from its own file once: which generations run natively.
const std::optional<KernelImages>& own_kernel_images(std::string& error) {
  static std::string read_error;
  static const std::optional<KernelImages> images = []() -> std::optional<KernelImages> {
    try {
      return read_kernel_images("/proc/self/exe");
    } catch (const KernelImageError& e) {
      read_error = e.what();
      return std::nullopt;
    }
  }();
  error = read_error;
  return images;
}

nlohmann::json kernel_images_json() {
  std::string error;
  const std::optional<KernelImages>& images = own_kernel_images(error);
  if (!images) return {{"error", error}};
  return {{"sass", images->names(ImageKind::sass)}, {"ptx", images->names(ImageKind::ptx)},
          {"fatbinaries", images->fatbinaries.size()}};
}

// How the driver will load this binary's kernels on the GPU: natively, JIT-compiled from PTX, or not.
nlohmann::json kernel_load_json(const DeviceInfo& gpu) {
  std::string error;
  const std::optional<KernelImages>& images = own_kernel_images(error);
  if (!images) {
    LoadDecision unknown{LoadPath::unknown, std::nullopt, gpu.compute_capability_major, gpu.compute_capability_minor,
                         fmt::format("the binary's GPU code could not be read: {}", error)};
    return unknown.to_json();
  }
  return decide_load(gpu.compute_capability_major, gpu.compute_capability_minor, *images,
                     LoadSettings::from_environment()).to_json();
}

nlohmann::json environment() {
  nlohmann::json gpus = nlohmann::json::array();
  const std::optional<std::string> reason = unavailable_reason();
  if (!reason) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    for (int index = 0; index < count; ++index) {
      const DeviceInfo gpu = query_device(index);
      gpus.push_back(describe_gpu(index));
      gpus.back()["capabilities"] = gpu_capabilities(gpu).to_json();
      gpus.back()["kernel_load"] = kernel_load_json(gpu);
    }
  }
  nlohmann::json cuda = cuda_versions();
  cuda["kernel_images"] = kernel_images_json();
  return {{"cuda", cuda},
          {"gpus", gpus},
          {"gpu_status", reason ? *reason : fmt::format("{} CUDA GPU(s) found", gpus.size())}};
}

}  // namespace mpbench::cuda
