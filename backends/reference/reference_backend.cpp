#include "backends/reference/reference_backend.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdlib.h>
#include <cstring>
#include <fstream>
#include <new>
#include <omp.h>

#include "amp/formats.hpp"
#include "backends/cast_transpose.hpp"
#include "backends/elementwise.hpp"
#include "backends/reference/host_caches.hpp"
#include "backends/reference/host_memory.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/random.hpp"

namespace mpbench::reference {

namespace {

std::uint64_t last_level_cache_bytes(const std::vector<host::CacheLevel>& levels) {
  return levels.empty() ? (32ull << 20) : levels.back().bytes;
}

class HostTimer : public DeviceTimer {
 public:
  void start() override { started_ = std::chrono::steady_clock::now(); }
  double stop_seconds() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }

 private:
  std::chrono::steady_clock::time_point started_;
};

float decode(const DeviceBuffer& buffer, std::size_t i) { return element_as_float(buffer, i); }

void encode(DeviceBuffer& buffer, std::size_t i, float value) {
  auto* bytes = static_cast<unsigned char*>(buffer.data());
  switch (buffer.dtype()) {
    case DType::f32: reinterpret_cast<float*>(bytes)[i] = value; break;
    case DType::f16: reinterpret_cast<std::uint16_t*>(bytes)[i] = num::f32_to_f16_bits(value); break;
    case DType::bf16: reinterpret_cast<std::uint16_t*>(bytes)[i] = num::f32_to_bf16_bits(value); break;
    case DType::e4m3: bytes[i] = num::f32_to_e4m3_bits(value, true); break;
    case DType::e5m2: bytes[i] = num::f32_to_e5m2_bits(value, true); break;
  }
}

// C = A B^T with double accumulation; inputs rounded as the precision's hardware would (tf32).
class ReferenceGemm : public PreparedOp {
 public:
  ReferenceGemm(GemmPrecision precision, const GemmShape& shape, const DeviceBuffer& a,
                const DeviceBuffer& b, DeviceBuffer& c)
      : precision_(precision), shape_(shape), a_(a), b_(b), c_(c) {}

  void run() override {
    const auto [m, n, k, batch] = shape_;
    for (std::int64_t p = 0; p < batch; ++p)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (std::int64_t q = 0; q < k; ++q)
            sum += static_cast<double>(input(a_, (p * m + i) * k + q)) * input(b_, (p * n + j) * k + q);
          encode(c_, static_cast<std::size_t>((p * m + i) * n + j), static_cast<float>(sum));
        }
  }
  nlohmann::json details() const override { return {{"implementation", "reference loops, double accumulation"}}; }

 private:
  float input(const DeviceBuffer& buffer, std::int64_t i) const {
    const float v = decode(buffer, static_cast<std::size_t>(i));
    return precision_ == GemmPrecision::tf32 ? num::round_to_tf32(v) : v;
  }

  GemmPrecision precision_;
  GemmShape shape_;
  const DeviceBuffer& a_;
  const DeviceBuffer& b_;
  DeviceBuffer& c_;
};


}  // namespace

float element_as_float(const DeviceBuffer& buffer, std::size_t i) {
  const auto* bytes = static_cast<const unsigned char*>(buffer.data());
  switch (buffer.dtype()) {
    case DType::f32: return reinterpret_cast<const float*>(bytes)[i];
    case DType::f16: return num::f16_bits_to_f32(reinterpret_cast<const std::uint16_t*>(bytes)[i]);
    case DType::bf16: return num::bf16_bits_to_f32(reinterpret_cast<const std::uint16_t*>(bytes)[i]);
    case DType::e4m3: return num::e4m3_bits_to_f32(bytes[i]);
    case DType::e5m2: return num::e5m2_bits_to_f32(bytes[i]);
  }
  return NAN;
}

ReferenceBackend::ReferenceBackend() : ReferenceBackend(false) {
  info_.backend = "reference";
  info_.name = "reference loops on " + info_.name;
}

ReferenceBackend::ReferenceBackend(bool parallel_loops) : parallel_loops_(parallel_loops) {
  const CpuDescription cpu = describe_cpu();
  info_.backend = "cpu";
  info_.name = cpu.model;
  info_.multiprocessors = cpu.logical_cores;
  info_.memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  const auto levels = host::read_cache_levels();
  info_.l2_bytes = last_level_cache_bytes(levels);
  const host::UsableCache usable =
      host::usable_cache(levels, parallel_loops_ ? omp_get_max_threads() : 1, info_.multiprocessors);
  info_.usable_cache_bytes = usable.bytes;
  info_.usable_cache_basis = usable.basis;
}

DeviceBuffer ReferenceBackend::allocate(DType dtype, std::size_t count) {
  const std::size_t bytes = count * dtype_size(dtype);
  if (bytes > info_.memory_bytes)
    throw OutOfMemoryError(fmt::format("{} bytes asked for, the host has {} bytes of memory",
                                       bytes, info_.memory_bytes), bytes);
  void* data = std::aligned_alloc(64, std::max<std::size_t>(64, (bytes + 63) / 64 * 64));
  if (!data) throw OutOfMemoryError(fmt::format("cannot allocate {} bytes of host memory", bytes), bytes);
  return DeviceBuffer(this, data, dtype, count);
}

void ReferenceBackend::release(void* data) noexcept { std::free(data); }

void ReferenceBackend::fill_uniform(DeviceBuffer& buffer, std::uint64_t seed, float lo, float hi) {
  host::for_each_index(buffer.count(), parallel_loops_,
                       [&](std::size_t i) { encode(buffer, i, uniform_at(seed, i, lo, hi)); });
}

void ReferenceBackend::upload(DeviceBuffer& destination, const void* host, std::size_t bytes) {
  if (bytes > destination.bytes()) throw UsageError("upload larger than the buffer");
  std::memcpy(destination.data(), host, bytes);
}

void ReferenceBackend::download(void* host, const DeviceBuffer& source, std::size_t bytes) {
  if (bytes > source.bytes()) throw UsageError("download larger than the buffer");
  std::memcpy(host, source.data(), bytes);
}

// Twice the cache the run's threads can fill, written by those threads (with parallel loops), so
// that each core's private caches are overwritten too.
void ReferenceBackend::flush_cache() {
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  if (!flush_buffer_) {
    flush_bytes_ = (2 * info_.usable_cache_bytes + kChunk - 1) / kChunk * kChunk;
    flush_buffer_ = std::make_unique<unsigned char[]>(flush_bytes_);
  }
  host::for_each_index(flush_bytes_ / kChunk, parallel_loops_, [&](std::size_t chunk) {
    std::memset(flush_buffer_.get() + chunk * kChunk, static_cast<int>(flush_bytes_ & 0x7f), kChunk);
  });
}

std::unique_ptr<DeviceTimer> ReferenceBackend::make_timer() { return std::make_unique<HostTimer>(); }

const CapabilityTable& ReferenceBackend::capabilities() const {
  static const CapabilityTable kTable = CapabilityTable::every_precision(
      GemmPath::converted, "the reference loops convert the operands to double and round the result to the output type");
  return kTable;
}

std::unique_ptr<PreparedOp> ReferenceBackend::make_gemm(GemmPrecision precision, const GemmShape& shape,
                                                        const DeviceBuffer& a, const DeviceBuffer& b,
                                                        DeviceBuffer& c) {
  check_gemm_arguments(precision, shape, a, b, c);
  return std::make_unique<ReferenceGemm>(precision, shape, a, b, c);
}

void ReferenceBackend::stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b,
                              DeviceBuffer& c, float scalar) {
  check_stream_arguments(kernel, a, b, c);
  if (kernel == StreamKernel::dot) {
    double sum = 0;
#pragma omp parallel for reduction(+ : sum) if (parallel_loops_)
    for (std::size_t i = 0; i < a.count(); ++i)
      sum += static_cast<double>(element_as_float(a, i)) * element_as_float(b, i);
    *static_cast<float*>(c.data()) = static_cast<float>(sum);
    return;
  }
  host::with_typed(c, [&](auto* out) {
    using T = std::remove_pointer_t<decltype(out)>;
    const T* x = static_cast<const T*>(a.data());
    // Copy and scale ignore b, which may then be shorter than a: pass a in its place.
    const T* y = static_cast<const T*>(stream_kernel_reads_b(kernel) ? b.data() : a.data());
    // One loop per kernel, so the per-element body has no branch.
    const auto apply = [&](auto f) {
      host::for_each_index(a.count(), parallel_loops_, [&](std::size_t i) { out[i] = f(x[i], y[i]); });
    };
    switch (kernel) {
      case StreamKernel::copy: return apply([](T u, T) { return u; });
      case StreamKernel::scale:
        return apply([scalar](T u, T) { return elem::store<T>(elem::scale(elem::load(u), scalar)); });
      case StreamKernel::add:
        return apply([](T u, T v) { return elem::store<T>(elem::add(elem::load(u), elem::load(v))); });
      case StreamKernel::triad:
        return apply([scalar](T u, T v) { return elem::store<T>(elem::triad(elem::load(u), elem::load(v), scalar)); });
      case StreamKernel::dot: return;
    }
  });
}

// Element by element in row-major order, on one thread: the whole matrix as one tile, each code
// stored at (r, c) and (c, r).
void ReferenceBackend::cast_transpose_amax(const CastTransposeArgs& args) {
  check_cast_transpose_arguments(args);
  elem::CastTransposeTotals totals;
  elem::cast_transpose_tile(static_cast<const elem::bf16_bits*>(args.source->data()), args.rows, args.cols, 0, 0,
                            args.rows, args.cols, *static_cast<const float*>(args.scale->data()),
                            static_cast<std::uint8_t*>(args.codes->data()),
                            static_cast<std::uint8_t*>(args.transposed->data()), totals);
  *static_cast<float*>(args.amax->data()) = num::bits_to_float(totals.amax_bits);
}

void ReferenceBackend::cast(CastKind kind, const CastArgs& args) {
  check_cast_arguments(kind, args);
  const DeviceBuffer& src = *args.source;
  DeviceBuffer& dst = *args.destination;
  const std::size_t n = src.count();
  const float* x = static_cast<const float*>(src.data());
  switch (kind) {
    case CastKind::f32_to_f16:
      return host::map<float, elem::f16_bits>(src, dst, parallel_loops_, elem::store<elem::f16_bits>);
    case CastKind::f32_to_bf16:
      return host::map<float, elem::bf16_bits>(src, dst, parallel_loops_, elem::store<elem::bf16_bits>);
    case CastKind::f16_to_f32:
      return host::map<elem::f16_bits, float>(src, dst, parallel_loops_, [](elem::f16_bits v) { return elem::load(v); });
    case CastKind::bf16_to_f32:
      return host::map<elem::bf16_bits, float>(src, dst, parallel_loops_, [](elem::bf16_bits v) { return elem::load(v); });
    case CastKind::f32_to_e4m3_scaled: {
      // NaNs left out, as the CUDA kernel's fmaxf leaves them out. Not fmax here: glibc's returns
      // NaN for a signalling NaN, and the next fmax then drops the maximum of the elements before.
      float amax = 0;
#pragma omp parallel for reduction(max : amax) if (parallel_loops_)
      for (std::size_t i = 0; i < n; ++i) {
        const float magnitude = std::fabs(x[i]);
        if (magnitude > amax) amax = magnitude;
      }
      *static_cast<float*>(args.amax->data()) = amax;
      const float scale = *static_cast<const float*>(args.scale->data());
      auto* out = static_cast<std::uint8_t*>(dst.data());
      host::for_each_index(n, parallel_loops_, [&](std::size_t i) { out[i] = elem::f32_to_e4m3_scaled(x[i], scale); });
      return;
    }
    case CastKind::bf16_to_e4m3_scaled: {
      // As f32_to_e4m3_scaled's amax (NaNs left out), then the scale from it, then the codes.
      const auto* bits = static_cast<const elem::bf16_bits*>(src.data());
      float amax = 0;
#pragma omp parallel for reduction(max : amax) if (parallel_loops_)
      for (std::size_t i = 0; i < n; ++i) {
        const float magnitude = std::fabs(elem::load(bits[i]));
        if (magnitude > amax) amax = magnitude;
      }
      const float scale = elem::e4m3_current_scale(amax);
      *static_cast<float*>(args.amax->data()) = amax;
      *static_cast<float*>(args.chosen_scale->data()) = scale;
      auto* out = static_cast<std::uint8_t*>(dst.data());
      host::for_each_index(n, parallel_loops_, [&](std::size_t i) { out[i] = elem::bf16_to_e4m3_scaled(bits[i], scale); });
      return;
    }
    case CastKind::f32_to_bf16_stochastic: {
      auto* out = static_cast<std::uint16_t*>(dst.data());
      host::for_each_index(n, parallel_loops_, [&](std::size_t i) {
        out[i] = elem::f32_to_bf16_stochastic_at(x[i], args.seed, i);
      });
      return;
    }
  }
}

void ReferenceBackend::copy(DeviceBuffer& destination, const DeviceBuffer& source) {
  if (destination.bytes() < source.bytes()) throw UsageError("copy into a smaller buffer");
  // memcpy in one slice per thread, so the ceiling uses every core as the kernels do.
  const auto* from = static_cast<const unsigned char*>(source.data());
  auto* to = static_cast<unsigned char*>(destination.data());
  const std::size_t slices = parallel_loops_ ? static_cast<std::size_t>(info_.multiprocessors) : 1;
  const std::size_t slice = (source.bytes() + slices - 1) / slices;
  host::for_each_index(slices, parallel_loops_, [&](std::size_t i) {
    const std::size_t begin = std::min(i * slice, source.bytes());
    std::memcpy(to + begin, from + begin, std::min(slice, source.bytes() - begin));
  });
}

std::unique_ptr<PreparedOp> ReferenceBackend::make_host_transfer(TransferDirection, std::size_t,
                                                                 std::string* why_not) {
  if (why_not) *why_not = "host transfers need a GPU: on the CPU backend memory is already host memory";
  return nullptr;
}

nlohmann::json ReferenceBackend::clocks() const {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double total = 0;
  int cores = 0;
  while (std::getline(in, line))
    if (line.rfind("cpu MHz", 0) == 0) {
      total += std::strtod(line.substr(line.find(':') + 1).c_str(), nullptr);
      ++cores;
    }
  // The load average shows when other processes shared the cores during a measurement.
  double load[1] = {0};
  nlohmann::json readings = {{"load_average_1m", getloadavg(load, 1) == 1 ? nlohmann::json(load[0]) : nlohmann::json()}};
  if (cores == 0) readings["source"] = "unavailable";
  else readings.update({{"source", "/proc/cpuinfo"}, {"cpu_mhz_mean", total / cores}});
  return readings;
}

nlohmann::json ReferenceBackend::environment() const { return {{"reference", "plain loops"}}; }

}  // namespace mpbench::reference
