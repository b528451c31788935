#pragma once
// The one cuBLASLt matmul wrapper of the device layer: the gemm suite's GEMMs and the Transformer
// ops' GEMMs are described, planned (descriptors, layouts, the heuristic's algorithm) and recorded
// by the same code, so that what the suite measures is what training runs.
#include <cublasLt.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "core/backend.hpp"

namespace mpbench::cuda {

template <typename Handle>
using LtOwner = std::unique_ptr<std::remove_pointer_t<Handle>, cublasStatus_t (*)(Handle)>;

// One GEMM in cuBLASLt's column-major terms: D [m,n] = op(A) op(B), or D += op(A) op(B) when run
// accumulating. A and B hold the precision's input type, D `output`; batch > 1: strided-batched,
// each matrix `stride_*` elements after the previous one. Everything the descriptors and the
// heuristic's choice depend on, so it is also the key of a plan.
struct MatmulProblem {
  GemmPrecision precision = GemmPrecision::fp32;
  DType output = DType::f32;
  bool transpose_a = false, transpose_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  std::int32_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  // Bytes every matrix of A, B and D is aligned to (at most 256, cuBLASLt's assumption unless told).
  std::uint32_t align_a = 256, align_b = 256, align_d = 256;
  // Only CUDA-core (non-Tensor-Core) algorithms: CUBLASLT_MATMUL_PREF_IMPL_MASK, then the pedantic
  // compute type as the last resort.
  bool cuda_cores_only = false;
  auto operator<=>(const MatmulProblem&) const = default;
};

// The alignment, up to 256 bytes, that every matrix of a (batched) operand at `p` has: the
// Transformer's weights live at arbitrary offsets of one buffer.
std::uint32_t matmul_alignment(const void* p, std::int64_t ld_bytes, std::int32_t batch, std::int64_t stride_bytes);
// `problem` with the alignments of operands at a, b and d.
MatmulProblem with_alignments(MatmulProblem problem, const void* a, const void* b, const void* d);
// "bf16 GEMM m=64 n=16 k=64 batch=1 op(A)=T op(B)=N"
std::string problem_text(const MatmulProblem& problem);
// The compute types the heuristic is asked for, in order: the precision's, then for fp32 plain
// CUBLAS_COMPUTE_32F (fp32 math too, when there is no pedantic algorithm), then for a problem kept
// off Tensor Cores the pedantic one, which never uses them (not for fp16 accumulation).
std::vector<cublasComputeType_t> compute_types_to_try(const MatmulProblem& problem);
const char* compute_type_name(cublasComputeType_t compute);  // "CUBLAS_COMPUTE_32F_PEDANTIC"

// How a plan's GEMM is named: in its record, and in the errors of planning it.
struct MatmulLabel {
  std::string gemm;               // what it computes, e.g. "attention scores (q k^T)"
  std::string subject;            // e.g. "the attention scores (q k^T) GEMM of op h0.attn (forward)"
  std::string cuda_cores_policy;  // what keeps it off Tensor Cores, e.g. "--tensor-cores off"
};

// The chosen algorithm as cuBLASLt describes it.
struct MatmulRecord {
  std::string gemm;     // the label's
  std::string problem;  // problem_text
  std::string compute_type;
  std::uint64_t numerical_impl_flags = 0;
  bool tensor_cores = false;  // the flags have a Tensor Core op type
  // algo id, tile, stages, split-k, workspace, tensor_cores, numerical flags, compute, scale and
  // data types, and "fallback" when a compute type other than the precision's runs it.
  nlohmann::json description;
};

// A problem's descriptors and layouts and the heuristic's first algorithm, on one device.
class MatmulPlan {
 public:
  // BackendError, naming the label's subject and the compute types tried, when cuBLASLt has no
  // algorithm (on CUDA cores, when the problem says so).
  MatmulPlan(std::shared_ptr<CudaDevice> device, const MatmulProblem& problem, const MatmulLabel& label);
  // D = op(A) op(B), or D += with `accumulate`, on the device's stream with its workspace.
  void run(const void* a, const void* b, void* d, bool accumulate) const;
  const MatmulRecord& record() const { return record_; }

 private:
  void choose_algorithm(const MatmulProblem& problem, const MatmulLabel& label);
  // The record of the chosen algorithm; `tried_before` the compute types that had none.
  void describe_choice(const MatmulProblem& problem, const cublasLtMatmulHeuristicResult_t& chosen,
                       cublasComputeType_t compute, const std::vector<std::string>& tried_before);
  LtOwner<cublasLtMatmulDesc_t> create_desc(const MatmulProblem& problem, cublasComputeType_t compute) const;
  std::optional<cublasLtMatmulHeuristicResult_t> first_algorithm(const MatmulProblem& problem) const;

  std::shared_ptr<CudaDevice> device_;
  LtOwner<cublasLtMatrixLayout_t> a_, b_, d_;
  LtOwner<cublasLtMatmulDesc_t> desc_;
  cudaDataType_t scale_type_ = CUDA_R_32F;  // of alpha and beta
  cublasLtMatmulAlgo_t algo_{};
  MatmulRecord record_;
};

// Plans by problem, each made when first needed.
class MatmulPlanCache {
 public:
  explicit MatmulPlanCache(std::shared_ptr<CudaDevice> device) : device_(std::move(device)) {}
  // `label()` names a new plan's GEMM; it is called only for a problem not planned yet.
  template <typename Label>
  const MatmulPlan& plan(const MatmulProblem& problem, Label&& label) {
    if (const auto found = plans_.find(problem); found != plans_.end()) return found->second;
    return plans_.try_emplace(problem, device_, problem, std::forward<Label>(label)()).first->second;
  }
  const std::map<MatmulProblem, MatmulPlan>& plans() const { return plans_; }

 private:
  std::shared_ptr<CudaDevice> device_;
  std::map<MatmulProblem, MatmulPlan> plans_;
};

// The gemm suite's GEMM on the device: row-major C = A B^T (core/gemm.hpp), C in the precision's
// output type. Throws UsageError for buffers that do not match the precision or the shape, and for
// fp8 shapes that are not multiples of 16; BackendError when cuBLASLt has no algorithm for it.
std::unique_ptr<PreparedOp> make_cublaslt_gemm(std::shared_ptr<CudaDevice> device, GemmPrecision precision,
                                               const GemmShape& shape, const DeviceBuffer& a, const DeviceBuffer& b,
                                               DeviceBuffer& c);

}  // namespace mpbench::cuda
