#pragma once
// TransformerOps on the CPU: the GEMMs through the CPU device layer's matmul (native where the
// capability table says so; converted elsewhere: operands rounded to the format in fp32, oneDNN's
// fp32 matmul), attention's per-head products as batched fp32 matmuls on operands rounded to the
// GEMM input format, GELU through oneDNN's eltwise, everything else as OpenMP loops over rows.
// Results match ReferenceOps<float> up to fp32 summation order; in a low matmul precision the GEMM
// operands and results are rounded exactly as the reference rounds them. Half-storage activations
// are read and written in place: a bf16 tensor is a bf16 GEMM's operand as it is, and the loops
// decode rows to fp32 and round their results into the storage.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "workloads/ops.hpp"

namespace mpbench::cpu {
class CpuDevice;
}

namespace mpbench::workloads {

class CpuTransformerOps final : public TransformerOps<float>, public HostOpsMemory {
 public:
  // On the CPU device layer the backend runs on (its oneDNN engine, matmul and capability table).
  explicit CpuTransformerOps(std::shared_ptr<cpu::CpuDevice> device);
  ~CpuTransformerOps() override;
  CpuTransformerOps(const CpuTransformerOps&) = delete;
  CpuTransformerOps& operator=(const CpuTransformerOps&) = delete;

  std::string implementation() const override;
  const CapabilityTable& capabilities() const override;
  void set_matmul_precision(const MatmulPrecision& precision) override;
  void round_to(float* x, std::size_t n, num::Format format) override;
  bool has_half_storage() const override { return true; }
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
  void release_scratch() override;

 private:
  struct Gelus;  // oneDNN's GELU primitives (keeps oneDNN's headers out of this one)

  // Scratch that only grows: the same shapes repeat every step, so after the first step no op
  // allocates. Counted in this OpsMemory's live bytes like any other buffer.
  template <typename T>
  T* scratch(OpsArray<T>& buffer, std::size_t count);

  // out = a b (+ bias) with a [M,K], b [K,N] in the GEMM input type (from gemm_operand), each
  // transposed in memory or not; accumulate: out += result. The result is rounded to the output
  // format before it is stored or added, as MatmulPrecision says, and the sum to out's storage.
  void gemm(Tensor<float> out, const void* a, bool a_transposed, const void* b, bool b_transposed, const float* bias,
            int M, int K, int N, bool accumulate);
  // dst = op(a) op(b) for each of `batch` fp32 matrices one after the other (attention's per-head
  // products), on the fp32 matmul.
  void head_matmul(const float* a, bool a_transposed, const float* b, bool b_transposed, float* dst, int batch, int M,
                   int N, int K);
  // n values of x as the GEMM reads them. Native: x itself when it is stored in the GEMM input type
  // (fp32 GEMMs on real storage, bf16 on bf16), else its copy in that type in `buffer`. Converted:
  // fp32 values of the input format (rounded_operand).
  const void* gemm_operand(ConstTensor<float> x, std::size_t n, OpsArray<std::byte>& buffer);
  // fp8 GEMMs (fp8_gemm()): x [rows, cols] quantized as `role` by the recipe (Fp8GemmQuantizer::
  // quantize_matrix, K along its rows or down its columns) and dequantized, fp32 in `buffer`; in the
  // backward, the forward's kept fp8 copy of x where there is one (reuse_forward_copy).
  const float* fp8_operand(ConstTensor<float> x, std::size_t rows, std::size_t cols, bool k_along_rows,
                           Fp8Operand role, OpsArray<std::byte>& buffer, bool count = true);
  bool fp8_gemm() const { return precision_.gemm == GemmPrecision::fp8_e4m3; }
  // n values of x rounded to `format`, as fp32 in `buffer`: the converted path's operands.
  const float* rounded_operand(ConstTensor<float> x, std::size_t n, num::Format format, OpsArray<std::byte>& buffer);
  // Half-storage values as floats in `buffer` (the fp32 GEMM's operands, encoder_backward's dout).
  const float* decoded(ConstTensor<float> x, std::size_t n, OpsArray<float>& buffer);

  std::shared_ptr<cpu::CpuDevice> device_;
  std::unique_ptr<Gelus> gelus_;
  MatmulPrecision precision_;
  bool converted_ = false;  // the GEMMs of precision_ run on the converted path
  OpsArray<std::byte> operand_a_, operand_b_;  // GEMM operands: codes (native) or rounded fp32 (converted)
  OpsArray<std::byte> operand_c_;              // mxfp8: dout blocked along its columns, for dweight
  OpsArray<float> result_;                         // GEMM results before rounding and adding
  std::array<OpsArray<float>, 2> decoded_;         // half-storage values decoded to fp32
  OpsArray<float> per_thread_;                     // attention's heads and scores, LayerNorm's per-thread sums
};

}  // namespace mpbench::workloads
