#pragma once
// One GPU as the device layer holds it: what the microbenchmarks' backend and the Transformer ops
// share, so that both run on one stream, one cuBLASLt handle and one workspace, read one capability
// table and report running out of memory alike.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "backends/cuda/kernels.hpp"
#include "backends/cuda/resources.hpp"
#include "core/backend.hpp"
#include "core/capability.hpp"

namespace mpbench::cuda {

// nullopt when a GPU is usable; otherwise why not, e.g. "no CUDA driver found (cudaGetDeviceCount: ...)".
std::optional<std::string> unavailable_reason();

// cuBLASLt's recommended workspace: 32 MiB on Hopper and newer, 4 MiB before.
std::size_t cublaslt_workspace_bytes(int compute_capability_major);

class CudaDevice {
 public:
  // Sets up GPU `index` as is; make_device first checks that it exists and can run this build.
  explicit CudaDevice(int index);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  int index() const { return index_; }
  // The runtime's current device is per host thread: every entry point selects this one first.
  void activate() const;
  const DeviceInfo& info() const { return info_; }
  const std::string& pci_bus_id() const { return pci_bus_id_; }  // the key NVML finds the GPU by
  // Non-blocking: no implicit synchronization with work on the legacy default stream.
  cudaStream_t stream() const { return stream_.get(); }
  void synchronize() const;
  // Grid sizes of the backend's own kernels, on the stream.
  kernels::Launcher& launcher() { return launcher_; }
  cublasLtHandle_t lt_handle() const { return lt_handle_.get(); }
  void* workspace() const { return workspace_.get(); }
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  const float* unit_scale() const { return static_cast<const float*>(unit_scale_.get()); }  // 1.0f: fp8 A and B scales
  const CapabilityTable& capabilities() const { return capabilities_; }

  // `bytes` of device memory for `what`. Out of memory: OutOfMemoryError naming the bytes, the GPU
  // and its free and total memory, then `remedy` (e.g. "use a smaller size").
  DeviceMemory allocate(std::size_t bytes, std::string_view what, std::string_view remedy) const;

 private:
  DeviceMemory create_unit_scale() const;

  int index_;
  DeviceInfo info_;
  std::string pci_bus_id_;
  StreamOwner stream_;
  kernels::Launcher launcher_;
  LtHandleOwner lt_handle_;
  std::size_t workspace_bytes_;
  DeviceMemory workspace_;
  DeviceMemory unit_scale_;
  CapabilityTable capabilities_;
};

// GPU `index`, shared by whatever runs on it. Throws UsageError when there is no usable GPU of that
// index or when this build has no kernels for its architecture.
std::shared_ptr<CudaDevice> make_device(int index);

}  // namespace mpbench::cuda
