#include "backends/cpu/cpu_backend.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <map>
#include <stdexcept>
#include <utility>

#include "backends/cpu/isa.hpp"
#include "backends/cpu/vector_loops.hpp"
#include "backends/reference/reference_backend.hpp"
#include "core/error.hpp"

namespace mpbench::cpu {

namespace {

dnnl::memory::data_type onednn_type(DType t) {
  switch (t) {
    case DType::f32: return dnnl::memory::data_type::f32;
    case DType::f16: return dnnl::memory::data_type::f16;
    case DType::bf16: return dnnl::memory::data_type::bf16;
    default: return dnnl::memory::data_type::undef;
  }
}

// C[b] = A[b] B[b]^T as a oneDNN matmul: B[n][k] row-major is the logical [k][n] matrix in "acb".
dnnl::matmul::primitive_desc matmul_descriptor(const dnnl::engine& engine, GemmPrecision precision,
                                               const GemmShape& s) {
  using tag = dnnl::memory::format_tag;
  const auto& info = gemm_precision_info(precision);
  const dnnl::memory::desc a({s.batch, s.m, s.k}, onednn_type(info.input), tag::abc);
  const dnnl::memory::desc b({s.batch, s.k, s.n}, onednn_type(info.input), tag::acb);
  const dnnl::memory::desc c({s.batch, s.m, s.n}, onednn_type(info.output), tag::abc);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), engine);
}

class OneDnnMatmul : public PreparedOp {
 public:
  OneDnnMatmul(const dnnl::engine& engine, dnnl::stream& stream, GemmPrecision precision,
               const GemmShape& shape, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c)
      : descriptor_(matmul_descriptor(engine, precision, shape)),
        primitive_(descriptor_),
        stream_(stream),
        arguments_{{DNNL_ARG_SRC, dnnl::memory(descriptor_.src_desc(), engine, a.data())},
                   {DNNL_ARG_WEIGHTS, dnnl::memory(descriptor_.weights_desc(), engine, b.data())},
                   {DNNL_ARG_DST, dnnl::memory(descriptor_.dst_desc(), engine, c.data())}} {}

  void run() override {
    primitive_.execute(stream_, arguments_);
    stream_.wait();
  }
  nlohmann::json details() const override {
    return {{"implementation", descriptor_.impl_info_str()}, {"library", "oneDNN matmul"}};
  }

 private:
  dnnl::matmul::primitive_desc descriptor_;
  dnnl::matmul primitive_;
  dnnl::stream& stream_;
  std::unordered_map<int, dnnl::memory> arguments_;
};

// fp16/bf16 through the reference's scalar conversions would measure conversion, not memory, and
// fp32 triad a call to fmaf per element; where the CPU has AVX2, FMA and F16C, vector_loops.hpp
// computes the same bits at memory speed.
#if MPBENCH_HAVE_AVX2_LOOPS
bool cpu_has_vector_loops() {
  static const bool kHas =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return kHas;
}

avx2::StreamOp vector_op(StreamKernel kernel) {
  switch (kernel) {
    case StreamKernel::copy: return avx2::StreamOp::copy;
    case StreamKernel::scale: return avx2::StreamOp::scale;
    case StreamKernel::add: return avx2::StreamOp::add;
    case StreamKernel::triad: return avx2::StreamOp::triad;
    case StreamKernel::dot: break;
  }
  throw std::logic_error("dot is not an element-wise stream kernel");
}

// False when the vector loops do not apply and the reference's loops should run.
bool vector_stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c, float scalar) {
  const DType type = a.dtype();
  if (!cpu_has_vector_loops() || (type != DType::f32 && type != DType::f16 && type != DType::bf16)) return false;
  check_stream_arguments(kernel, a, b, c);
  // Copy and scale ignore b, which may then be shorter than a: pass a in its place.
  const void* second = stream_kernel_reads_b(kernel) ? b.data() : a.data();
  if (kernel == StreamKernel::dot) {
    const std::size_t n = a.count();
    double sum = 0;
    if (type == DType::f32) sum = avx2::dot_f32(static_cast<const float*>(a.data()), static_cast<const float*>(second), n);
    else {
      const auto* x = static_cast<const std::uint16_t*>(a.data());
      const auto* y = static_cast<const std::uint16_t*>(second);
      sum = type == DType::f16 ? avx2::dot_f16(x, y, n) : avx2::dot_bf16(x, y, n);
    }
    *static_cast<float*>(c.data()) = static_cast<float>(sum);
    return true;
  }
  if (type == DType::f32) {
    avx2::stream_f32(vector_op(kernel), static_cast<const float*>(a.data()), static_cast<const float*>(second),
                     static_cast<float*>(c.data()), scalar, a.count());
    return true;
  }
  const auto loop = type == DType::f16 ? avx2::stream_f16 : avx2::stream_bf16;
  loop(vector_op(kernel), static_cast<const std::uint16_t*>(a.data()), static_cast<const std::uint16_t*>(second),
       static_cast<std::uint16_t*>(c.data()), scalar, a.count());
  return true;
}

template <typename In, typename Out>
void run_cast(void (*loop)(const In*, Out*, std::size_t), CastKind kind, const CastArgs& args) {
  check_cast_arguments(kind, args);
  loop(static_cast<const In*>(args.source->data()), static_cast<Out*>(args.destination->data()), args.source->count());
}

// False when the vector loops do not apply and the reference's loops should run.
bool vector_cast(CastKind kind, const CastArgs& args) {
  if (!cpu_has_vector_loops()) return false;
  switch (kind) {
    case CastKind::f32_to_f16: run_cast(avx2::f32_to_f16, kind, args); return true;
    case CastKind::f32_to_bf16: run_cast(avx2::f32_to_bf16, kind, args); return true;
    case CastKind::f16_to_f32: run_cast(avx2::f16_to_f32, kind, args); return true;
    case CastKind::bf16_to_f32: run_cast(avx2::bf16_to_f32, kind, args); return true;
    case CastKind::f32_to_e4m3_scaled:
    case CastKind::f32_to_bf16_stochastic: return false;
  }
  return false;
}
#else
bool cpu_has_vector_loops() { return false; }
bool vector_stream(StreamKernel, const DeviceBuffer&, const DeviceBuffer&, DeviceBuffer&, float) { return false; }
bool vector_cast(CastKind, const CastArgs&) { return false; }
#endif

class CpuBackend : public reference::ReferenceBackend {
 public:
  CpuBackend()
      : ReferenceBackend(true), isa_note_(apply_default_isa_limit()), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  const CapabilityTable& capabilities() const override {
    if (!capabilities_) {
      std::vector<GemmCapability> rows;
      for (const GemmPrecisionInfo& info : gemm_precisions()) {
        const auto why = probe_gemm_support(info.precision);
        rows.push_back({info.precision, why ? GemmPath::unsupported : GemmPath::native, why.value_or("oneDNN matmul")});
      }
      capabilities_ = CapabilityTable(std::move(rows));
    }
    return *capabilities_;
  }

  std::unique_ptr<PreparedOp> make_gemm(GemmPrecision precision, const GemmShape& shape, const DeviceBuffer& a,
                                        const DeviceBuffer& b, DeviceBuffer& c) override {
    if (auto why = gemm_unsupported(precision)) throw UsageError(*why);
    check_gemm_arguments(precision, shape, a, b, c);
    try {
      return std::make_unique<OneDnnMatmul>(engine_, stream_, precision, shape, a, b, c);
    } catch (const dnnl::error& e) {
      throw BackendError(fmt::format("oneDNN matmul {}: {}", gemm_precision_info(precision).name, e.what()));
    }
  }

  void stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c,
              float scalar) override {
    if (!vector_stream(kernel, a, b, c, scalar)) ReferenceBackend::stream(kernel, a, b, c, scalar);
  }

  void cast(CastKind kind, const CastArgs& args) override {
    if (!vector_cast(kind, args)) ReferenceBackend::cast(kind, args);
  }

  nlohmann::json environment() const override {
    const dnnl_version_t* v = dnnl_version();
    return {{"onednn",
             {{"version", fmt::format("{}.{}.{}", v->major, v->minor, v->patch)},
              {"hash", v->hash},
              {"cpu_runtime", v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other"},
              {"effective_isa", effective_isa_name()},
              {"max_isa_env", std::getenv("DNNL_MAX_CPU_ISA") ? std::getenv("DNNL_MAX_CPU_ISA") : ""},
              {"default_isa_limit", isa_note_ ? nlohmann::json(*isa_note_) : nlohmann::json(nullptr)}}},
            {"element_loops", cpu_has_vector_loops() ? "avx2+f16c" : "scalar"},
            {"threads", omp_get_max_threads()}};
  }

 private:
  std::optional<std::string> probe_gemm_support(GemmPrecision precision) const {
    const auto& info = gemm_precision_info(precision);
    if (precision == GemmPrecision::tf32) return "TF32 is a GPU Tensor Core format; CPUs have no TF32 matmul";
    if (precision == GemmPrecision::fp16_acc16) return "oneDNN has no fp16-accumulating matmul on CPUs";
    if (precision == GemmPrecision::fp8_e4m3) return "oneDNN 2.x has no fp8 matmul on CPUs";
    try {
      matmul_descriptor(engine_, precision, {64, 64, 64, 1});
      return std::nullopt;
    } catch (const dnnl::error&) {
      return fmt::format("{} matmul not supported by oneDNN on this CPU (effective ISA {})", info.name,
                         effective_isa_name());
    }
  }

  std::optional<std::string> isa_note_;  // first, so the limit precedes the engine
  mutable dnnl::engine engine_;
  mutable std::optional<CapabilityTable> capabilities_;
  dnnl::stream stream_;
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace mpbench::cpu
