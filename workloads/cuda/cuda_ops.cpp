#include "workloads/cuda/cuda_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "backends/cuda/capabilities.hpp"
#include "backends/cuda/check.hpp"
#include "backends/cuda/device_query.hpp"
#include "backends/cuda/cublaslt_gemm.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "core/error.hpp"

namespace mpbench::workloads {

using cuda::check;

namespace {

std::string gibibytes(std::size_t bytes) { return fmt::format("{:.2f} GiB", bytes / double(1ull << 30)); }

bool is_half(num::Format format) { return format == num::Format::fp16 || format == num::Format::bf16; }

cudaDataType_t lt_input_type(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::fp16: return CUDA_R_16F;
    case GemmPrecision::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// fp32 is pedantic: no Tensor Cores, no TF32, the baseline of every speedup.
cublasComputeType_t lt_compute_type(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::fp32: return CUBLAS_COMPUTE_32F_PEDANTIC;
    case GemmPrecision::tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    default: return CUBLAS_COMPUTE_32F;
  }
}

const char* compute_type_name(cublasComputeType_t compute) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_PEDANTIC: return "CUBLAS_COMPUTE_32F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    case CUBLAS_COMPUTE_32F: return "CUBLAS_COMPUTE_32F";
    default: return "another compute type";
  }
}

template <typename Handle>
using LtOwner = std::unique_ptr<std::remove_pointer_t<Handle>, cublasStatus_t (*)(Handle)>;

// A column-major rows x cols matrix with leading dimension ld; `batch` of them `stride` elements apart.
LtOwner<cublasLtMatrixLayout_t> create_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                                               std::int64_t ld, int batch, std::int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  check(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  LtOwner<cublasLtMatrixLayout_t> owner{layout, &cublasLtMatrixLayoutDestroy};
  if (batch > 1) {
    const std::int32_t count = batch;
    check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
          "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
          "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return owner;
}

// The alignment, up to 256 bytes, that every matrix of a (batched) operand has: cuBLASLt's
// heuristic assumes 256 unless told, and the weights live at arbitrary offsets of one buffer.
std::uint32_t alignment(const void* p, std::int64_t ld_bytes, int batch, std::int64_t stride_bytes) {
  std::uint64_t bits = reinterpret_cast<std::uintptr_t>(p) | static_cast<std::uint64_t>(ld_bytes) | 256u;
  if (batch > 1) bits |= static_cast<std::uint64_t>(stride_bytes);
  return static_cast<std::uint32_t>(bits & (~bits + 1));
}

// One cuBLASLt problem: everything the descriptors and the heuristic's choice depend on.
struct GemmKey {
  GemmPrecision precision;
  bool transpose_a, transpose_b;
  std::int64_t m, n, k, lda, ldb, ldd;
  int batch;
  std::int64_t stride_a, stride_b, stride_d;
  std::uint32_t align_a, align_b, align_d;
  bool cuda_cores_only;  // the Tensor Core policy keeps this GEMM off Tensor Cores
  auto operator<=>(const GemmKey&) const = default;
};

struct GemmPlan {
  LtOwner<cublasLtMatmulDesc_t> desc{nullptr, &cublasLtMatmulDescDestroy};
  LtOwner<cublasLtMatrixLayout_t> a{nullptr, &cublasLtMatrixLayoutDestroy};
  LtOwner<cublasLtMatrixLayout_t> b{nullptr, &cublasLtMatrixLayoutDestroy};
  LtOwner<cublasLtMatrixLayout_t> d{nullptr, &cublasLtMatrixLayoutDestroy};
  cublasLtMatmulAlgo_t algo{};
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  std::uint64_t numerical_impl_flags = 0;
  std::string name;  // the GEMM that first needed the plan
};

std::string problem_text(const GemmKey& key) {
  return fmt::format("{} GEMM m={} n={} k={} batch={} op(A)={} op(B)={}", gemm_precision_info(key.precision).name,
                     key.m, key.n, key.k, key.batch, key.transpose_a ? "T" : "N", key.transpose_b ? "T" : "N");
}

LtOwner<cublasLtMatmulDesc_t> create_desc(cublasComputeType_t compute, bool transpose_a, bool transpose_b) {
  cublasLtMatmulDesc_t desc = nullptr;
  check(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  LtOwner<cublasLtMatmulDesc_t> owner{desc, &cublasLtMatmulDescDestroy};
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  return owner;
}

std::uint64_t numerical_impl_flags(const cublasLtMatmulAlgo_t& algo) {
  std::uint64_t flags = 0;
  std::size_t written = 0;
  check(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &flags, sizeof flags, &written),
        "cublasLtMatmulAlgoCapGetAttribute(NUMERICAL_IMPL_FLAGS)");
  return flags;
}

bool uses_tensor_cores(std::uint64_t numerical_impl_flags) {
  return (numerical_impl_flags & CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK) != 0;
}

// The first algorithm of cuBLASLt's heuristic, or nullopt when it has none for the problem. With
// key.cuda_cores_only the heuristic considers CUDA-core (FMA) implementations only.
std::optional<cublasLtMatmulAlgo_t> best_algorithm(cublasLtHandle_t handle, const GemmKey& key,
                                                   const GemmPlan& plan,
                                                   std::uint64_t workspace_bytes) {
  cublasLtMatmulPreference_t raw = nullptr;
  check(cublasLtMatmulPreferenceCreate(&raw), "cublasLtMatmulPreferenceCreate");
  const LtOwner<cublasLtMatmulPreference_t> preference{raw, &cublasLtMatmulPreferenceDestroy};
  check(cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                             sizeof workspace_bytes),
        "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  const std::tuple<cublasLtMatmulPreferenceAttributes_t, std::uint32_t, const char*> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a, "MIN_ALIGNMENT_A_BYTES"},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b, "MIN_ALIGNMENT_B_BYTES"},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d, "MIN_ALIGNMENT_C_BYTES"},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d, "MIN_ALIGNMENT_D_BYTES"}};
  for (const auto& [attribute, bytes, name] : alignments) {
    check(cublasLtMatmulPreferenceSetAttribute(raw, attribute, &bytes, sizeof bytes),
          fmt::format("cublasLtMatmulPreferenceSetAttribute({})", name));
  }
  if (key.cuda_cores_only) {
    const std::uint64_t allowed = ~std::uint64_t{CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK};
    check(cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_IMPL_MASK, &allowed, sizeof allowed),
          "cublasLtMatmulPreferenceSetAttribute(IMPL_MASK)");
  }
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, plan.desc.get(), plan.a.get(), plan.b.get(),
                                                               plan.d.get(), plan.d.get(), raw, 1, &result, &returned);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned == 0)) return std::nullopt;
  check(status, fmt::format("cublasLtMatmulAlgoGetHeuristic ({})", problem_text(key)));
  check(result.state, fmt::format("cublasLtMatmulAlgoGetHeuristic ({}; state of the best result)", problem_text(key)));
  return result.algo;
}

}  // namespace

struct CudaTransformerOps::GemmPlans {
  std::map<GemmKey, GemmPlan> plans;
};

void CudaTransformerOps::StreamDeleter::operator()(cudaStream_t stream) const noexcept {
  if (cudaStreamDestroy(stream) != cudaSuccess) cudaGetLastError();
}

void CudaTransformerOps::LtHandleDeleter::operator()(cublasLtHandle_t handle) const noexcept {
  cublasLtDestroy(handle);
}

CudaTransformerOps::CudaTransformerOps(int device) : device_(device), plans_(std::make_unique<GemmPlans>()) {
  if (const std::optional<std::string> reason = cuda::unavailable_reason())
    throw UsageError(fmt::format("cannot run the Transformer workload on CUDA GPU {}: {}", device, *reason));
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count)
    throw UsageError(fmt::format("GPU index {} is out of range: {} CUDA GPU(s) found, use 0 to {}", device, count,
                                 count - 1));
  activate();
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  device_name_ = properties.name;
  compute_major_ = properties.major;
  compute_minor_ = properties.minor;
  capabilities_ = cuda::gpu_capabilities(cuda::query_device(device));
  if (const std::optional<std::string> problem = cuda_kernels::kernel_image_problem())
    throw UsageError(fmt::format("{} (compute capability {}.{}) cannot run this build's Transformer kernels: {}; "
                                 "rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{}",
                                 device_name_, compute_major_, compute_minor_, *problem, compute_major_,
                                 compute_minor_));
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  stream_.reset(stream);
  cublasLtHandle_t handle = nullptr;
  check(cublasLtCreate(&handle), "cublasLtCreate");
  lt_.reset(handle);
  // Up to 8 resident blocks of 256 threads per multiprocessor: one full wave of grid-stride blocks.
  launch_ = {stream_.get(), static_cast<unsigned>(std::max(properties.multiProcessorCount, 1) * 8)};
  scratch(kLtWorkspace, cuda::cublaslt_workspace_bytes(compute_major_));
  scratch(kNormPartials, launch_.max_blocks * sizeof(double));
}

CudaTransformerOps::~CudaTransformerOps() {
  if (cudaSetDevice(device_) != cudaSuccess || cudaStreamSynchronize(stream_.get()) != cudaSuccess)
    cudaGetLastError();
}

void CudaTransformerOps::activate() const { check(cudaSetDevice(device_), "cudaSetDevice"); }

void* CudaTransformerOps::allocate_zeroed(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  activate();
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) cudaGetLastError();
    throw OutOfMemoryError(fmt::format("could not allocate {} bytes ({}) on GPU {} ({}): {} free of {} "
                                       "(cudaMalloc: out of memory); use a smaller batch, sequence or model",
                                       bytes, gibibytes(bytes), device_, device_name_, gibibytes(free_bytes),
                                       gibibytes(total_bytes)),
                           bytes);
  }
  check(status, "cudaMalloc");
  const cudaError_t zeroed = cudaMemsetAsync(p, 0, bytes, stream_.get());
  if (zeroed != cudaSuccess) {
    cudaFree(p);
    check(zeroed, "cudaMemsetAsync (zeroing a new buffer)");
  }
  return p;
}

void CudaTransformerOps::free_memory(void* p) noexcept {
  if (p == nullptr) return;
  // Work queued on the stream may still use the buffer.
  if (cudaSetDevice(device_) != cudaSuccess || cudaStreamSynchronize(stream_.get()) != cudaSuccess ||
      cudaFree(p) != cudaSuccess)
    cudaGetLastError();
}

void CudaTransformerOps::copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  activate();
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.get()), "cudaMemcpyAsync (host to device)");
  // The caller may free or reuse the host memory as soon as this returns.
  check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (after a copy to the device)");
}

void CudaTransformerOps::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  activate();
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()), "cudaMemcpyAsync (device to host)");
  check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (after a copy to the host)");
}

void CudaTransformerOps::fill_zero(void* p, std::size_t bytes) {
  if (bytes == 0) return;
  activate();
  check(cudaMemsetAsync(p, 0, bytes, stream_.get()), "cudaMemsetAsync");
}

void CudaTransformerOps::synchronize() {
  activate();
  check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
}

void* CudaTransformerOps::scratch(Slot slot, std::size_t bytes) {
  OpsArray<std::byte>& buffer = scratch_[slot];
  if (buffer.size() < bytes) {
    buffer = OpsArray<std::byte>();  // free the old one first (after the stream is done with it)
    buffer = OpsArray<std::byte>(*this, bytes);
  }
  return buffer.data();
}

void CudaTransformerOps::release_scratch() {
  activate();
  // The cuBLASLt workspace and the norm's partials are sized once, when the ops are made.
  for (std::size_t slot = 0; slot < kSlotCount; ++slot)
    if (slot != kLtWorkspace && slot != kNormPartials) scratch_[slot] = OpsArray<std::byte>();
}

std::string CudaTransformerOps::implementation() const {
  const std::size_t version = cublasLtGetVersion();
  const std::string tensor_cores =
      tensor_core_policy_ == TensorCorePolicy::off           ? ", every GEMM kept off Tensor Cores"
      : tensor_core_policy_ == TensorCorePolicy::batched_off ? ", batched GEMMs kept off Tensor Cores"
                                                               : "";
  const std::string attention = fused_ ? ", " + fused_->description() : "";
  return fmt::format("cuBLASLt {}.{}.{} GEMMs, mpbench kernels{}{}", version / 10000, version / 100 % 100,
                     version % 100, attention, tensor_cores);
}

const CapabilityTable& CudaTransformerOps::capabilities() const { return capabilities_; }

std::optional<std::string> CudaTransformerOps::attention_unsupported(AttentionKernels kernels, GemmPrecision precision,
                                                                     AttentionDims dims) const {
  if (kernels == AttentionKernels::unfused) return std::nullopt;
  // What the precision rules out first: it needs no cuDNN to say.
  if (!fused_attention_takes(precision))
    return fmt::format("cuDNN's fused attention takes fp16 or bf16 operands; {} attention runs unfused",
                       gemm_precision_info(precision).name);
  if (compute_major_ < 8)
    return fmt::format("cuDNN's fused attention needs compute capability 8.0 or newer; {} is {}.{}", device_name_,
                       compute_major_, compute_minor_);
  // cuDNN's SDPA backward (its support matrix; the frontend's checks in
  // scaled_dot_product_flash_attention.h): heads up to 256 channels on Hopper, 128 elsewhere
  // (Blackwell included), and not one query against one key.
  const int largest_head = compute_major_ == 9 ? 256 : 128;
  if (dims.head_size % 8 != 0 || dims.head_size > largest_head)
    return fmt::format("cuDNN's fused attention trains heads of a multiple of 8 channels up to {} on {} (compute "
                       "capability {}.{}); this model's heads have {}",
                       largest_head, device_name_, compute_major_, compute_minor_, dims.head_size);
  if (dims.seq_len < 2)
    return fmt::format("cuDNN's fused attention does not train sequences of {} token", dims.seq_len);
  return fused_attention_unavailable();
}

void CudaTransformerOps::set_matmul_precision(const MatmulPrecision& precision) {
  if (const auto reason = unsupported(precision.gemm)) throw UsageError(*reason);
  precision_ = precision;
}

void CudaTransformerOps::round_to(float* x, std::size_t n, num::Format format) {
  if (format == num::Format::fp32) return;
  activate();
  cuda_kernels::round_values(launch_, x, n, format);
}

void CudaTransformerOps::begin_op(std::string_view op, int layer, Phase phase) {
  op_ranges_.push_back(op_range_name(op, layer, phase));
  nvtxRangePushA(op_ranges_.back().c_str());
}

void CudaTransformerOps::end_op() {
  nvtxRangePop();
  if (!op_ranges_.empty()) op_ranges_.pop_back();
}

std::vector<GemmAlgorithm> CudaTransformerOps::gemm_algorithms() const {
  std::vector<GemmAlgorithm> algorithms;
  for (const auto& [key, plan] : plans_->plans) {
    algorithms.push_back({plan.name, problem_text(key), key.precision, key.batch > 1,
                          uses_tensor_cores(plan.numerical_impl_flags), plan.numerical_impl_flags,
                          compute_type_name(plan.compute), key.m, key.n, key.k});
  }
  return algorithms;
}

num::Format CudaTransformerOps::input_format() const { return gemm_input_format(precision_.gemm); }

const void* CudaTransformerOps::gemm_operand(ConstTensor<float> values, std::size_t n, Slot slot) {
  const num::Format format = input_format();
  if (values.is_real() ? !is_half(format) : storage_format(values.storage()) == format) return values.data();
  void* converted = scratch(slot, n * cuda_kernels::operand_bytes(format));
  cuda_kernels::convert_operands(launch_, converted, values, n, format);
  return converted;
}

void CudaTransformerOps::gemm(const GemmCall& call) {
  const std::size_t in_bytes = cuda_kernels::operand_bytes(input_format());
  const auto bytes = [&](std::int64_t elements) { return elements * static_cast<std::int64_t>(in_bytes); };
  const GemmKey key{precision_.gemm,
                           call.transpose_a,
                           call.transpose_b,
                           call.m,
                           call.n,
                           call.k,
                           call.lda,
                           call.ldb,
                           call.ldd,
                           call.batch,
                           call.stride_a,
                           call.stride_b,
                           call.stride_d,
                           alignment(call.a, bytes(call.lda), call.batch, bytes(call.stride_a)),
                           alignment(call.b, bytes(call.ldb), call.batch, bytes(call.stride_b)),
                           alignment(call.d, call.ldd * 4, call.batch, call.stride_d * 4),
                           tensor_core_policy_ == TensorCorePolicy::off ||
                               (tensor_core_policy_ == TensorCorePolicy::batched_off && call.batch > 1)};
  auto found = plans_->plans.find(key);
  if (found == plans_->plans.end()) {
    GemmPlan plan;
    const cudaDataType_t input = lt_input_type(key.precision);
    // Stored shapes: op(A) is m x k, op(B) is k x n.
    plan.a = create_layout(input, key.transpose_a ? key.k : key.m, key.transpose_a ? key.m : key.k, key.lda, key.batch,
                           key.stride_a);
    plan.b = create_layout(input, key.transpose_b ? key.n : key.k, key.transpose_b ? key.k : key.n, key.ldb, key.batch,
                           key.stride_b);
    plan.d = create_layout(CUDA_R_32F, key.m, key.n, key.ldd, key.batch, key.stride_d);
    const std::uint64_t workspace_bytes = scratch_[kLtWorkspace].size();
    // The precision's compute type first. fp32 with no pedantic algorithm for the problem: plain
    // CUBLAS_COMPUTE_32F keeps fp32 math too (TF32 needs FAST_TF32), as the GEMM suite does. Kept
    // off Tensor Cores: the pedantic compute type, which never uses them, is the last resort.
    std::vector<cublasComputeType_t> computes{lt_compute_type(key.precision)};
    if (key.precision == GemmPrecision::fp32) computes.push_back(CUBLAS_COMPUTE_32F);
    if (key.cuda_cores_only && computes.front() != CUBLAS_COMPUTE_32F_PEDANTIC)
      computes.push_back(CUBLAS_COMPUTE_32F_PEDANTIC);
    std::optional<cublasLtMatmulAlgo_t> algo;
    std::vector<std::string> tried;
    for (cublasComputeType_t compute : computes) {
      plan.desc = create_desc(compute, key.transpose_a, key.transpose_b);
      algo = best_algorithm(lt_.get(), key, plan, workspace_bytes);
      tried.emplace_back(compute_type_name(compute));
      if (algo) {
        plan.compute = compute;
        break;
      }
    }
    const std::string op = op_ranges_.empty() ? std::string("no op range") : "op " + op_ranges_.back();
    if (!algo && key.cuda_cores_only)
      throw BackendError(fmt::format(
          "--tensor-cores {}: cuBLASLt has no CUDA-core (non-Tensor-Core) algorithm for the {} GEMM of {} ({}; "
          "tried {} with CUBLASLT_MATMUL_PREF_IMPL_MASK excluding Tensor Core op types): {} cannot run this "
          "precision with that GEMM off Tensor Cores",
          tensor_core_policy_name(tensor_core_policy_), call.name, op, problem_text(key), fmt::join(tried, ", "),
          device_name_));
    if (!algo)
      throw BackendError(fmt::format("cuBLASLt has no algorithm for the {} GEMM of {} ({}; "
                                     "cublasLtMatmulAlgoGetHeuristic returned none with {})",
                                     call.name, op, problem_text(key), fmt::join(tried, ", ")));
    plan.algo = *algo;
    plan.numerical_impl_flags = numerical_impl_flags(plan.algo);
    plan.name = call.name;
    if (key.cuda_cores_only && uses_tensor_cores(plan.numerical_impl_flags))
      throw BackendError(fmt::format("--tensor-cores {}: cuBLASLt's heuristic returned a Tensor Core algorithm "
                                     "(numerical implementation flags 0x{:x}) for the {} GEMM of {} ({}) despite "
                                     "CUBLASLT_MATMUL_PREF_IMPL_MASK",
                                     tensor_core_policy_name(tensor_core_policy_), plan.numerical_impl_flags,
                                     call.name, op, problem_text(key)));
    found = plans_->plans.emplace(key, std::move(plan)).first;
  }
  const GemmPlan& plan = found->second;
  const float alpha = 1.0f;
  const float beta = call.accumulate ? 1.0f : 0.0f;
  const cublasStatus_t status =
      cublasLtMatmul(lt_.get(), plan.desc.get(), &alpha, call.a, plan.a.get(), call.b, plan.b.get(), &beta, call.d,
                     plan.d.get(), call.d, plan.d.get(), &plan.algo, scratch_[kLtWorkspace].data(),
                     scratch_[kLtWorkspace].size(), stream_.get());
  if (status != CUBLAS_STATUS_SUCCESS) check(status, fmt::format("cublasLtMatmul ({})", problem_text(key)));
}

void CudaTransformerOps::gemm_add(Tensor<float> dst, std::size_t count, GemmCall call) {
  if (precision_.output == num::Format::fp32 && dst.is_real()) {
    call.d = dst.real("gemm_add");
    call.accumulate = true;
    gemm(call);
    return;
  }
  // The result is rounded before it is added (and the sum to dst's storage), so it needs a buffer
  // of its own.
  call.d = static_cast<float*>(scratch(kGemmResult, count * sizeof(float)));
  call.accumulate = false;
  gemm(call);
  cuda_kernels::add_rounded(launch_, dst, call.d, count, precision_.output);
}

void CudaTransformerOps::encoder_forward(Tensor<float> out, const std::int32_t* tokens, const float* wte,
                                         const float* wpe, int B, int T, int C) {
  activate();
  cuda_kernels::encoder_forward(launch_, out, tokens, wte, wpe, B, T, C);
}

void CudaTransformerOps::encoder_backward(float* dwte, float* dwpe, ConstTensor<float> dout,
                                          const std::int32_t* tokens, int B, int T, int C) {
  activate();
  cuda_kernels::encoder_backward(launch_, dwte, dwpe, dout, tokens, B, T, C);
}

void CudaTransformerOps::layernorm_forward(Tensor<float> out, float* mean, float* rstd, ConstTensor<float> inp,
                                           const float* weight, const float* bias, int N, int C) {
  activate();
  cuda_kernels::layernorm_forward(launch_, out, mean, rstd, inp, weight, bias, N, C);
}

void CudaTransformerOps::layernorm_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                                            ConstTensor<float> inp, const float* weight, const float* mean,
                                            const float* rstd, int N, int C) {
  activate();
  cuda_kernels::layernorm_backward(launch_, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

// Row-major out [N,OC] = inp [N,C] weight [OC,C]^T is column-major out^T (OC x N) = weight^T^T inp^T:
// A = weight, stored as the column-major C x OC matrix weight^T and read transposed; B = inp, stored
// as the column-major C x N matrix inp^T.
// A half out gets the GEMM's fp32 result through a buffer, rounded into it with the bias, a block of
// rows at a time: the buffer stays within limit_half_output_buffer's bytes (the logits of gpt2-124m
// at B=8 would need 1.5 GiB of floats in one piece).
void CudaTransformerOps::matmul_forward(Tensor<float> out, ConstTensor<float> inp, const float* weight,
                                        const float* bias, int N, int C, int OC) {
  if (N <= 0 || OC <= 0) return;
  activate();
  const void* x = gemm_operand(inp, std::size_t(N) * C, kOperandA);
  const void* w = gemm_operand(weight, std::size_t(OC) * C, kOperandB);
  const std::size_t x_row_bytes = std::size_t(C) * cuda_kernels::operand_bytes(input_format());
  // Blocks of a multiple of 128 rows keep every block's operand 256-byte aligned.
  const int rows = out.is_real() ? N
                                 : std::max<int>(128, static_cast<int>(half_output_buffer_bytes_ /
                                                                       (std::size_t(OC) * sizeof(float)) / 128 * 128));
  for (int first = 0; first < N; first += rows) {
    const int n = std::min(rows, N - first);
    GemmCall call;
    call.name = "matmul forward (inp weight^T)";
    call.transpose_a = true;
    call.m = OC, call.n = n, call.k = C;
    call.a = w, call.lda = C;
    call.b = static_cast<const std::byte*>(x) + first * x_row_bytes, call.ldb = C;
    call.d = out.is_real() ? out.real("matmul_forward")
                           : static_cast<float*>(scratch(kGemmResult, std::size_t(n) * OC * sizeof(float)));
    call.ldd = OC;
    gemm(call);
    if (bias != nullptr || precision_.output != num::Format::fp32 || !out.is_real())
      cuda_kernels::add_bias_and_round(launch_, out.at(std::size_t(first) * OC), call.d, bias, n, OC,
                                       precision_.output);
  }
}

// dinp [N,C] += dout [N,OC] weight [OC,C]: column-major dinp^T (C x N) = weight^T (C x OC, as stored)
// dout^T (OC x N, as stored). dweight [OC,C] += dout^T inp: column-major dweight^T (C x OC) =
// inp^T (C x N, as stored) dout (N x OC: the stored OC x N dout^T read transposed).
void CudaTransformerOps::matmul_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                                         ConstTensor<float> inp, const float* weight, int N, int C, int OC) {
  if (N <= 0 || C <= 0 || OC <= 0) return;
  activate();
  const void* dy = gemm_operand(dout, std::size_t(N) * OC, kOperandA);
  const void* w = gemm_operand(weight, std::size_t(OC) * C, kOperandB);
  const void* x = gemm_operand(inp, std::size_t(N) * C, kOperandC);
  GemmCall input_grad;
  input_grad.name = "matmul input gradient (dout weight)";
  input_grad.m = C, input_grad.n = N, input_grad.k = OC;
  input_grad.a = w, input_grad.lda = C;
  input_grad.b = dy, input_grad.ldb = OC;
  input_grad.ldd = C;
  gemm_add(dinp, std::size_t(N) * C, input_grad);
  GemmCall weight_grad;
  weight_grad.name = "matmul weight gradient (dout^T inp)";
  weight_grad.transpose_b = true;
  weight_grad.m = C, weight_grad.n = OC, weight_grad.k = N;
  weight_grad.a = x, weight_grad.lda = C;
  weight_grad.b = dy, weight_grad.ldb = OC;
  weight_grad.ldd = C;
  gemm_add(dweight, std::size_t(OC) * C, weight_grad);
  if (dbias != nullptr) cuda_kernels::add_column_sums(launch_, dbias, dout, N, OC, precision_.output);
}

// Per (b, h), with q, k, v, y as [T,hs] row-major (column-major hs x T: q^T, ...) and att [T,T]
// row-major (column-major: att^T):
//   scores: column-major att^T (T x T) = k (k^T read transposed) q^T, in place in att;
//   y:      column-major y^T (hs x T) = v^T att^T.
void CudaTransformerOps::attention_forward(Tensor<float> out, float* att, ConstTensor<float> qkv, int B, int T, int C,
                                           int NH) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  activate();
  if (attention() == AttentionKernels::fused) {
    fused_attention_forward(out, att, qkv, B, T, C, NH);
    return;
  }
  const int hs = C / NH;
  const num::Format format = input_format();
  const std::size_t head_elements = std::size_t(B) * NH * T * hs;
  const std::size_t att_elements = std::size_t(B) * NH * T * T;
  const std::size_t operand = cuda_kernels::operand_bytes(format);
  const auto [q, k, v] = qkv_to_heads(qkv, B, T, C, NH);

  GemmCall scores;
  scores.name = "attention scores (q k^T)";
  scores.transpose_a = true;
  scores.m = T, scores.n = T, scores.k = hs;
  scores.a = k, scores.lda = hs, scores.stride_a = std::int64_t(T) * hs;
  scores.b = q, scores.ldb = hs, scores.stride_b = std::int64_t(T) * hs;
  scores.d = att, scores.ldd = T, scores.stride_d = std::int64_t(T) * T;
  scores.batch = B * NH;
  gemm(scores);
  cuda_kernels::causal_softmax(launch_, att, B * NH, T, static_cast<float>(1.0 / std::sqrt(double(hs))));

  const void* probs = att;
  if (format != num::Format::fp32) {
    void* converted = scratch(kProbsOperand, att_elements * operand);
    cuda_kernels::convert_operands(launch_, converted, att, att_elements, format);
    probs = converted;
  }
  float* y = static_cast<float*>(scratch(kHeadsOutA, head_elements * sizeof(float)));
  GemmCall values;
  values.name = "attention output (att v)";
  values.m = hs, values.n = T, values.k = T;
  values.a = v, values.lda = hs, values.stride_a = std::int64_t(T) * hs;
  values.b = probs, values.ldb = T, values.stride_b = std::int64_t(T) * T;
  values.d = y, values.ldd = hs, values.stride_d = std::int64_t(T) * hs;
  values.batch = B * NH;
  gemm(values);
  cuda_kernels::heads_to_rows(launch_, out, y, num::Format::fp32, C, B, T, NH, hs, false);
}

// Per (b, h), in the forward's column-major terms:
//   datt^T (T x T) = v (v^T read transposed) dy^T;  dv^T (hs x T) = dy^T att (att^T read transposed);
//   dscore from the softmax backward kernel;
//   dq^T (hs x T) = k^T dscore^T;                    dk^T (hs x T) = q^T dscore (dscore^T read transposed).
void CudaTransformerOps::attention_backward(Tensor<float> dqkv, ConstTensor<float> dout, ConstTensor<float> qkv,
                                            const float* att, int B, int T, int C, int NH) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  activate();
  if (attention() == AttentionKernels::fused) {
    fused_attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
    return;
  }
  const int hs = C / NH;
  const int BNH = B * NH;
  const num::Format format = input_format();
  const std::size_t head_elements = std::size_t(BNH) * T * hs;
  const std::size_t att_elements = std::size_t(BNH) * T * T;
  const std::size_t operand = cuda_kernels::operand_bytes(format);
  const std::int64_t head_stride = std::int64_t(T) * hs;
  const std::int64_t att_stride = std::int64_t(T) * T;
  const auto [q, k, v] = qkv_to_heads(qkv, B, T, C, NH);
  void* dy = scratch(kHeadsDy, head_elements * operand);
  cuda_kernels::rows_to_heads(launch_, dy, dout, C, B, T, NH, hs, format);
  const void* probs = att;
  if (format != num::Format::fp32) {
    void* converted = scratch(kProbsOperand, att_elements * operand);
    cuda_kernels::convert_operands(launch_, converted, att, att_elements, format);
    probs = converted;
  }

  float* datt = static_cast<float*>(scratch(kScoresGrad, att_elements * sizeof(float)));
  GemmCall att_grad;
  att_grad.name = "attention probability gradient (dy v^T)";
  att_grad.transpose_a = true;
  att_grad.m = T, att_grad.n = T, att_grad.k = hs;
  att_grad.a = v, att_grad.lda = hs, att_grad.stride_a = head_stride;
  att_grad.b = dy, att_grad.ldb = hs, att_grad.stride_b = head_stride;
  att_grad.d = datt, att_grad.ldd = T, att_grad.stride_d = att_stride;
  att_grad.batch = BNH;
  gemm(att_grad);

  float* dv = static_cast<float*>(scratch(kHeadsOutC, head_elements * sizeof(float)));
  GemmCall value_grad;
  value_grad.name = "attention value gradient (att^T dy)";
  value_grad.transpose_b = true;
  value_grad.m = hs, value_grad.n = T, value_grad.k = T;
  value_grad.a = dy, value_grad.lda = hs, value_grad.stride_a = head_stride;
  value_grad.b = probs, value_grad.ldb = T, value_grad.stride_b = att_stride;
  value_grad.d = dv, value_grad.ldd = hs, value_grad.stride_d = head_stride;
  value_grad.batch = BNH;
  gemm(value_grad);

  void* dscore = scratch(kDscoreOperand, att_elements * operand);
  cuda_kernels::causal_softmax_backward(launch_, dscore, att, datt, BNH, T,
                                        static_cast<float>(1.0 / std::sqrt(double(hs))), format);

  float* dq = static_cast<float*>(scratch(kHeadsOutA, head_elements * sizeof(float)));
  GemmCall query_grad;
  query_grad.name = "attention query gradient (dscore k)";
  query_grad.m = hs, query_grad.n = T, query_grad.k = T;
  query_grad.a = k, query_grad.lda = hs, query_grad.stride_a = head_stride;
  query_grad.b = dscore, query_grad.ldb = T, query_grad.stride_b = att_stride;
  query_grad.d = dq, query_grad.ldd = hs, query_grad.stride_d = head_stride;
  query_grad.batch = BNH;
  gemm(query_grad);

  float* dk = static_cast<float*>(scratch(kHeadsOutB, head_elements * sizeof(float)));
  GemmCall key_grad;
  key_grad.name = "attention key gradient (dscore^T q)";
  key_grad.transpose_b = true;
  key_grad.m = hs, key_grad.n = T, key_grad.k = T;
  key_grad.a = q, key_grad.lda = hs, key_grad.stride_a = head_stride;
  key_grad.b = dscore, key_grad.ldb = T, key_grad.stride_b = att_stride;
  key_grad.d = dk, key_grad.ldd = hs, key_grad.stride_d = head_stride;
  key_grad.batch = BNH;
  gemm(key_grad);

  add_heads_to_qkv(dqkv, {dq, dk, dv}, num::Format::fp32, B, T, C, NH);
}

std::array<void*, 3> CudaTransformerOps::qkv_to_heads(ConstTensor<float> qkv, int B, int T, int C, int NH) {
  const std::size_t bytes = std::size_t(B) * T * C * cuda_kernels::operand_bytes(input_format());
  std::array<void*, 3> heads{scratch(kHeadsQ, bytes), scratch(kHeadsK, bytes), scratch(kHeadsV, bytes)};
  for (int part = 0; part < 3; ++part)
    cuda_kernels::rows_to_heads(launch_, heads[part], qkv.at(part * C), 3 * C, B, T, NH, C / NH, input_format());
  return heads;
}

void CudaTransformerOps::add_heads_to_qkv(Tensor<float> dqkv, const std::array<const void*, 3>& heads,
                                          num::Format format, int B, int T, int C, int NH) {
  for (int part = 0; part < 3; ++part)
    cuda_kernels::heads_to_rows(launch_, dqkv.at(part * C), heads[part], format, 3 * C, B, T, NH, C / NH, true);
}

FusedAttention& CudaTransformerOps::fused_attention() {
  if (!fused_) {
    fused_ = make_fused_attention(stream_.get(),
                                  [this](std::size_t bytes) { return scratch(kAttentionWorkspace, bytes); });
  }
  return *fused_;
}

// The fused kernels read q, k, v as [B,NH,T,hs] 16-bit operands (the same layout and rounding as the
// unfused path's) and write out in that layout; att keeps the softmax statistics [B,NH,T] and,
// after them, the forward's 16-bit output, which the backward needs.
void CudaTransformerOps::require_half_operands() const {
  if (!is_half(input_format()))
    throw BackendError(fmt::format("fused attention takes fp16 or bf16 operands, not {} (use --attention unfused "
                                   "or auto for this mode)",
                                   gemm_precision_info(precision_.gemm).name));
}

void CudaTransformerOps::fused_attention_forward(Tensor<float> out, float* att, ConstTensor<float> qkv, int B, int T,
                                                 int C, int NH) {
  require_half_operands();
  const AttentionShape shape{B, NH, T, C / NH};
  const auto [q, k, v] = qkv_to_heads(qkv, B, T, C, NH);
  float* stats = att;
  void* y = att + fused_attention_statistics_elements(B, T, NH);
  fused_attention().forward(y, stats, q, k, v, shape, input_format());
  cuda_kernels::heads_to_rows(launch_, out, y, input_format(), C, B, T, NH, shape.hs, false);
}

void CudaTransformerOps::fused_attention_backward(Tensor<float> dqkv, ConstTensor<float> dout, ConstTensor<float> qkv,
                                                  const float* att, int B, int T, int C, int NH) {
  require_half_operands();
  const AttentionShape shape{B, NH, T, C / NH};
  const auto [q, k, v] = qkv_to_heads(qkv, B, T, C, NH);
  const num::Format format = input_format();
  const std::size_t bytes = std::size_t(B) * T * C * cuda_kernels::operand_bytes(format);
  void* dy = scratch(kHeadsDy, bytes);
  cuda_kernels::rows_to_heads(launch_, dy, dout, C, B, T, NH, shape.hs, format);
  void* dq = scratch(kHeadsOutA, bytes);
  void* dk = scratch(kHeadsOutB, bytes);
  void* dv = scratch(kHeadsOutC, bytes);
  const float* stats = att;
  const void* y = att + fused_attention_statistics_elements(B, T, NH);
  fused_attention().backward(dq, dk, dv, dy, q, k, v, y, stats, shape, format);
  add_heads_to_qkv(dqkv, {dq, dk, dv}, format, B, T, C, NH);
}

void CudaTransformerOps::gelu_forward(Tensor<float> out, ConstTensor<float> inp, std::size_t n) {
  activate();
  cuda_kernels::gelu_forward(launch_, out, inp, n);
}

void CudaTransformerOps::gelu_backward(Tensor<float> dinp, ConstTensor<float> dout, ConstTensor<float> inp,
                                       std::size_t n) {
  activate();
  cuda_kernels::gelu_backward(launch_, dinp, dout, inp, n);
}

void CudaTransformerOps::residual_forward(Tensor<float> out, ConstTensor<float> a, ConstTensor<float> b,
                                          std::size_t n) {
  activate();
  cuda_kernels::residual_forward(launch_, out, a, b, n);
}

void CudaTransformerOps::residual_backward(Tensor<float> da, Tensor<float> db, ConstTensor<float> dout,
                                           std::size_t n) {
  activate();
  cuda_kernels::residual_backward(launch_, da, db, dout, n);
}

void CudaTransformerOps::softmax_crossentropy_forward(float* losses, float* probs, ConstTensor<float> logits,
                                                      const std::int32_t* targets, int N, int V, int Vp) {
  activate();
  cuda_kernels::softmax_crossentropy_forward(launch_, losses, probs, logits, targets, N, V, Vp);
}

void CudaTransformerOps::softmax_crossentropy_backward(Tensor<float> dlogits, const float* dlosses, const float* probs,
                                                       const std::int32_t* targets, int N, int V, int Vp) {
  activate();
  cuda_kernels::softmax_crossentropy_backward(launch_, dlogits, dlosses, probs, targets, N, V, Vp);
}

void CudaTransformerOps::adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                                      const AdamWStep& step) {
  activate();
  cuda_kernels::adamw_update(launch_, params, grads, m, v, n, step);
}

double CudaTransformerOps::global_norm(const float* grads, std::size_t n) {
  activate();
  double* partials = reinterpret_cast<double*>(scratch_[kNormPartials].data());
  const unsigned blocks = cuda_kernels::sum_of_squares(launch_, partials, grads, n);
  std::vector<double> host(blocks);
  copy_to_host(host.data(), partials, blocks * sizeof(double));
  double sum = 0;
  for (double partial : host) sum += partial;
  return std::sqrt(sum);
}

void CudaTransformerOps::copy(float* dst, const float* src, std::size_t n) {
  if (n == 0) return;
  activate();
  check(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_.get()),
        "cudaMemcpyAsync (device to device)");
}

}  // namespace mpbench::workloads
