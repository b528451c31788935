#include "backends/cuda/cuda_device.hpp"

#include <fmt/format.h>

#include "backends/cuda/capabilities.hpp"
#include "backends/cuda/check.hpp"
#include "backends/cuda/device_query.hpp"
#include "core/error.hpp"

namespace mpbench::cuda {

namespace {

std::string gibibytes(std::uint64_t bytes) { return fmt::format("{:.2f} GiB", bytes / double(1ull << 30)); }

int activated(int index) {
  check(cudaSetDevice(index), "cudaSetDevice");
  return index;
}

StreamOwner create_stream() {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return StreamOwner(stream);
}

LtHandleOwner create_lt_handle() {
  cublasLtHandle_t handle = nullptr;
  check(cublasLtCreate(&handle), "cublasLtCreate");
  return LtHandleOwner(handle);
}

}  // namespace

std::size_t cublaslt_workspace_bytes(int compute_capability_major) {
  return (compute_capability_major >= 9 ? 32u : 4u) << 20;
}

CudaDevice::CudaDevice(int index)
    : index_(activated(index)),
      info_(query_device(index)),
      pci_bus_id_(query_pci_bus_id(index)),
      stream_(create_stream()),
      launcher_(stream_.get(), info_.multiprocessors),
      lt_handle_(create_lt_handle()),
      workspace_bytes_(cublaslt_workspace_bytes(info_.compute_capability_major)),
      workspace_(allocate(workspace_bytes_, "the cuBLASLt workspace", "free memory on the GPU")),
      unit_scale_(create_unit_scale()),
      capabilities_(gpu_capabilities(info_)) {}

// The workspace and the unit scale must outlive the work still queued on the stream.
CudaDevice::~CudaDevice() {
  if (cudaSetDevice(index_) != cudaSuccess || cudaStreamSynchronize(stream_.get()) != cudaSuccess)
    cudaGetLastError();
}

void CudaDevice::activate() const { check(cudaSetDevice(index_), "cudaSetDevice"); }

void CudaDevice::synchronize() const { check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize"); }

DeviceMemory CudaDevice::allocate(std::size_t bytes, std::string_view what, std::string_view remedy) const {
  activate();
  void* memory = nullptr;
  const cudaError_t status = cudaMalloc(&memory, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky, but it would be reported by the next launch check
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    if (!known) cudaGetLastError();
    throw OutOfMemoryError(
        fmt::format("out of GPU memory: cannot allocate {} ({} bytes) for {} on GPU {} ({}), which has {} free of "
                    "{} (cudaMalloc: out of memory); {}",
                    gibibytes(bytes), bytes, what, index_, info_.name, known ? gibibytes(free_bytes) : "unknown",
                    known ? gibibytes(total_bytes) : "unknown", remedy),
        bytes);
  }
  check(status, fmt::format("cudaMalloc of {} bytes", bytes));
  return DeviceMemory(memory);
}

// Copied on the device's stream and waited for: that stream does not wait for the legacy one.
DeviceMemory CudaDevice::create_unit_scale() const {
  DeviceMemory scale = allocate(sizeof(float), "the fp8 unit scale", "free memory on the GPU");
  const float one = 1.0f;
  check(cudaMemcpyAsync(scale.get(), &one, sizeof one, cudaMemcpyHostToDevice, stream_.get()),
        "cudaMemcpyAsync (fp8 unit scale)");
  check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (fp8 unit scale)");
  return scale;
}

std::shared_ptr<CudaDevice> make_device(int index) {
  if (const std::optional<std::string> reason = unavailable_reason())
    throw UsageError(fmt::format("cannot use CUDA GPU {}: {}; run where an NVIDIA GPU and driver are present, or use "
                                 "--device cpu", index, *reason));
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (index < 0 || index >= count)
    throw UsageError(fmt::format("GPU index {} is out of range: {} CUDA GPU(s) found, use 0 to {}", index, count,
                                 count - 1));
  check(cudaSetDevice(index), "cudaSetDevice");
  if (const std::optional<std::string> problem = kernels::kernel_image_problem()) {
    const DeviceInfo info = query_device(index);
    throw UsageError(fmt::format("{} (compute capability {}.{}) cannot run this build's kernels, built for CUDA "
                                 "architectures {}: {}; rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{}",
                                 info.name, info.compute_capability_major, info.compute_capability_minor,
                                 MPBENCH_CUDA_ARCHITECTURES, *problem, info.compute_capability_major,
                                 info.compute_capability_minor));
  }
  return std::make_shared<CudaDevice>(index);
}

}  // namespace mpbench::cuda
