#include "backends/cuda/cuda_backend.hpp"

#include <fmt/format.h>

#include <limits>

#include "backends/cuda/check.hpp"
#include "backends/cuda/cublaslt_gemm.hpp"
#include "backends/cuda/device_query.hpp"
#include "backends/cuda/kernels.hpp"
#include "backends/cuda/nvml.hpp"
#include "core/error.hpp"

namespace mpbench::cuda {

namespace {

constexpr std::string_view kRemedy = "use a smaller size";

std::string gibibytes(std::uint64_t bytes) { return fmt::format("{:.2f} GiB", bytes / double(1ull << 30)); }

// Device time between two events recorded on the backend's stream.
class EventTimer final : public DeviceTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream), start_(create_event()), stop_(create_event()) {}

  void start() override { check(cudaEventRecord(start_.get(), stream_), "cudaEventRecord (timer start)"); }

  double stop_seconds() override {
    check(cudaEventRecord(stop_.get(), stream_), "cudaEventRecord (timer stop)");
    check(cudaEventSynchronize(stop_.get()), "cudaEventSynchronize (timer stop)");
    float milliseconds = 0;
    check(cudaEventElapsedTime(&milliseconds, start_.get(), stop_.get()), "cudaEventElapsedTime");
    return milliseconds / 1e3;
  }

 private:
  static EventOwner create_event() {
    cudaEvent_t event = nullptr;
    check(cudaEventCreate(&event), "cudaEventCreate");
    return EventOwner(event);
  }

  cudaStream_t stream_;
  EventOwner start_;
  EventOwner stop_;
};

// cudaMemcpyAsync between pinned host memory and a device buffer, both owned by the op.
class PinnedTransfer final : public PreparedOp {
 public:
  PinnedTransfer(int device, cudaStream_t stream, TransferDirection direction, std::size_t bytes, PinnedMemory host,
                 DeviceMemory on_device)
      : device_(device), stream_(stream), direction_(direction), bytes_(bytes), host_(std::move(host)),
        on_device_(std::move(on_device)) {}

  // The buffers must outlive a copy still in flight.
  ~PinnedTransfer() override {
    if (cudaStreamSynchronize(stream_) != cudaSuccess) cudaGetLastError();
  }

  void run() override {
    check(cudaSetDevice(device_), "cudaSetDevice");
    if (direction_ == TransferDirection::host_to_device)
      check(cudaMemcpyAsync(on_device_.get(), host_.get(), bytes_, cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync (host to device)");
    else
      check(cudaMemcpyAsync(host_.get(), on_device_.get(), bytes_, cudaMemcpyDeviceToHost, stream_),
            "cudaMemcpyAsync (device to host)");
  }

  nlohmann::json details() const override {
    return {{"api", "cudaMemcpyAsync"},
            {"host_memory", "pinned (cudaMallocHost)"},
            {"pinned", true},
            {"direction", direction_ == TransferDirection::host_to_device ? "host_to_device" : "device_to_host"},
            {"bytes", bytes_}};
  }

 private:
  int device_;
  cudaStream_t stream_;
  TransferDirection direction_;
  std::size_t bytes_;
  PinnedMemory host_;
  DeviceMemory on_device_;
};

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

CudaBackend::CudaBackend(std::shared_ptr<CudaDevice> device)
    : device_(std::move(device)),
      flush_bytes_(2 * device_->info().usable_cache_bytes),
      flush_buffer_(device_->allocate(flush_bytes_, "the L2 flush buffer", kRemedy)) {}

// The flush buffer must outlive a memset still in flight.
CudaBackend::~CudaBackend() {
  if (cudaSetDevice(device_->index()) != cudaSuccess || cudaStreamSynchronize(device_->stream()) != cudaSuccess)
    cudaGetLastError();
}

DeviceBuffer CudaBackend::allocate(DType dtype, std::size_t count) {
  device_->activate();
  if (count > std::numeric_limits<std::size_t>::max() / dtype_size(dtype))
    throw OutOfMemoryError(fmt::format("{} elements of {} do not fit in a 64-bit size", count, dtype_name(dtype)),
                           std::numeric_limits<std::uint64_t>::max());
  if (count == 0) return DeviceBuffer(this, nullptr, dtype, 0);
  const std::string what = fmt::format("{} elements of {}", count, dtype_name(dtype));
  return DeviceBuffer(this, device_->allocate(count * dtype_size(dtype), what, kRemedy).release(), dtype, count);
}

void CudaBackend::release(void* data) noexcept {
  if (cudaSetDevice(device_->index()) != cudaSuccess) cudaGetLastError();
  DeviceFree{}(data);
}

void CudaBackend::fill_uniform(DeviceBuffer& buffer, std::uint64_t seed, float lo, float hi) {
  device_->activate();
  kernels::fill_uniform(device_->launcher(), buffer.dtype(), buffer.data(), buffer.count(), seed, lo, hi);
}

void CudaBackend::upload(DeviceBuffer& destination, const void* host, std::size_t bytes) {
  device_->activate();
  if (bytes > destination.bytes())
    throw UsageError(fmt::format("upload of {} bytes into a buffer of {} bytes", bytes, destination.bytes()));
  check(cudaMemcpyAsync(destination.data(), host, bytes, cudaMemcpyHostToDevice, device_->stream()),
        "cudaMemcpyAsync (upload)");
  synchronize();
}

void CudaBackend::download(void* host, const DeviceBuffer& source, std::size_t bytes) {
  device_->activate();
  if (bytes > source.bytes())
    throw UsageError(fmt::format("download of {} bytes from a buffer of {} bytes", bytes, source.bytes()));
  check(cudaMemcpyAsync(host, source.data(), bytes, cudaMemcpyDeviceToHost, device_->stream()),
        "cudaMemcpyAsync (download)");
  synchronize();
}

void CudaBackend::synchronize() { device_->synchronize(); }

// nvbench's method: overwrite a buffer larger than L2 (here twice its size) so that nothing an
// earlier sample left there is hit.
void CudaBackend::flush_cache() {
  device_->activate();
  check(cudaMemsetAsync(flush_buffer_.get(), 0, flush_bytes_, device_->stream()), "cudaMemsetAsync (L2 flush)");
}

std::unique_ptr<DeviceTimer> CudaBackend::make_timer() {
  device_->activate();
  return std::make_unique<EventTimer>(device_->stream());
}

std::unique_ptr<PreparedOp> CudaBackend::make_gemm(GemmPrecision precision, const GemmShape& shape,
                                                   const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) {
  device_->activate();
  if (const std::optional<std::string> why = gemm_unsupported(precision)) throw UsageError(*why);
  return make_cublaslt_gemm(device_, precision, shape, a, b, c);
}

void CudaBackend::stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c,
                         float scalar) {
  device_->activate();
  check_stream_arguments(kernel, a, b, c);
  kernels::Launcher& launcher = device_->launcher();
  const std::size_t n = a.count();
  if (kernel == StreamKernel::dot)
    return kernels::stream_dot(launcher, a.dtype(), a.data(), b.data(), static_cast<float*>(c.data()), n);
  switch (kernel) {
    case StreamKernel::copy: return kernels::stream_copy(launcher, a.dtype(), a.data(), c.data(), n);
    case StreamKernel::scale: return kernels::stream_scale(launcher, a.dtype(), a.data(), c.data(), n, scalar);
    case StreamKernel::add: return kernels::stream_add(launcher, a.dtype(), a.data(), b.data(), c.data(), n);
    case StreamKernel::triad:
      return kernels::stream_triad(launcher, a.dtype(), a.data(), b.data(), c.data(), n, scalar);
    case StreamKernel::dot: return;
  }
}

void CudaBackend::cast(CastKind kind, const CastArgs& args) {
  device_->activate();
  check_cast_arguments(kind, args);
  kernels::Launcher& launcher = device_->launcher();
  const DeviceBuffer& source = *args.source;
  DeviceBuffer& destination = *args.destination;
  const std::size_t n = source.count();
  const auto* x = static_cast<const float*>(source.data());
  switch (kind) {
    case CastKind::f32_to_f16:
    case CastKind::f32_to_bf16:
    case CastKind::f16_to_f32:
    case CastKind::bf16_to_f32:
      return kernels::convert(launcher, source.dtype(), destination.dtype(), source.data(), destination.data(), n);
    case CastKind::f32_to_e4m3_scaled:
      kernels::amax(launcher, x, static_cast<float*>(args.amax->data()), n);
      return kernels::f32_to_e4m3_scaled(launcher, x, static_cast<const float*>(args.scale->data()),
                                         static_cast<std::uint8_t*>(destination.data()), n);
    case CastKind::bf16_to_e4m3_scaled:
      return kernels::bf16_to_e4m3_current(launcher, static_cast<const std::uint16_t*>(source.data()),
                                           static_cast<float*>(args.amax->data()),
                                           static_cast<float*>(args.chosen_scale->data()),
                                           static_cast<std::uint8_t*>(destination.data()), n);
    case CastKind::f32_to_bf16_stochastic:
      return kernels::f32_to_bf16_stochastic(launcher, x, args.seed, static_cast<std::uint16_t*>(destination.data()),
                                             n);
  }
}

void CudaBackend::cast_transpose_amax(const CastTransposeArgs& args) {
  device_->activate();
  check_cast_transpose_arguments(args);
  kernels::bf16_to_e4m3_transpose_amax(device_->launcher(), static_cast<const std::uint16_t*>(args.source->data()),
                                       args.rows, args.cols, static_cast<const float*>(args.scale->data()),
                                       static_cast<std::uint8_t*>(args.codes->data()),
                                       static_cast<std::uint8_t*>(args.transposed->data()),
                                       static_cast<float*>(args.amax->data()));
}

void CudaBackend::copy(DeviceBuffer& destination, const DeviceBuffer& source) {
  device_->activate();
  if (destination.bytes() < source.bytes())
    throw UsageError(fmt::format("copy of {} bytes into a buffer of {} bytes", source.bytes(), destination.bytes()));
  check(cudaMemcpyAsync(destination.data(), source.data(), source.bytes(), cudaMemcpyDeviceToDevice,
                        device_->stream()),
        "cudaMemcpyAsync (device to device)");
}

std::unique_ptr<PreparedOp> CudaBackend::make_host_transfer(TransferDirection direction, std::size_t bytes,
                                                            std::string*) {
  device_->activate();
  if (bytes == 0) throw UsageError("a host transfer needs at least one byte");
  void* host = nullptr;
  const cudaError_t status = cudaMallocHost(&host, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfMemoryError(fmt::format("cannot pin {} ({} bytes) of host memory; use a smaller size",
                                       gibibytes(bytes), bytes), bytes);
  }
  check(status, "cudaMallocHost");
  PinnedMemory pinned(host);
  return std::make_unique<PinnedTransfer>(device_->index(), device_->stream(), direction, bytes, std::move(pinned),
                                          device_->allocate(bytes, "a host transfer buffer", kRemedy));
}

nlohmann::json CudaBackend::clocks() const {
  const std::optional<NvmlReadings> now = nvml_readings(device_->pci_bus_id());
  if (!now) return {{"source", "unavailable"}};
  return {{"source", "nvml"},
          {"sm_clock_mhz", or_null(now->sm_clock_mhz)},
          {"memory_clock_mhz", or_null(now->memory_clock_mhz)},
          {"temperature_c", or_null(now->temperature_c)},
          {"power_w", or_null(now->power_w)},
          {"clock_event_reasons", or_null(now->clock_event_reasons)}};
}

nlohmann::json CudaBackend::environment() const {
  return {{"cuda", cuda_versions()},
          {"cuda_architectures_built", MPBENCH_CUDA_ARCHITECTURES},
          {"cublaslt_workspace_bytes", device_->workspace_bytes()}};
}

std::unique_ptr<Backend> make_backend(int device_index) {
  return std::make_unique<CudaBackend>(make_device(device_index));
}

}  // namespace mpbench::cuda
