#include "backends/cuda/cublaslt_gemm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>

#include "amp/formats.hpp"
#include "backends/cuda/check.hpp"
#include "backends/cuda/cublaslt_names.hpp"
#include "core/error.hpp"

namespace mpbench::cuda {

namespace {

cudaDataType_t lt_data_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::e4m3: return CUDA_R_8F_E4M3;
    case DType::e5m2: return CUDA_R_8F_E5M2;
  }
  throw UsageError("unknown data type");
}

const char* data_type_name(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_32F: return "fp32";
    case CUDA_R_16F: return "fp16";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_8F_E4M3: return "fp8-e4m3";
    default: return "other";
  }
}

DType input_dtype(const MatmulProblem& problem) { return gemm_precision_info(problem.precision).input; }

// fp32 is pedantic so that no Tensor Core (and no TF32) is used: it is the baseline every speedup
// is measured against.
cublasComputeType_t precision_compute_type(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::fp32: return CUBLAS_COMPUTE_32F_PEDANTIC;
    case GemmPrecision::tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmPrecision::fp16_acc16: return CUBLAS_COMPUTE_16F;
    case GemmPrecision::fp16:
    case GemmPrecision::bf16:
    case GemmPrecision::fp8_e4m3: return CUBLAS_COMPUTE_32F;
  }
  throw UsageError("unknown GEMM precision");
}

// alpha and beta are half for fp16 accumulation, float otherwise.
cudaDataType_t scale_type(cublasComputeType_t compute) {
  return compute == CUBLAS_COMPUTE_16F ? CUDA_R_16F : CUDA_R_32F;
}

const float kOneF32 = 1.0f;
const float kZeroF32 = 0.0f;
const std::uint16_t kOneF16 = num::f32_to_f16_bits(1.0f);
const std::uint16_t kZeroF16 = num::f32_to_f16_bits(0.0f);

const void* scalar(cudaDataType_t type, bool one) {
  if (type == CUDA_R_16F) return one ? &kOneF16 : &kZeroF16;
  return one ? &kOneF32 : &kZeroF32;
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value, const char* name) {
  check(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value),
        fmt::format("cublasLtMatmulDescSetAttribute({})", name));
}

template <typename T>
void set_preference(cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
                    const T& value, const char* name) {
  check(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value),
        fmt::format("cublasLtMatmulPreferenceSetAttribute({})", name));
}

// A column-major rows x cols matrix with leading dimension ld; `batch` of them `stride` elements apart.
LtOwner<cublasLtMatrixLayout_t> create_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                                               std::int64_t ld, std::int32_t batch, std::int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  check(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  LtOwner<cublasLtMatrixLayout_t> owner{layout, &cublasLtMatrixLayoutDestroy};
  if (batch > 1) {
    check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch),
          "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
          "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return owner;
}

// Stored shapes: op(A) is m x k, op(B) is k x n.
LtOwner<cublasLtMatrixLayout_t> create_a_layout(const MatmulProblem& p) {
  return create_layout(lt_data_type(input_dtype(p)), p.transpose_a ? p.k : p.m, p.transpose_a ? p.m : p.k, p.lda,
                       p.batch, p.stride_a);
}
LtOwner<cublasLtMatrixLayout_t> create_b_layout(const MatmulProblem& p) {
  return create_layout(lt_data_type(input_dtype(p)), p.transpose_b ? p.n : p.k, p.transpose_b ? p.k : p.n, p.ldb,
                       p.batch, p.stride_b);
}
LtOwner<cublasLtMatrixLayout_t> create_d_layout(const MatmulProblem& p) {
  return create_layout(lt_data_type(p.output), p.m, p.n, p.ldd, p.batch, p.stride_d);
}

// The heuristic's constraints: the device's workspace, the operands' alignments and, for a problem
// kept off Tensor Cores, CUDA-core (FMA) implementations only.
LtOwner<cublasLtMatmulPreference_t> create_preference(const MatmulProblem& problem, std::uint64_t workspace_bytes) {
  cublasLtMatmulPreference_t raw = nullptr;
  check(cublasLtMatmulPreferenceCreate(&raw), "cublasLtMatmulPreferenceCreate");
  LtOwner<cublasLtMatmulPreference_t> preference{raw, &cublasLtMatmulPreferenceDestroy};
  set_preference(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes, "MAX_WORKSPACE_BYTES");
  set_preference(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, problem.align_a, "MIN_ALIGNMENT_A_BYTES");
  set_preference(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, problem.align_b, "MIN_ALIGNMENT_B_BYTES");
  set_preference(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, problem.align_d, "MIN_ALIGNMENT_C_BYTES");
  set_preference(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, problem.align_d, "MIN_ALIGNMENT_D_BYTES");
  if (problem.cuda_cores_only) {
    const std::uint64_t allowed = ~std::uint64_t{CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK};
    set_preference(raw, CUBLASLT_MATMUL_PREF_IMPL_MASK, allowed, "IMPL_MASK");
  }
  return preference;
}

template <typename T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute, const char* name) {
  T value{};
  std::size_t written = 0;
  check(cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written),
        fmt::format("cublasLtMatmulAlgoConfigGetAttribute({})", name));
  return value;
}

std::uint64_t numerical_impl_flags(const cublasLtMatmulAlgo_t& algo) {
  std::uint64_t flags = 0;
  std::size_t written = 0;
  check(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &flags, sizeof flags, &written),
        "cublasLtMatmulAlgoCapGetAttribute(NUMERICAL_IMPL_FLAGS)");
  return flags;
}

std::string math_name(std::uint64_t flags) {
  switch (flags & CUBLASLT_NUMERICAL_IMPL_FLAGS_OP_TYPE_MASK) {
    case CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA: return "fma";
    case CUBLASLT_NUMERICAL_IMPL_FLAGS_HMMA: return "hmma";
    case CUBLASLT_NUMERICAL_IMPL_FLAGS_IMMA: return "imma";
    case CUBLASLT_NUMERICAL_IMPL_FLAGS_DMMA: return "dmma";
    default: return fmt::format("op type 0x{:x}", flags & CUBLASLT_NUMERICAL_IMPL_FLAGS_OP_TYPE_MASK);
  }
}

std::string accumulator_name(std::uint64_t flags) {
  switch (flags & CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_TYPE_MASK) {
    case CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_16F: return "fp16";
    case CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32F: return "fp32";
    case CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_64F: return "fp64";
    case CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32I: return "int32";
    default: return fmt::format("0x{:x}", flags & CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_TYPE_MASK);
  }
}

std::vector<std::string> input_names(std::uint64_t flags) {
  constexpr std::pair<std::uint64_t, const char*> kInputs[] = {
      {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F, "fp16"},          {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF, "bf16"},
      {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32, "tf32"},         {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_32F, "fp32"},
      {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_64F, "fp64"},          {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8I, "int8"},
      {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8F_E4M3, "fp8-e4m3"}, {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8F_E5M2, "fp8-e5m2"}};
  std::vector<std::string> names;
  for (const auto& [bit, name] : kInputs)
    if (flags & bit) names.emplace_back(name);
  return names;
}

std::string reduction_scheme_name(std::uint32_t scheme) {
  switch (scheme) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute_type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output_type";
    default: return fmt::format("scheme {}", scheme);
  }
}

// The chosen algorithm as cuBLASLt describes it; `tensor_cores` is what the Tensor Core question
// of the explain step reads.
nlohmann::json describe_algorithm(const cublasLtMatmulHeuristicResult_t& result, std::size_t workspace_limit) {
  const cublasLtMatmulAlgo_t& algo = result.algo;
  const std::uint64_t flags = numerical_impl_flags(algo);
  const auto tile = algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, "TILE_ID");
  const auto stages = algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, "STAGES_ID");
  const auto cluster = algo_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, "CLUSTER_SHAPE_ID");
  const auto reduction = algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, "REDUCTION_SCHEME");
  return {{"algo_id", algo_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID, "ID")},
          {"tile", tile_name(tile)},
          {"tile_id", tile},
          {"stages", stages_name(stages)},
          {"stages_id", stages},
          {"split_k", algo_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "SPLITK_NUM")},
          {"reduction_scheme", reduction_scheme_name(reduction)},
          {"cta_swizzling", algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "CTA_SWIZZLING")},
          {"custom_option", algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, "CUSTOM_OPTION")},
          {"inner_shape_id", algo_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, "INNER_SHAPE_ID")},
          {"cluster_shape", cluster_shape_name(cluster)},
          {"waves_count", result.wavesCount},
          {"workspace_bytes", result.workspaceSize},
          {"workspace_limit_bytes", workspace_limit},
          {"tensor_cores", (flags & CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK) != 0},
          {"numerical_impl_flags", flags},
          {"math", math_name(flags)},
          {"accumulator", accumulator_name(flags)},
          {"inputs", input_names(flags)}};
}

std::string transposes_name(const MatmulProblem& problem) {
  return fmt::format("{}{}", problem.transpose_a ? "T" : "N", problem.transpose_b ? "T" : "N");
}

BackendError no_algorithm(bool cuda_cores_only, const MatmulLabel& label, const std::string& problem,
                          const std::vector<std::string>& tried, const std::string& gpu) {
  if (cuda_cores_only)
    return BackendError(fmt::format(
        "{}: cuBLASLt has no CUDA-core (non-Tensor-Core) algorithm for {} ({}; tried {} with "
        "CUBLASLT_MATMUL_PREF_IMPL_MASK excluding Tensor Core op types): {} cannot run this precision with that GEMM "
        "off Tensor Cores",
        label.cuda_cores_policy, label.subject, problem, fmt::join(tried, ", "), gpu));
  return BackendError(fmt::format("cuBLASLt has no algorithm for {} ({}; cublasLtMatmulAlgoGetHeuristic returned none "
                                  "with {})",
                                  label.subject, problem, fmt::join(tried, ", ")));
}

BackendError tensor_cores_despite_mask(const MatmulLabel& label, const MatmulRecord& record) {
  return BackendError(fmt::format("{}: cuBLASLt's heuristic returned a Tensor Core algorithm (numerical implementation "
                                  "flags 0x{:x}) for {} ({}) despite CUBLASLT_MATMUL_PREF_IMPL_MASK",
                                  label.cuda_cores_policy, record.numerical_impl_flags, label.subject,
                                  record.problem));
}

}  // namespace

std::uint32_t matmul_alignment(const void* p, std::int64_t ld_bytes, std::int32_t batch, std::int64_t stride_bytes) {
  std::uint64_t bits = reinterpret_cast<std::uintptr_t>(p) | static_cast<std::uint64_t>(ld_bytes) | 256u;
  if (batch > 1) bits |= static_cast<std::uint64_t>(stride_bytes);
  return static_cast<std::uint32_t>(bits & (~bits + 1));
}

MatmulProblem with_alignments(MatmulProblem problem, const void* a, const void* b, const void* d) {
  const auto input = static_cast<std::int64_t>(dtype_size(input_dtype(problem)));
  const auto output = static_cast<std::int64_t>(dtype_size(problem.output));
  problem.align_a = matmul_alignment(a, problem.lda * input, problem.batch, problem.stride_a * input);
  problem.align_b = matmul_alignment(b, problem.ldb * input, problem.batch, problem.stride_b * input);
  problem.align_d = matmul_alignment(d, problem.ldd * output, problem.batch, problem.stride_d * output);
  return problem;
}

std::string problem_text(const MatmulProblem& problem) {
  return fmt::format("{} GEMM m={} n={} k={} batch={} op(A)={} op(B)={}", gemm_precision_info(problem.precision).name,
                     problem.m, problem.n, problem.k, problem.batch, problem.transpose_a ? "T" : "N",
                     problem.transpose_b ? "T" : "N");
}

std::vector<cublasComputeType_t> compute_types_to_try(const MatmulProblem& problem) {
  std::vector<cublasComputeType_t> computes{precision_compute_type(problem.precision)};
  if (problem.precision == GemmPrecision::fp32) computes.push_back(CUBLAS_COMPUTE_32F);
  if (problem.cuda_cores_only && computes.front() != CUBLAS_COMPUTE_32F_PEDANTIC &&
      computes.front() != CUBLAS_COMPUTE_16F)
    computes.push_back(CUBLAS_COMPUTE_32F_PEDANTIC);
  return computes;
}

const char* compute_type_name(cublasComputeType_t compute) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_PEDANTIC: return "CUBLAS_COMPUTE_32F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    case CUBLAS_COMPUTE_32F: return "CUBLAS_COMPUTE_32F";
    case CUBLAS_COMPUTE_16F: return "CUBLAS_COMPUTE_16F";
    default: return "another compute type";
  }
}

MatmulPlan::MatmulPlan(std::shared_ptr<CudaDevice> device, const MatmulProblem& problem, const MatmulLabel& label)
    : device_(std::move(device)),
      a_(create_a_layout(problem)),
      b_(create_b_layout(problem)),
      d_(create_d_layout(problem)),
      desc_(nullptr, &cublasLtMatmulDescDestroy) {
  record_.gemm = label.gemm;
  record_.problem = problem_text(problem);
  // The heuristic answers for the current device.
  device_->activate();
  choose_algorithm(problem, label);
}

void MatmulPlan::run(const void* a, const void* b, void* d, bool accumulate) const {
  device_->activate();
  const cublasStatus_t status =
      cublasLtMatmul(device_->lt_handle(), desc_.get(), scalar(scale_type_, true), a, a_.get(), b, b_.get(),
                     scalar(scale_type_, accumulate), d, d_.get(), d, d_.get(), &algo_, device_->workspace(),
                     device_->workspace_bytes(), device_->stream());
  // The message is formatted only on failure: this runs for every GEMM of a training step.
  if (status != CUBLAS_STATUS_SUCCESS) check(status, fmt::format("cublasLtMatmul ({})", record_.problem));
}

// The first compute type the heuristic has an algorithm for; the others tried before it are
// recorded as the fallback.
void MatmulPlan::choose_algorithm(const MatmulProblem& problem, const MatmulLabel& label) {
  std::vector<std::string> tried;
  for (const cublasComputeType_t compute : compute_types_to_try(problem)) {
    desc_ = create_desc(problem, compute);
    if (const auto found = first_algorithm(problem)) {
      algo_ = found->algo;
      scale_type_ = scale_type(compute);
      describe_choice(problem, *found, compute, tried);
      if (problem.cuda_cores_only && record_.tensor_cores) throw tensor_cores_despite_mask(label, record_);
      return;
    }
    tried.emplace_back(compute_type_name(compute));
  }
  throw no_algorithm(problem.cuda_cores_only, label, record_.problem, tried, device_->info().name);
}

void MatmulPlan::describe_choice(const MatmulProblem& problem, const cublasLtMatmulHeuristicResult_t& chosen,
                                 cublasComputeType_t compute, const std::vector<std::string>& tried_before) {
  record_.compute_type = compute_type_name(compute);
  record_.numerical_impl_flags = numerical_impl_flags(chosen.algo);
  record_.tensor_cores = (record_.numerical_impl_flags & CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK) != 0;
  nlohmann::json& d = record_.description;
  d = describe_algorithm(chosen, device_->workspace_bytes());
  d["library"] = "cuBLASLt";
  d["heuristic"] = "first result of cublasLtMatmulAlgoGetHeuristic";
  d["layout"] = transposes_name(problem);
  d["compute_type"] = record_.compute_type;
  d["scale_type"] = data_type_name(scale_type(compute));
  d["input_type"] = data_type_name(lt_data_type(input_dtype(problem)));
  d["output_type"] = data_type_name(lt_data_type(problem.output));
  if (problem.precision == GemmPrecision::fp8_e4m3) d["fp8_fast_accumulation"] = false;
  if (!tried_before.empty())
    d["fallback"] = fmt::format("cuBLASLt has no {} algorithm{} for {}; used {}", fmt::join(tried_before, " or "),
                                problem.cuda_cores_only ? " on CUDA cores" : "", record_.problem,
                                record_.compute_type);
}

LtOwner<cublasLtMatmulDesc_t> MatmulPlan::create_desc(const MatmulProblem& problem,
                                                      cublasComputeType_t compute) const {
  cublasLtMatmulDesc_t desc = nullptr;
  check(cublasLtMatmulDescCreate(&desc, compute, scale_type(compute)), "cublasLtMatmulDescCreate");
  LtOwner<cublasLtMatmulDesc_t> owner{desc, &cublasLtMatmulDescDestroy};
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, problem.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, "TRANSA");
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, problem.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, "TRANSB");
  if (problem.precision == GemmPrecision::fp8_e4m3) {
    set_desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, device_->unit_scale(), "A_SCALE_POINTER");
    set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, device_->unit_scale(), "B_SCALE_POINTER");
  }
  return owner;
}

// The heuristic's first algorithm for the descriptor as it is, or nothing when it has none; any
// other failure throws.
std::optional<cublasLtMatmulHeuristicResult_t> MatmulPlan::first_algorithm(const MatmulProblem& problem) const {
  const LtOwner<cublasLtMatmulPreference_t> preference = create_preference(problem, device_->workspace_bytes());
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(device_->lt_handle(), desc_.get(), a_.get(), b_.get(),
                                                               d_.get(), d_.get(), preference.get(), 1, &result,
                                                               &returned);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned == 0)) return std::nullopt;
  check(status, fmt::format("cublasLtMatmulAlgoGetHeuristic ({})", record_.problem));
  check(result.state, fmt::format("cublasLtMatmulAlgoGetHeuristic ({}; state of the best result)", record_.problem));
  return result;
}

namespace {

std::string shape_text(const GemmShape& s) { return fmt::format("m={} n={} k={} batch={}", s.m, s.n, s.k, s.batch); }

void check_request(GemmPrecision precision, const GemmShape& s, const DeviceBuffer& a, const DeviceBuffer& b,
                   const DeviceBuffer& c) {
  check_gemm_arguments(precision, s, a, b, c);
  if (s.batch > INT32_MAX) throw UsageError(fmt::format("GEMM batch {} exceeds cuBLASLt's limit of {}", s.batch, INT32_MAX));
  if (auto rule = gemm_shape_rule(precision, s)) throw UsageError(fmt::format("{}, got {}", *rule, shape_text(s)));
}

// Row-major C[m,n] = A[m,k] B[n,k]^T is column-major C^T[n,m] = op(B)[n,k] A^T[k,m]: cuBLAS's first
// operand is B read transposed, its second is A as stored ("TN"), all packed.
MatmulProblem suite_problem(GemmPrecision precision, const GemmShape& s, const DeviceBuffer& a,
                            const DeviceBuffer& b, const DeviceBuffer& c) {
  MatmulProblem problem;
  problem.precision = precision;
  problem.output = gemm_precision_info(precision).output;
  problem.transpose_a = true;
  problem.m = s.n, problem.n = s.m, problem.k = s.k;
  problem.lda = s.k, problem.ldb = s.k, problem.ldd = s.n;
  problem.batch = static_cast<std::int32_t>(s.batch);
  problem.stride_a = s.n * s.k, problem.stride_b = s.m * s.k, problem.stride_d = s.m * s.n;
  return with_alignments(problem, b.data(), a.data(), c.data());
}

class CublasLtGemm final : public PreparedOp {
 public:
  CublasLtGemm(std::shared_ptr<CudaDevice> device, GemmPrecision precision, const GemmShape& shape,
               const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c)
      : plan_(std::move(device), suite_problem(precision, shape, a, b, c),
              {"C = A B^T", fmt::format("a {} GEMM with {}", gemm_precision_info(precision).name, shape_text(shape)),
               ""}),
        a_(a.data()), b_(b.data()), c_(c.data()) {}

  void run() override { plan_.run(b_, a_, c_, false); }
  nlohmann::json details() const override { return plan_.record().description; }

 private:
  MatmulPlan plan_;
  const void* a_;
  const void* b_;
  void* c_;
};

}  // namespace

std::unique_ptr<PreparedOp> make_cublaslt_gemm(std::shared_ptr<CudaDevice> device, GemmPrecision precision,
                                               const GemmShape& shape, const DeviceBuffer& a, const DeviceBuffer& b,
                                               DeviceBuffer& c) {
  check_request(precision, shape, a, b, c);
  return std::make_unique<CublasLtGemm>(std::move(device), precision, shape, a, b, c);
}

}  // namespace mpbench::cuda
