#pragma once
// The one interface suites and models are written against. A backend owns a device (a GPU, or
// the host's cores), its memory, its timers and its operations; it knows nothing of suites.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "core/capability.hpp"
#include "core/dtype.hpp"
#include "core/gemm.hpp"

namespace mpbench {

class Backend;

struct DeviceInfo {
  std::string backend;  // "cpu", "cuda" or "reference"
  std::string name;     // GPU product name or CPU model
  int index = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;          // SMs, or logical CPU cores
  std::uint64_t memory_bytes = 0;   // device memory, or host RAM
  std::uint64_t l2_bytes = 0;       // GPU L2, or the CPU's last-level cache (as reported)
  // The cache the run's threads can fill (GPU: the L2; CPU: every level, see
  // backends/reference/host_caches.hpp): what a flush overwrites twice over and what the bandwidth
  // sweep is centred on. The basis says how it was counted.
  std::uint64_t usable_cache_bytes = 0;
  std::string usable_cache_basis;
  double sm_clock_mhz = 0;          // maximum clock the driver reports
  double memory_clock_mhz = 0;
  int memory_bus_bits = 0;
  nlohmann::json to_json() const;
};

// Memory on the backend's device, released when the buffer goes out of scope.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend* owner, void* data, DType dtype, std::size_t count)
      : owner_(owner), data_(data), dtype_(dtype), count_(count) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return count_ * dtype_size(dtype_); }

 private:
  Backend* owner_ = nullptr;
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  std::size_t count_ = 0;
};

// Device time between start() and stop(): CUDA events on a GPU, a steady clock on the host.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual void start() = 0;
  virtual double stop_seconds() = 0;  // waits for the work between start and stop
};

// An operation prepared once (plan, algorithm choice, descriptors) and launched many times.
class PreparedOp {
 public:
  virtual ~PreparedOp() = default;
  virtual void run() = 0;
  // What the library chose (cuBLASLt algorithm and tile, oneDNN implementation); may be empty.
  virtual nlohmann::json details() const { return nlohmann::json::object(); }
};

// BabelStream-style kernels over inputs a, b and output c (all of one dtype, math in fp32):
//   copy c = a; scale c = s*a; add c = a + b; triad c = fma(s, b, a); dot c[0] = sum a*b (c is fp32).
enum class StreamKernel { copy, scale, add, triad, dot };
std::string_view stream_kernel_name(StreamKernel k);
int stream_kernel_arrays(StreamKernel k);  // arrays of n elements read + written (STREAM counting)
bool stream_kernel_reads_b(StreamKernel k);  // add, triad and dot; copy and scale read only a

enum class CastKind {
  f32_to_f16,
  f32_to_bf16,
  f16_to_f32,
  bf16_to_f32,
  f32_to_e4m3_scaled,     // amax pass, then e4m3 = saturate(x * scale); writes amax too
  bf16_to_e4m3_scaled,    // current scaling: amax pass, scale = 448 / amax, e4m3 = saturate(x * scale);
                          // writes amax and the scale it chose
  f32_to_bf16_stochastic  // bf16 with stochastic rounding from a counter-based random word
};
std::string_view cast_kind_name(CastKind k);
DType cast_source_type(CastKind k);
DType cast_destination_type(CastKind k);

struct CastArgs {
  const DeviceBuffer* source = nullptr;
  DeviceBuffer* destination = nullptr;
  const DeviceBuffer* scale = nullptr;  // one fp32, f32_to_e4m3_scaled only
  DeviceBuffer* amax = nullptr;         // one fp32 written by the amax pass, f32_to_e4m3_scaled only
  std::uint64_t seed = 0;               // f32_to_bf16_stochastic only
  // bf16_to_e4m3_scaled only: one fp32 written with the scale it chose from the amax (the
  // dequantizing GEMM needs it), amp/fp8_scaling.hpp's fp8_scale_from_amax(amax, 448, 0, 1).
  DeviceBuffer* chosen_scale = nullptr;
};

// bf16_to_e4m3_transpose_amax, the fused cast-transpose-amax of fp8 training (Transformer Engine's
// cast_transpose): one pass over a row-major bf16 matrix source [rows x cols] with a given scale
// writes codes = e4m3(source * scale) (rows x cols, saturating to +-448, round to nearest even),
// transposed = the same codes as the cols x rows transpose, and amax = max |source| (NaN if any
// element is NaN: amp/fp8_scaling.hpp's fold_amax_bits). Math in backends/cast_transpose.hpp.
struct CastTransposeArgs {
  const DeviceBuffer* source = nullptr;  // bf16, rows * cols elements
  std::size_t rows = 0, cols = 0;
  const DeviceBuffer* scale = nullptr;   // one fp32, read
  DeviceBuffer* codes = nullptr;         // e4m3, rows * cols
  DeviceBuffer* transposed = nullptr;    // e4m3, cols * rows
  DeviceBuffer* amax = nullptr;          // one fp32, written
};
std::string_view cast_transpose_name();  // "bf16_to_e4m3_transpose_amax"

// The argument rules every backend enforces, so all refuse the same calls (UsageError):
// gemm: see below. stream: a, and b where the kernel reads it, of one dtype and at least a's size; c like a, or one
// fp32 for dot. cast: the kind's source and destination types, destination at least the source's
// size; one-element fp32 scale and amax for f32_to_e4m3_scaled; for bf16_to_e4m3_scaled one-element fp32
// amax and chosen_scale, two buffers, and no input scale (it chooses its own).
// gemm: positive dimensions, the precision's input and output types, buffers of the shape's size.
void check_gemm_arguments(GemmPrecision precision, const GemmShape& shape, const DeviceBuffer& a,
                          const DeviceBuffer& b, const DeviceBuffer& c);
void check_stream_arguments(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& c);
void check_cast_arguments(CastKind kind, const CastArgs& args);
// cast_transpose_amax: a bf16 source and two e4m3 outputs of at least rows * cols elements, three
// distinct buffers; one-element fp32 scale and amax.
void check_cast_transpose_arguments(const CastTransposeArgs& args);

enum class TransferDirection { host_to_device, device_to_host };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceInfo& device() const = 0;

  // Throws OutOfMemoryError when the device cannot hold `count` elements.
  virtual DeviceBuffer allocate(DType dtype, std::size_t count) = 0;
  virtual void release(void* data) noexcept = 0;
  // Element i becomes uniform_at(seed, i, lo, hi) rounded to the buffer's dtype (core/random.hpp),
  // the same values on every backend.
  virtual void fill_uniform(DeviceBuffer& buffer, std::uint64_t seed, float lo, float hi) = 0;
  virtual void upload(DeviceBuffer& destination, const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, const DeviceBuffer& source, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Evicts what earlier work left in the cache (GPU L2, CPU last-level cache).
  virtual void flush_cache() = 0;
  virtual std::unique_ptr<DeviceTimer> make_timer() = 0;

  // The device's one capability table: per GEMM precision native, converted or unsupported.
  virtual const CapabilityTable& capabilities() const = 0;
  // nullopt when the precision runs here; otherwise the table's reason, e.g. "fp8 GEMMs need
  // compute capability 8.9+".
  std::optional<std::string> gemm_unsupported(GemmPrecision precision) const {
    return capabilities().unsupported(precision);
  }
  virtual std::unique_ptr<PreparedOp> make_gemm(GemmPrecision precision, const GemmShape& shape,
                                                const DeviceBuffer& a, const DeviceBuffer& b,
                                                DeviceBuffer& c) = 0;

  virtual void stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b,
                      DeviceBuffer& c, float scalar) = 0;
  virtual std::optional<std::string> cast_unsupported(CastKind kind) const = 0;
  virtual void cast(CastKind kind, const CastArgs& args) = 0;
  // The fused cast-transpose-amax (CastTransposeArgs); every backend runs it.
  virtual void cast_transpose_amax(const CastTransposeArgs& args) = 0;
  // The library's own device-to-device copy (cudaMemcpy, memcpy): the bandwidth ceiling.
  virtual void copy(DeviceBuffer& destination, const DeviceBuffer& source) = 0;
  // A transfer of `bytes` between pinned host memory and the device; nullptr and a reason
  // in `why_not` when the backend has no such transfers (the CPU).
  virtual std::unique_ptr<PreparedOp> make_host_transfer(TransferDirection direction,
                                                         std::size_t bytes, std::string* why_not) = 0;

  // Clocks now (NVML, cpufreq), recorded before and after each measurement.
  virtual nlohmann::json clocks() const = 0;
  // Library versions and build facts this backend contributes to the result's environment.
  virtual nlohmann::json environment() const = 0;
};

}  // namespace mpbench
