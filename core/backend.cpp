#include "core/backend.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "core/error.hpp"

namespace mpbench {

nlohmann::json DeviceInfo::to_json() const {
  return {{"backend", backend},
          {"name", name},
          {"index", index},
          {"compute_capability", std::to_string(compute_capability_major) + "." +
                                     std::to_string(compute_capability_minor)},
          {"multiprocessors", multiprocessors},
          {"memory_bytes", memory_bytes},
          {"l2_bytes", l2_bytes},
          {"usable_cache_bytes", usable_cache_bytes},
          {"usable_cache_basis", usable_cache_basis},
          {"sm_clock_mhz", sm_clock_mhz},
          {"memory_clock_mhz", memory_clock_mhz},
          {"memory_bus_bits", memory_bus_bits}};
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (owner_ && data_) owner_->release(data_);
    owner_ = std::exchange(other.owner_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    dtype_ = other.dtype_;
    count_ = std::exchange(other.count_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (owner_ && data_) owner_->release(data_);
}

std::string_view stream_kernel_name(StreamKernel k) {
  switch (k) {
    case StreamKernel::copy: return "copy";
    case StreamKernel::scale: return "scale";
    case StreamKernel::add: return "add";
    case StreamKernel::triad: return "triad";
    case StreamKernel::dot: return "dot";
  }
  return "unknown";
}

int stream_kernel_arrays(StreamKernel k) {
  switch (k) {
    case StreamKernel::copy:
    case StreamKernel::scale:
    case StreamKernel::dot: return 2;
    case StreamKernel::add:
    case StreamKernel::triad: return 3;
  }
  return 0;
}

bool stream_kernel_reads_b(StreamKernel k) {
  return k == StreamKernel::add || k == StreamKernel::triad || k == StreamKernel::dot;
}

std::string_view cast_kind_name(CastKind k) {
  switch (k) {
    case CastKind::f32_to_f16: return "f32_to_f16";
    case CastKind::f32_to_bf16: return "f32_to_bf16";
    case CastKind::f16_to_f32: return "f16_to_f32";
    case CastKind::bf16_to_f32: return "bf16_to_f32";
    case CastKind::f32_to_e4m3_scaled: return "f32_to_e4m3_scaled";
    case CastKind::bf16_to_e4m3_scaled: return "bf16_to_e4m3_scaled";
    case CastKind::f32_to_bf16_stochastic: return "f32_to_bf16_stochastic";
  }
  return "unknown";
}

DType cast_source_type(CastKind k) {
  switch (k) {
    case CastKind::f16_to_f32: return DType::f16;
    case CastKind::bf16_to_f32:
    case CastKind::bf16_to_e4m3_scaled: return DType::bf16;
    default: return DType::f32;
  }
}

DType cast_destination_type(CastKind k) {
  switch (k) {
    case CastKind::f32_to_f16: return DType::f16;
    case CastKind::f32_to_bf16:
    case CastKind::f32_to_bf16_stochastic: return DType::bf16;
    case CastKind::f16_to_f32:
    case CastKind::bf16_to_f32: return DType::f32;
    case CastKind::f32_to_e4m3_scaled:
    case CastKind::bf16_to_e4m3_scaled: return DType::e4m3;
  }
  throw std::logic_error("cast kind without a destination type");
}

void check_gemm_arguments(GemmPrecision precision, const GemmShape& s, const DeviceBuffer& a, const DeviceBuffer& b,
                          const DeviceBuffer& c) {
  const GemmPrecisionInfo& info = gemm_precision_info(precision);
  const auto shape = fmt::format("m={} n={} k={} batch={}", s.m, s.n, s.k, s.batch);
  if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 1)
    throw UsageError(fmt::format("GEMM dimensions must be positive, got {}", shape));
  if (a.dtype() != info.input || b.dtype() != info.input || c.dtype() != info.output)
    throw UsageError(fmt::format("{} GEMM takes {} inputs and a {} output", info.name, dtype_name(info.input),
                                 dtype_name(info.output)));
  if (a.count() < s.a_elements() || b.count() < s.b_elements() || c.count() < s.c_elements())
    throw UsageError(fmt::format("GEMM buffers are smaller than {} needs", shape));
}

void check_stream_arguments(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& c) {
  const std::size_t n = a.count();
  const std::string_view name = stream_kernel_name(kernel);
  if (stream_kernel_reads_b(kernel) && (b.dtype() != a.dtype() || b.count() < n))
    throw UsageError(fmt::format("stream {}: b must hold {} elements of {}, like a", name, n, dtype_name(a.dtype())));
  if (kernel == StreamKernel::dot) {
    if (c.dtype() != DType::f32 || c.count() < 1)
      throw UsageError("stream dot writes its sum to c[0], which must be an fp32 buffer");
    return;
  }
  if (c.dtype() != a.dtype() || c.count() < n)
    throw UsageError(fmt::format("stream {}: c must hold {} elements of {}, like a", name, n, dtype_name(a.dtype())));
}

void check_cast_arguments(CastKind kind, const CastArgs& args) {
  const std::string_view name = cast_kind_name(kind);
  if (!args.source || !args.destination) throw UsageError(fmt::format("{} needs a source and a destination", name));
  if (args.source->dtype() != cast_source_type(kind) || args.destination->dtype() != cast_destination_type(kind) ||
      args.destination->count() < args.source->count())
    throw UsageError(fmt::format("{} needs a {} source and a {} destination of its size", name,
                                 dtype_name(cast_source_type(kind)), dtype_name(cast_destination_type(kind))));
  const auto is_scalar = [](const DeviceBuffer* buffer) {
    return buffer && buffer->dtype() == DType::f32 && buffer->count() >= 1;
  };
  if (kind == CastKind::f32_to_e4m3_scaled && (!is_scalar(args.scale) || !is_scalar(args.amax)))
    throw UsageError(fmt::format("{} needs one-element fp32 scale and amax buffers", name));
  if (kind != CastKind::bf16_to_e4m3_scaled) return;
  if (args.scale) throw UsageError(fmt::format("{} chooses its scale from the amax: pass no input scale", name));
  // Two buffers: a GPU writes the scale while other blocks may still read the amax.
  if (!is_scalar(args.amax) || !is_scalar(args.chosen_scale) || args.amax->data() == args.chosen_scale->data())
    throw UsageError(fmt::format("{} needs two one-element fp32 buffers, amax and chosen_scale", name));
}

std::string_view cast_transpose_name() { return "bf16_to_e4m3_transpose_amax"; }

void check_cast_transpose_arguments(const CastTransposeArgs& args) {
  const std::string_view name = cast_transpose_name();
  if (!args.source || !args.codes || !args.transposed || !args.scale || !args.amax)
    throw UsageError(fmt::format("{} needs a source, codes, transposed, scale and amax buffers", name));
  const std::size_t n = args.rows * args.cols;
  if (args.cols != 0 && n / args.cols != args.rows)
    throw UsageError(fmt::format("{}: {} x {} elements overflow", name, args.rows, args.cols));
  if (args.source->dtype() != DType::bf16 || args.source->count() < n || args.codes->dtype() != DType::e4m3 ||
      args.codes->count() < n || args.transposed->dtype() != DType::e4m3 || args.transposed->count() < n)
    throw UsageError(fmt::format("{} needs a bf16 source and two e4m3 outputs of at least {} x {} elements", name,
                                 args.rows, args.cols));
  if (args.codes->data() == args.transposed->data() && n > 0)
    throw UsageError(fmt::format("{} writes codes and transposed codes to two buffers, not one", name));
  const auto is_scalar = [](const DeviceBuffer* buffer) { return buffer->dtype() == DType::f32 && buffer->count() >= 1; };
  if (!is_scalar(args.scale) || !is_scalar(args.amax) || args.scale->data() == args.amax->data())
    throw UsageError(fmt::format("{} needs two one-element fp32 buffers, scale and amax", name));
}

}  // namespace mpbench
