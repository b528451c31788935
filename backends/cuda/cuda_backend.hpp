#pragma once
// The CUDA backend: cuBLASLt GEMMs and mpbench's own stream and cast kernels on one GPU, run on
// that GPU's device context (cuda_device.hpp), which the Transformer ops can share.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/resources.hpp"
#include "core/backend.hpp"

namespace mpbench::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::shared_ptr<CudaDevice> device);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // The device context the backend runs on, for whatever else should run on the same GPU.
  const std::shared_ptr<CudaDevice>& device_context() const { return device_; }

  const DeviceInfo& device() const override { return device_->info(); }
  DeviceBuffer allocate(DType dtype, std::size_t count) override;
  void release(void* data) noexcept override;
  void fill_uniform(DeviceBuffer& buffer, std::uint64_t seed, float lo, float hi) override;
  void upload(DeviceBuffer& destination, const void* host, std::size_t bytes) override;
  void download(void* host, const DeviceBuffer& source, std::size_t bytes) override;
  void synchronize() override;
  void flush_cache() override;
  std::unique_ptr<DeviceTimer> make_timer() override;
  const CapabilityTable& capabilities() const override { return device_->capabilities(); }
  std::unique_ptr<PreparedOp> make_gemm(GemmPrecision precision, const GemmShape& shape, const DeviceBuffer& a,
                                        const DeviceBuffer& b, DeviceBuffer& c) override;
  void stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c,
              float scalar) override;
  // Every cast is a software conversion from amp/formats.hpp, which any architecture runs.
  std::optional<std::string> cast_unsupported(CastKind) const override { return std::nullopt; }
  void cast(CastKind kind, const CastArgs& args) override;
  void cast_transpose_amax(const CastTransposeArgs& args) override;
  void copy(DeviceBuffer& destination, const DeviceBuffer& source) override;
  std::unique_ptr<PreparedOp> make_host_transfer(TransferDirection direction, std::size_t bytes,
                                                 std::string* why_not) override;
  nlohmann::json clocks() const override;
  nlohmann::json environment() const override;

 private:
  std::shared_ptr<CudaDevice> device_;
  std::size_t flush_bytes_;
  DeviceMemory flush_buffer_;
};

// The backend on GPU `device_index` (make_device's checks: UsageError when there is no such GPU or
// when this build has no kernels for its architecture).
std::unique_ptr<Backend> make_backend(int device_index);

// {"cuda": {runtime, driver, cublas, cublaslt, cudnn, cupti, nccl}, "gpus": [...], "gpu_status": ...}.
// Works without a GPU or driver: the library versions are still listed, "gpus" is empty and
// "gpu_status" says why.
nlohmann::json environment();

}  // namespace mpbench::cuda
