#include "backends/cuda/cuda_backend.hpp"

#include <fmt/format.h>

#include <limits>

#include "backends/cuda/capabilities.hpp"
#include "backends/cuda/check.hpp"
#include "backends/cuda/cublaslt_gemm.hpp"
#include "backends/cuda/device_query.hpp"
#include "backends/cuda/kernels.hpp"
#include "backends/cuda/nvml.hpp"
#include "backends/cuda/resources.hpp"
#include "core/error.hpp"

namespace mpbench::cuda {

namespace {

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

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device)
      : device_(activate(device)),
        info_(query_device(device)),
        pci_bus_id_(query_pci_bus_id(device)),
        stream_(create_stream()),
        launcher_(stream_.get(), info_.multiprocessors),
        lt_handle_(create_lt_handle()),
        workspace_bytes_(cublaslt_workspace_bytes(info_.compute_capability_major)),
        workspace_(device_malloc(workspace_bytes_, "the cuBLASLt workspace")),
        unit_scale_(create_unit_scale()),
        flush_bytes_(2 * info_.l2_bytes),
        flush_buffer_(device_malloc(flush_bytes_, "the L2 flush buffer")),
        capabilities_(gpu_capabilities(info_)) {}

  ~CudaBackend() override {
    if (cudaSetDevice(device_) != cudaSuccess || cudaStreamSynchronize(stream_.get()) != cudaSuccess)
      cudaGetLastError();
  }

  const DeviceInfo& device() const override { return info_; }

  DeviceBuffer allocate(DType dtype, std::size_t count) override {
    activate(device_);
    if (count > std::numeric_limits<std::size_t>::max() / dtype_size(dtype))
      throw OutOfMemoryError(fmt::format("{} elements of {} do not fit in a 64-bit size", count, dtype_name(dtype)),
                             std::numeric_limits<std::uint64_t>::max());
    if (count == 0) return DeviceBuffer(this, nullptr, dtype, 0);
    const std::string what = fmt::format("{} elements of {}", count, dtype_name(dtype));
    return DeviceBuffer(this, device_malloc(count * dtype_size(dtype), what).release(), dtype, count);
  }

  void release(void* data) noexcept override {
    if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();
    DeviceFree{}(data);
  }

  void fill_uniform(DeviceBuffer& buffer, std::uint64_t seed, float lo, float hi) override {
    activate(device_);
    kernels::fill_uniform(launcher_, buffer.dtype(), buffer.data(), buffer.count(), seed, lo, hi);
  }

  void upload(DeviceBuffer& destination, const void* host, std::size_t bytes) override {
    activate(device_);
    if (bytes > destination.bytes())
      throw UsageError(fmt::format("upload of {} bytes into a buffer of {} bytes", bytes, destination.bytes()));
    check(cudaMemcpyAsync(destination.data(), host, bytes, cudaMemcpyHostToDevice, stream_.get()),
          "cudaMemcpyAsync (upload)");
    synchronize();
  }

  void download(void* host, const DeviceBuffer& source, std::size_t bytes) override {
    activate(device_);
    if (bytes > source.bytes())
      throw UsageError(fmt::format("download of {} bytes from a buffer of {} bytes", bytes, source.bytes()));
    check(cudaMemcpyAsync(host, source.data(), bytes, cudaMemcpyDeviceToHost, stream_.get()),
          "cudaMemcpyAsync (download)");
    synchronize();
  }

  void synchronize() override { check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize"); }

  // nvbench's method: overwrite a buffer larger than L2 (here twice its size) so that nothing an
  // earlier sample left there is hit.
  void flush_cache() override {
    activate(device_);
    check(cudaMemsetAsync(flush_buffer_.get(), 0, flush_bytes_, stream_.get()), "cudaMemsetAsync (L2 flush)");
  }

  std::unique_ptr<DeviceTimer> make_timer() override {
    activate(device_);
    return std::make_unique<EventTimer>(stream_.get());
  }

  const CapabilityTable& capabilities() const override { return capabilities_; }

  std::unique_ptr<PreparedOp> make_gemm(GemmPrecision precision, const GemmShape& shape, const DeviceBuffer& a,
                                        const DeviceBuffer& b, DeviceBuffer& c) override {
    activate(device_);
    if (const std::optional<std::string> why = gemm_unsupported(precision)) throw UsageError(*why);
    const GemmContext context{device_, lt_handle_.get(), stream_.get(), workspace_.get(), workspace_bytes_,
                              static_cast<const float*>(unit_scale_.get())};
    return make_cublaslt_gemm(context, precision, shape, a, b, c);
  }

  void stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c,
              float scalar) override {
    activate(device_);
    check_stream_arguments(kernel, a, b, c);
    const std::size_t n = a.count();
    if (kernel == StreamKernel::dot)
      return kernels::stream_dot(launcher_, a.dtype(), a.data(), b.data(), static_cast<float*>(c.data()), n);
    switch (kernel) {
      case StreamKernel::copy: return kernels::stream_copy(launcher_, a.dtype(), a.data(), c.data(), n);
      case StreamKernel::scale: return kernels::stream_scale(launcher_, a.dtype(), a.data(), c.data(), n, scalar);
      case StreamKernel::add: return kernels::stream_add(launcher_, a.dtype(), a.data(), b.data(), c.data(), n);
      case StreamKernel::triad:
        return kernels::stream_triad(launcher_, a.dtype(), a.data(), b.data(), c.data(), n, scalar);
      case StreamKernel::dot: return;
    }
  }

  // Every cast is a software conversion from amp/formats.hpp, which any architecture runs.
  std::optional<std::string> cast_unsupported(CastKind) const override { return std::nullopt; }

  void cast(CastKind kind, const CastArgs& args) override {
    activate(device_);
    check_cast_arguments(kind, args);
    const DeviceBuffer& source = *args.source;
    DeviceBuffer& destination = *args.destination;
    const std::size_t n = source.count();
    const auto* x = static_cast<const float*>(source.data());
    switch (kind) {
      case CastKind::f32_to_f16:
      case CastKind::f32_to_bf16:
      case CastKind::f16_to_f32:
      case CastKind::bf16_to_f32:
        return kernels::convert(launcher_, source.dtype(), destination.dtype(), source.data(), destination.data(), n);
      case CastKind::f32_to_e4m3_scaled:
        kernels::amax(launcher_, x, static_cast<float*>(args.amax->data()), n);
        return kernels::f32_to_e4m3_scaled(launcher_, x, static_cast<const float*>(args.scale->data()),
                                           static_cast<std::uint8_t*>(destination.data()), n);
      case CastKind::f32_to_bf16_stochastic:
        return kernels::f32_to_bf16_stochastic(launcher_, x, args.seed, static_cast<std::uint16_t*>(destination.data()),
                                               n);
    }
  }

  void copy(DeviceBuffer& destination, const DeviceBuffer& source) override {
    activate(device_);
    if (destination.bytes() < source.bytes())
      throw UsageError(fmt::format("copy of {} bytes into a buffer of {} bytes", source.bytes(), destination.bytes()));
    check(cudaMemcpyAsync(destination.data(), source.data(), source.bytes(), cudaMemcpyDeviceToDevice, stream_.get()),
          "cudaMemcpyAsync (device to device)");
  }

  std::unique_ptr<PreparedOp> make_host_transfer(TransferDirection direction, std::size_t bytes,
                                                 std::string*) override {
    activate(device_);
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
    return std::make_unique<PinnedTransfer>(device_, stream_.get(), direction, bytes, std::move(pinned),
                                            device_malloc(bytes, "a host transfer buffer"));
  }

  nlohmann::json clocks() const override {
    const std::optional<NvmlReadings> now = nvml_readings(pci_bus_id_);
    if (!now) return {{"source", "unavailable"}};
    return {{"source", "nvml"},
            {"sm_clock_mhz", or_null(now->sm_clock_mhz)},
            {"memory_clock_mhz", or_null(now->memory_clock_mhz)},
            {"temperature_c", or_null(now->temperature_c)},
            {"power_w", or_null(now->power_w)},
            {"clock_event_reasons", or_null(now->clock_event_reasons)}};
  }

  nlohmann::json environment() const override {
    return {{"cuda", cuda_versions()},
            {"cuda_architectures_built", MPBENCH_CUDA_ARCHITECTURES},
            {"cublaslt_workspace_bytes", workspace_bytes_}};
  }

 private:
  // The runtime's current device is per host thread: every entry point selects this backend's.
  static int activate(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    return device;
  }

  static StreamOwner create_stream() {
    cudaStream_t stream = nullptr;
    // Non-blocking: no implicit synchronization with work on the legacy default stream.
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return StreamOwner(stream);
  }

  static LtHandleOwner create_lt_handle() {
    cublasLtHandle_t handle = nullptr;
    check(cublasLtCreate(&handle), "cublasLtCreate");
    return LtHandleOwner(handle);
  }

  DeviceMemory device_malloc(std::size_t bytes, std::string_view what) const {
    void* memory = nullptr;
    const cudaError_t status = cudaMalloc(&memory, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky, but it would be reported by the next launch check
      std::size_t free_bytes = 0, total_bytes = 0;
      const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
      if (!known) cudaGetLastError();
      throw OutOfMemoryError(
          fmt::format("out of GPU memory: {} need {} ({} bytes), GPU {} ({}) has {} free of {}; use a smaller size", what,
                      gibibytes(bytes), bytes, device_, info_.name, known ? gibibytes(free_bytes) : "unknown",
                      known ? gibibytes(total_bytes) : "unknown"),
          bytes);
    }
    check(status, fmt::format("cudaMalloc of {} bytes", bytes));
    return DeviceMemory(memory);
  }

  // Copied on the GEMMs' stream and waited for: that stream does not wait for the legacy one.
  DeviceMemory create_unit_scale() const {
    DeviceMemory scale = device_malloc(sizeof(float), "the fp8 unit scale");
    const float one = 1.0f;
    check(cudaMemcpyAsync(scale.get(), &one, sizeof one, cudaMemcpyHostToDevice, stream_.get()),
          "cudaMemcpyAsync (fp8 unit scale)");
    check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (fp8 unit scale)");
    return scale;
  }


  int device_;
  DeviceInfo info_;
  std::string pci_bus_id_;
  StreamOwner stream_;
  kernels::Launcher launcher_;
  LtHandleOwner lt_handle_;
  std::size_t workspace_bytes_;
  DeviceMemory workspace_;
  DeviceMemory unit_scale_;
  std::size_t flush_bytes_;
  DeviceMemory flush_buffer_;
  CapabilityTable capabilities_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(int device_index) {
  if (const std::optional<std::string> reason = unavailable_reason())
    throw UsageError(fmt::format("cannot use CUDA GPU {}: {}; run where an NVIDIA GPU and driver are present, or use "
                                 "--device cpu", device_index, *reason));
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device_index < 0 || device_index >= count)
    throw UsageError(fmt::format("GPU index {} is out of range: {} CUDA GPU(s) found, use 0 to {}", device_index,
                                 count, count - 1));
  check(cudaSetDevice(device_index), "cudaSetDevice");
  if (const std::optional<std::string> problem = kernels::kernel_image_problem()) {
    const DeviceInfo info = query_device(device_index);
    throw UsageError(fmt::format("{} (compute capability {}.{}) cannot run this build's kernels, built for CUDA "
                                 "architectures {}: {}; rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{}",
                                 info.name, info.compute_capability_major, info.compute_capability_minor,
                                 MPBENCH_CUDA_ARCHITECTURES, *problem, info.compute_capability_major,
                                 info.compute_capability_minor));
  }
  return std::make_unique<CudaBackend>(device_index);
}

}  // namespace mpbench::cuda
