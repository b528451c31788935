#include "backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <stdexcept>

#include "backends/cpu/conversions.hpp"
#include "backends/cpu/isa.hpp"
#include "backends/cpu/vector_loops.hpp"
#include "backends/cast_transpose.hpp"
#include "backends/elementwise.hpp"
#include "backends/reference/reference_backend.hpp"
#include "core/error.hpp"

namespace mpbench::cpu {

namespace {

// C = A B^T in the backend's buffers through the device's one matmul.
class CpuGemm final : public PreparedOp {
 public:
  CpuGemm(CpuDevice& device, const MatmulProblem& problem, const DeviceBuffer& a, const DeviceBuffer& b,
          DeviceBuffer& c)
      : matmul_(device, problem), a_(a.data()), b_(b.data()), c_(c.data()) {}
  void run() override { matmul_.run(a_, b_, nullptr, c_); }
  nlohmann::json details() const override { return matmul_.details(); }

 private:
  CpuMatmul matmul_;  // its own, not the device's cache: a case's conversion buffers go with the case
  const void* a_;
  const void* b_;
  void* c_;
};

// fp16/bf16 through the reference's scalar conversions would measure conversion, not memory, and
// fp32 triad a call to fmaf per element, the fp8 cast two passes of per-element branches and the
// stochastic one a 64-bit hash per element; where the CPU has AVX2, FMA and F16C, vector_loops.hpp
// computes the same bits at memory speed.
#if MPBENCH_HAVE_AVX2_LOOPS

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

// Current scaling in two passes over the bf16 source: its amax, then the codes with the scale
// chosen from it (the scale must be known before the first code).
bool vector_current_e4m3_cast(CastKind kind, const CastArgs& args) {
  check_cast_arguments(kind, args);
  const auto* source = static_cast<const std::uint16_t*>(args.source->data());
  const std::size_t n = args.source->count();
  const float amax = avx2::bf16_amax(source, n);
  const float scale = elem::e4m3_current_scale(amax);
  *static_cast<float*>(args.amax->data()) = amax;
  *static_cast<float*>(args.chosen_scale->data()) = scale;
  avx2::bf16_to_e4m3_scaled(source, static_cast<std::uint8_t*>(args.destination->data()), scale, n);
  return true;
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

using StochasticLoop = void (*)(const float*, std::uint16_t*, std::uint64_t, std::size_t);

void run_cast(StochasticLoop loop, CastKind kind, const CastArgs& args) {
  check_cast_arguments(kind, args);
  loop(static_cast<const float*>(args.source->data()), static_cast<std::uint16_t*>(args.destination->data()),
       args.seed, args.source->count());
}

// The stochastic cast's hash multiplies 64-bit words: AVX512DQ does that in one instruction where
// AVX2 needs three partial products, so the cast runs at memory speed only with AVX-512. Where the
// CPU has it and --cpu-isa (DNNL_MAX_CPU_ISA) does not leave it out, as oneDNN reads that limit.
StochasticLoop stochastic_loop() {
  static const bool kAvx512 = effective_isa_covers("avx512_core");
  return kAvx512 ? avx512::f32_to_bf16_stochastic : avx2::f32_to_bf16_stochastic;
}

// The amax and the scaled codes in one pass. The reference writes the amax before it reads the
// scale, so where the two are one buffer only its order gives its bits.
bool vector_e4m3_cast(CastKind kind, const CastArgs& args) {
  check_cast_arguments(kind, args);
  if (args.scale->data() == args.amax->data()) return false;
  const float scale = *static_cast<const float*>(args.scale->data());
  *static_cast<float*>(args.amax->data()) =
      avx2::f32_to_e4m3_scaled(static_cast<const float*>(args.source->data()),
                               static_cast<std::uint8_t*>(args.destination->data()), scale, args.source->count());
  return true;
}

// False when the vector loops do not apply and the reference's loops should run.
bool vector_cast(CastKind kind, const CastArgs& args) {
  if (!cpu_has_vector_loops()) return false;
  switch (kind) {
    case CastKind::f32_to_f16: run_cast(avx2::f32_to_f16, kind, args); return true;
    case CastKind::f32_to_bf16: run_cast(avx2::f32_to_bf16, kind, args); return true;
    case CastKind::f16_to_f32: run_cast(avx2::f16_to_f32, kind, args); return true;
    case CastKind::bf16_to_f32: run_cast(avx2::bf16_to_f32, kind, args); return true;
    case CastKind::f32_to_e4m3_scaled: return vector_e4m3_cast(kind, args);
    case CastKind::bf16_to_e4m3_scaled: return vector_current_e4m3_cast(kind, args);
    case CastKind::f32_to_bf16_stochastic:
      run_cast(stochastic_loop(), kind, args);
      return true;
  }
  return false;
}
#else
bool vector_stream(StreamKernel, const DeviceBuffer&, const DeviceBuffer&, DeviceBuffer&, float) { return false; }
bool vector_cast(CastKind, const CastArgs&) { return false; }
#endif

}  // namespace

CpuBackend::CpuBackend(CpuOptions options) : ReferenceBackend(true), device_(std::make_shared<CpuDevice>(options)) {}

// C[b] = A[b] B[b]^T: B [n,k] row-major is the transposed storage of op(B) [k,n].
std::unique_ptr<PreparedOp> CpuBackend::make_gemm(GemmPrecision precision, const GemmShape& shape,
                                                  const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) {
  if (auto why = gemm_unsupported(precision)) throw UsageError(*why);
  check_gemm_arguments(precision, shape, a, b, c);
  const MatmulProblem problem{precision, shape.batch, shape.m, shape.n, shape.k, false, true,
                              gemm_precision_info(precision).output};
  return std::make_unique<CpuGemm>(*device_, problem, a, b, c);
}

void CpuBackend::stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c,
                        float scalar) {
  if (!vector_stream(kernel, a, b, c, scalar)) ReferenceBackend::stream(kernel, a, b, c, scalar);
}

namespace {

// 64 rows (one cache line of each transposed row) by 256 columns (amp's loops over rows long
// enough to pay for their dispatch).
constexpr std::size_t kCastTransposeTileRows = 64, kCastTransposeTileCols = 256;

// One tile of the cast-transpose (elem::cast_transpose_tile's result, bit for bit): each of its rows
// widened to fp32, then amp's vectorized amax and quantization loops over the row (the same codes
// and counts as quantize_fp8_branchless, which the tile function calls per element), then the
// tile's codes transposed from the rows just written.
void cast_transpose_tile_rows(const elem::bf16_bits* x, std::size_t rows, std::size_t cols, std::size_t row0,
                              std::size_t col0, float scale, std::uint8_t* codes, std::uint8_t* transposed,
                              elem::CastTransposeTotals& totals) {
  const std::size_t row_end = std::min(row0 + kCastTransposeTileRows, rows);
  const std::size_t col_end = std::min(col0 + kCastTransposeTileCols, cols), width = col_end - col0;
  float row[kCastTransposeTileCols];
  for (std::size_t r = row0; r < row_end; ++r) {
    const elem::bf16_bits* source = x + r * cols + col0;
#pragma omp simd
    for (std::size_t c = 0; c < width; ++c) row[c] = elem::load(source[c]);
    totals.amax_bits = std::max(totals.amax_bits, amp::amax_bits_serial(row, width));
    totals.saturated += static_cast<std::uint32_t>(
        amp::quantize_fp8_serial(row, width, scale, true, codes + r * cols + col0).saturated);
  }
  for (std::size_t c = col0; c < col_end; ++c)
    for (std::size_t r = row0; r < row_end; ++r) transposed[c * rows + r] = codes[r * cols + c];
}

}  // namespace

// One pass over 64 x 256 tiles: a tile's 64 source rows (32 KiB) and the lines of each output it
// writes stay in cache while it is done, so the transposed writes fill whole lines. The tiles are
// shared among the cores from amp's threading threshold on; the totals merge per thread.
void CpuBackend::cast_transpose_amax(const CastTransposeArgs& args) {
  check_cast_transpose_arguments(args);
  const auto* x = static_cast<const elem::bf16_bits*>(args.source->data());
  auto* codes = static_cast<std::uint8_t*>(args.codes->data());
  auto* transposed = static_cast<std::uint8_t*>(args.transposed->data());
  const float scale = *static_cast<const float*>(args.scale->data());
  const std::size_t rows = args.rows, cols = args.cols;
  const std::size_t row_tiles = (rows + kCastTransposeTileRows - 1) / kCastTransposeTileRows;
  const std::size_t col_tiles = (cols + kCastTransposeTileCols - 1) / kCastTransposeTileCols;
  const auto tiles = static_cast<std::int64_t>(row_tiles * col_tiles);
  elem::CastTransposeTotals totals;
#pragma omp parallel if (rows * cols >= amp::kFp8ParallelElements)
  {
    elem::CastTransposeTotals mine;
#pragma omp for schedule(static)
    for (std::int64_t t = 0; t < tiles; ++t) {
      const auto tile = static_cast<std::size_t>(t);
      cast_transpose_tile_rows(x, rows, cols, tile / col_tiles * kCastTransposeTileRows,
                               tile % col_tiles * kCastTransposeTileCols, scale, codes, transposed, mine);
    }
#pragma omp critical(mpbench_cast_transpose_totals)
    elem::merge(totals, mine);
  }
  *static_cast<float*>(args.amax->data()) = num::bits_to_float(totals.amax_bits);
}

void CpuBackend::cast(CastKind kind, const CastArgs& args) {
  if (!vector_cast(kind, args)) ReferenceBackend::cast(kind, args);
}

std::unique_ptr<Backend> make_backend(CpuOptions options) { return std::make_unique<CpuBackend>(options); }

}  // namespace mpbench::cpu
