#pragma once
// TransformerOps on one NVIDIA GPU: every GEMM through cuBLASLt (fp32 pedantic, TF32, fp16 or bf16
// inputs with fp32 accumulation and fp32 results), attention unfused (strided-batched cuBLASLt
// products around an fp32 softmax kernel) or fused (cuDNN's scaled-dot-product attention, fp16 and
// bf16), everything else mpbench's own kernels (transformer_kernels.cu). The ops run on a GPU's
// device context (backends/cuda/cuda_device.hpp), the one the CUDA backend runs on: its stream,
// cuBLASLt handle and workspace, its capability table and its device memory, which the ops count
// as their own OpsMemory.
//
// The numerics are the reference's (workloads/reference_ops.hpp): fp16/bf16 GEMMs read their fp32
// operands converted to the half type by a round-to-nearest-even kernel, so they read exactly the
// values the reference rounds to; results are rounded to MatmulPrecision::output by a kernel before
// they are stored or added. TF32 matmuls read fp32 operands as the Tensor Cores do (they drop the
// low mantissa bits); attention's operands are rounded to tf32 by the kernels that lay them out.
// Half storage: the kernels read fp16/bf16 activations and round what they write into them; an
// activation stored in the GEMM's input type is its operand as it is (no conversion kernel), and
// a GEMM writing a half activation goes through an fp32 buffer and the bias-and-round kernel.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda/cublaslt_gemm.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "workloads/cuda/fused_attention.hpp"
#include "workloads/cuda/transformer_kernels.hpp"
#include "workloads/ops.hpp"

namespace mpbench::workloads {

class CudaTransformerOps final : public TransformerOps<float> {
 public:
  // On `device` (cuda::make_device, or the CUDA backend's device_context()). Throws UsageError for
  // no device, or when this build has no Transformer kernels for its architecture.
  explicit CudaTransformerOps(std::shared_ptr<cuda::CudaDevice> device);
  ~CudaTransformerOps() override;
  CudaTransformerOps(const CudaTransformerOps&) = delete;
  CudaTransformerOps& operator=(const CudaTransformerOps&) = delete;

  // Which GEMMs may use Tensor Cores from now on (on until set). With off or batched_off, a GEMM
  // the policy keeps off Tensor Cores runs a CUDA-core algorithm (cuBLASLt's heuristic filtered by
  // CUBLASLT_MATMUL_PREF_IMPL_MASK), or fails with a BackendError naming it when cuBLASLt has none.
  void set_tensor_core_policy(TensorCorePolicy policy) { tensor_core_policy_ = policy; }
  TensorCorePolicy tensor_core_policy() const { return tensor_core_policy_; }

  // The most a GEMM writing a half activation holds of its fp32 result at once (256 MiB unless
  // set; it then runs in blocks of a multiple of 128 rows): tests lower it to exercise the blocks.
  void limit_half_output_buffer(std::size_t bytes) { half_output_buffer_bytes_ = bytes; }

  void copy_to_device(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void fill_zero(void* p, std::size_t bytes) override;
  void synchronize() override;

  std::string implementation() const override;
  const CapabilityTable& capabilities() const override;
  // Fused: fp16/bf16, compute capability 8.0 or newer, head sizes that are multiples of 8 up to
  // what cuDNN's backward takes (256 on Hopper, 128 on the others), sequences of more than one
  // token, and cuDNN loaded.
  std::optional<std::string> attention_unsupported(AttentionKernels kernels, GemmPrecision precision,
                                                   AttentionDims dims) const override;
  void set_matmul_precision(const MatmulPrecision& precision) override;
  // One per cached cuBLASLt plan (the device layer's record of each): a problem differs by
  // precision, shape, strides, alignment and policy.
  std::vector<GemmAlgorithm> gemm_algorithms() const override;
  void release_scratch() override;
  void round_to(float* x, std::size_t n, num::Format format) override;
  bool has_half_storage() const override { return true; }
  void begin_op(std::string_view op, int layer, Phase phase) override;
  void end_op() override;

  void encoder_forward(Tensor<float> out, const std::int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override;
  void encoder_backward(float* dwte, float* dwpe, ConstTensor<float> dout, const std::int32_t* tokens, int B, int T,
                        int C) override;
  void layernorm_forward(Tensor<float> out, float* mean, float* rstd, ConstTensor<float> inp, const float* weight,
                         const float* bias, int N, int C) override;
  void layernorm_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                          ConstTensor<float> inp, const float* weight, const float* mean, const float* rstd, int N,
                          int C) override;
  void matmul_forward(Tensor<float> out, ConstTensor<float> inp, const float* weight, const float* bias, int N, int C,
                      int OC) override;
  void matmul_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                       ConstTensor<float> inp, const float* weight, int N, int C, int OC) override;
  void attention_forward(Tensor<float> out, float* att, ConstTensor<float> qkv, int B, int T, int C, int NH) override;
  void attention_backward(Tensor<float> dqkv, ConstTensor<float> dout, ConstTensor<float> qkv, const float* att, int B,
                          int T, int C, int NH) override;
  void gelu_forward(Tensor<float> out, ConstTensor<float> inp, std::size_t n) override;
  void gelu_backward(Tensor<float> dinp, ConstTensor<float> dout, ConstTensor<float> inp, std::size_t n) override;
  void residual_forward(Tensor<float> out, ConstTensor<float> a, ConstTensor<float> b, std::size_t n) override;
  void residual_backward(Tensor<float> da, Tensor<float> db, ConstTensor<float> dout, std::size_t n) override;
  void softmax_crossentropy_forward(float* losses, float* probs, ConstTensor<float> logits,
                                    const std::int32_t* targets, int N, int V, int Vp) override;
  void softmax_crossentropy_backward(Tensor<float> dlogits, const float* dlosses, const float* probs,
                                     const std::int32_t* targets, int N, int V, int Vp) override;
  void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const AdamWStep& step) override;
  double global_norm(const float* grads, std::size_t n) override;
  void copy(float* dst, const float* src, std::size_t n) override;

 protected:
  void* allocate_zeroed(std::size_t bytes) override;
  void free_memory(void* p) noexcept override;

 private:
  // D [m,n] (column-major, leading dimension ldd) = op(A) op(B), or += with `accumulate`, in
  // cuBLASLt's terms (cuda::MatmulProblem); A and B hold operands of the current precision's input
  // format, D is fp32. batch > 1: strided-batched, each matrix `stride_*` elements after the previous one.
  struct GemmCall {
    const char* name = "";  // what the GEMM computes, for errors and gemm_algorithms
    bool transpose_a = false, transpose_b = false;
    std::int64_t m = 0, n = 0, k = 0;
    const void* a = nullptr;
    std::int64_t lda = 0;
    const void* b = nullptr;
    std::int64_t ldb = 0;
    float* d = nullptr;
    std::int64_t ldd = 0;
    int batch = 1;
    std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
    bool accumulate = false;
  };
  // Cached device buffers the ops reuse between calls, one per purpose.
  enum Slot : std::size_t {
    kOperandA, kOperandB, kOperandC,  // matmul operands converted to fp16/bf16
    kGemmResult,                      // a GEMM result before it is rounded and added
    kHeadsQ, kHeadsK, kHeadsV, kHeadsDy,  // attention operands [B,NH,T,hs]
    kProbsOperand, kScoresGrad, kDscoreOperand,  // attention [B,NH,T,T]
    kHeadsOutA, kHeadsOutB, kHeadsOutC,  // attention products [B,NH,T,hs], fp32
    kNormPartials, kAttentionWorkspace, kSlotCount
  };

  void* scratch(Slot slot, std::size_t bytes);
  num::Format input_format() const;
  // n values as the GEMM reads them: the tensor itself when it is stored in the GEMM's input type
  // (real for fp32 and tf32, fp16 or bf16 codes), else its copy in that type in `slot`.
  const void* gemm_operand(ConstTensor<float> values, std::size_t n, Slot slot);
  void gemm(const GemmCall& call);
  // How a new plan's errors name the GEMM: what it computes, the op it runs in, the policy.
  cuda::MatmulLabel gemm_label(const char* name) const;
  // dst [count] += the GEMM's result rounded to the output format.
  void gemm_add(Tensor<float> dst, std::size_t count, GemmCall call);
  // q, k, v of qkv [B,T,3C] as [B,NH,T,hs] operands of the input format, in kHeadsQ/K/V.
  std::array<void*, 3> qkv_to_heads(ConstTensor<float> qkv, int B, int T, int C, int NH);
  // dqkv [B,T,3C] += dq, dk, dv [B,NH,T,hs] (floats or 16-bit codes of `format`).
  void add_heads_to_qkv(Tensor<float> dqkv, const std::array<const void*, 3>& heads, num::Format format, int B, int T,
                        int C, int NH);
  FusedAttention& fused_attention();  // made when first needed
  // BackendError unless the GEMMs read fp16 or bf16, which the fused kernels take.
  void require_half_operands() const;
  void fused_attention_forward(Tensor<float> out, float* att, ConstTensor<float> qkv, int B, int T, int C, int NH);
  void fused_attention_backward(Tensor<float> dqkv, ConstTensor<float> dout, ConstTensor<float> qkv, const float* att,
                                int B, int T, int C, int NH);

  // Declared first: destroyed last, after everything that uses its stream or memory.
  std::shared_ptr<cuda::CudaDevice> device_;
  cuda_kernels::Launch launch_;
  MatmulPrecision precision_;
  TensorCorePolicy tensor_core_policy_ = TensorCorePolicy::on;
  std::size_t half_output_buffer_bytes_ = std::size_t{256} << 20;
  std::vector<std::string> op_ranges_;  // the open begin_op ranges, innermost last
  cuda::MatmulPlanCache plans_;
  std::unique_ptr<FusedAttention> fused_;
  // Declared last: destroyed first, while the stream they synchronize with still exists.
  std::array<OpsArray<std::byte>, kSlotCount> scratch_;
};

}  // namespace mpbench::workloads
