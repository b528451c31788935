#include "backends/cuda/cublaslt_gemm.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "amp/formats.hpp"
#include "backends/cuda/check.hpp"
#include "backends/cuda/cublaslt_names.hpp"
#include "core/error.hpp"

namespace mpbench::cuda {

namespace {

// cuBLASLt types of one precision (core/gemm.hpp). fp32 is pedantic so that no Tensor Core (and
// no TF32) is used: it is the baseline every speedup is measured against.
struct LtTypes {
  cudaDataType_t input;
  cudaDataType_t output;
  cublasComputeType_t compute;
  cudaDataType_t scale;  // type of alpha and beta
  const char* compute_name;
};

LtTypes lt_types(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::fp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F, "CUBLAS_COMPUTE_32F_PEDANTIC"};
    case GemmPrecision::tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, "CUBLAS_COMPUTE_32F_FAST_TF32"};
    case GemmPrecision::fp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, "CUBLAS_COMPUTE_32F"};
    case GemmPrecision::fp16_acc16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, CUDA_R_16F, "CUBLAS_COMPUTE_16F"};
    case GemmPrecision::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, "CUBLAS_COMPUTE_32F"};
    case GemmPrecision::fp8_e4m3: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, "CUBLAS_COMPUTE_32F"};
  }
  throw UsageError("unknown GEMM precision");
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

template <typename Handle>
using LtOwner = std::unique_ptr<std::remove_pointer_t<Handle>, cublasStatus_t (*)(Handle)>;

LtOwner<cublasLtMatmulDesc_t> create_matmul_desc(const LtTypes& types) {
  cublasLtMatmulDesc_t desc = nullptr;
  check(cublasLtMatmulDescCreate(&desc, types.compute, types.scale), "cublasLtMatmulDescCreate");
  return {desc, &cublasLtMatmulDescDestroy};
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value, const char* name) {
  check(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value),
        fmt::format("cublasLtMatmulDescSetAttribute({})", name));
}

// A packed column-major rows x cols matrix, `batch` of them one after the other.
LtOwner<cublasLtMatrixLayout_t> create_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                                               std::int64_t batch) {
  cublasLtMatrixLayout_t layout = nullptr;
  check(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), rows),
        "cublasLtMatrixLayoutCreate");
  LtOwner<cublasLtMatrixLayout_t> owner{layout, &cublasLtMatrixLayoutDestroy};
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    const std::int64_t stride = rows * cols;
    check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
          "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
          "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return owner;
}

std::string shape_text(const GemmShape& s) { return fmt::format("m={} n={} k={} batch={}", s.m, s.n, s.k, s.batch); }

void check_request(GemmPrecision precision, const GemmShape& s, const DeviceBuffer& a, const DeviceBuffer& b,
                   const DeviceBuffer& c) {
  check_gemm_arguments(precision, s, a, b, c);
  if (s.batch > INT32_MAX) throw UsageError(fmt::format("GEMM batch {} exceeds cuBLASLt's limit of {}", s.batch, INT32_MAX));
  if (auto rule = gemm_shape_rule(precision, s)) throw UsageError(fmt::format("{}, got {}", *rule, shape_text(s)));
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

class CublasLtGemm final : public PreparedOp {
 public:
  CublasLtGemm(std::shared_ptr<CudaDevice> device, GemmPrecision precision, const GemmShape& shape,
               const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c)
      : device_(std::move(device)), a_(a.data()), b_(b.data()), c_(c.data()), types_(lt_types(precision)),
        desc_(create_matmul_desc(types_)),
        // Row-major C[m,n] = A[m,k] B[n,k]^T is column-major C^T[n,m] = op(B)[n,k] A^T[k,m]: cuBLAS's
        // first operand is B read transposed, its second is A as stored ("TN").
        first_layout_(create_layout(types_.input, shape.k, shape.n, shape.batch)),
        second_layout_(create_layout(types_.input, shape.k, shape.m, shape.batch)),
        output_layout_(create_layout(types_.output, shape.n, shape.m, shape.batch)) {
    configure_desc(precision);
    const cublasLtMatmulHeuristicResult_t best = best_algorithm_with_fallback(precision, shape);
    algo_ = best.algo;
    details_.update(describe_algorithm(best, device_->workspace_bytes()));
    details_["library"] = "cuBLASLt";
    details_["heuristic"] = "first result of cublasLtMatmulAlgoGetHeuristic";
    details_["layout"] = "TN";
    details_["compute_type"] = types_.compute_name;
    details_["scale_type"] = data_type_name(types_.scale);
    details_["input_type"] = data_type_name(types_.input);
    details_["output_type"] = data_type_name(types_.output);
    if (precision == GemmPrecision::fp8_e4m3) details_["fp8_fast_accumulation"] = false;
  }

  void run() override {
    device_->activate();
    check(cublasLtMatmul(device_->lt_handle(), desc_.get(), alpha(), b_, first_layout_.get(), a_,
                         second_layout_.get(), beta(), c_, output_layout_.get(), c_, output_layout_.get(), &algo_,
                         device_->workspace(), device_->workspace_bytes(), device_->stream()),
          "cublasLtMatmul");
  }

  nlohmann::json details() const override { return details_; }

 private:
  // fp32 asks for the pedantic compute type first. Should this cuBLASLt have no pedantic algorithm
  // for the shape, plain CUBLAS_COMPUTE_32F keeps fp32 math too (TF32 needs FAST_TF32); the
  // fallback is recorded, and the tensor_cores flag still says what ran.
  cublasLtMatmulHeuristicResult_t best_algorithm_with_fallback(GemmPrecision precision, const GemmShape& shape) {
    if (precision == GemmPrecision::fp32) {
      if (const auto found = find_algorithm()) return *found;
      details_["fallback"] = fmt::format("cuBLASLt has no CUBLAS_COMPUTE_32F_PEDANTIC algorithm for {}; used "
                                         "CUBLAS_COMPUTE_32F", shape_text(shape));
      types_.compute = CUBLAS_COMPUTE_32F;
      types_.compute_name = "CUBLAS_COMPUTE_32F";
      desc_ = create_matmul_desc(types_);
      configure_desc(precision);
    }
    if (const auto found = find_algorithm()) return *found;
    throw BackendError(fmt::format("cuBLASLt has no algorithm for a {} GEMM with {} (cublasLtMatmulAlgoGetHeuristic "
                                   "returned none)", gemm_precision_info(precision).name, shape_text(shape)));
  }

  void configure_desc(GemmPrecision precision) {
    set_desc(desc_.get(), CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "TRANSA");
    set_desc(desc_.get(), CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "TRANSB");
    if (precision == GemmPrecision::fp8_e4m3) {
      set_desc(desc_.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, device_->unit_scale(), "A_SCALE_POINTER");
      set_desc(desc_.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, device_->unit_scale(), "B_SCALE_POINTER");
    }
  }

  // The heuristic's first algorithm for the descriptor as it is, or nothing when it has none; any
  // other failure throws.
  std::optional<cublasLtMatmulHeuristicResult_t> find_algorithm() const {
    cublasLtMatmulPreference_t raw = nullptr;
    check(cublasLtMatmulPreferenceCreate(&raw), "cublasLtMatmulPreferenceCreate");
    const LtOwner<cublasLtMatmulPreference_t> preference{raw, &cublasLtMatmulPreferenceDestroy};
    const std::uint64_t limit = device_->workspace_bytes();
    check(cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof limit),
          "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(device_->lt_handle(), desc_.get(), first_layout_.get(), second_layout_.get(),
                                       output_layout_.get(), output_layout_.get(), raw, 1, &result, &returned);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned == 0)) return std::nullopt;
    check(status, "cublasLtMatmulAlgoGetHeuristic");
    check(result.state, "cublasLtMatmulAlgoGetHeuristic (state of the best result)");
    return result;
  }

  // alpha = 1, beta = 0, in the scale type: half for fp16 accumulation, float otherwise.
  const void* alpha() const { return types_.scale == CUDA_R_16F ? static_cast<const void*>(&alpha_f16_) : &alpha_f32_; }
  const void* beta() const { return types_.scale == CUDA_R_16F ? static_cast<const void*>(&beta_f16_) : &beta_f32_; }

  std::shared_ptr<CudaDevice> device_;
  const void* a_;
  const void* b_;
  void* c_;
  LtTypes types_;
  LtOwner<cublasLtMatmulDesc_t> desc_;
  LtOwner<cublasLtMatrixLayout_t> first_layout_;
  LtOwner<cublasLtMatrixLayout_t> second_layout_;
  LtOwner<cublasLtMatrixLayout_t> output_layout_;
  cublasLtMatmulAlgo_t algo_{};
  nlohmann::json details_;
  float alpha_f32_ = 1.0f;
  float beta_f32_ = 0.0f;
  std::uint16_t alpha_f16_ = num::f32_to_f16_bits(1.0f);
  std::uint16_t beta_f16_ = num::f32_to_f16_bits(0.0f);
};

}  // namespace

std::unique_ptr<PreparedOp> make_cublaslt_gemm(std::shared_ptr<CudaDevice> device, GemmPrecision precision,
                                               const GemmShape& shape, const DeviceBuffer& a, const DeviceBuffer& b,
                                               DeviceBuffer& c) {
  check_request(precision, shape, a, b, c);
  return std::make_unique<CublasLtGemm>(std::move(device), precision, shape, a, b, c);
}

}  // namespace mpbench::cuda
