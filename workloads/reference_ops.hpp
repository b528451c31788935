#pragma once
// TransformerOps as plain loops that accumulate in double: slow, obviously correct, the oracle the
// faster implementations are tested against. Instantiated for float and double. In a low matmul
// precision the GEMM inputs and results are rounded exactly as MatmulPrecision says. Half-storage
// tensors are decoded to Real before an op and its outputs rounded into them after it.
#include <vector>

#include "workloads/ops.hpp"

namespace mpbench::workloads {

template <typename Real>
class ReferenceOps final : public TransformerOps<Real>, public HostOpsMemory {
 public:
  std::string implementation() const override { return "reference loops, double accumulation"; }
  const CapabilityTable& capabilities() const override;
  void set_matmul_precision(const MatmulPrecision& precision) override;
  void round_to(Real* x, std::size_t n, num::Format format) override;
  bool has_half_storage() const override { return true; }
  void encoder_forward(Tensor<Real> out, const std::int32_t* tokens, const Real* wte, const Real* wpe, int B, int T,
                       int C) override;
  void encoder_backward(Real* dwte, Real* dwpe, ConstTensor<Real> dout, const std::int32_t* tokens, int B, int T,
                        int C) override;
  void layernorm_forward(Tensor<Real> out, Real* mean, Real* rstd, ConstTensor<Real> inp, const Real* weight,
                         const Real* bias, int N, int C) override;
  void layernorm_backward(Tensor<Real> dinp, Real* dweight, Real* dbias, ConstTensor<Real> dout,
                          ConstTensor<Real> inp, const Real* weight, const Real* mean, const Real* rstd, int N,
                          int C) override;
  void matmul_forward(Tensor<Real> out, ConstTensor<Real> inp, const Real* weight, const Real* bias, int N, int C,
                      int OC) override;
  void matmul_backward(Tensor<Real> dinp, Real* dweight, Real* dbias, ConstTensor<Real> dout, ConstTensor<Real> inp,
                       const Real* weight, int N, int C, int OC) override;
  void attention_forward(Tensor<Real> out, Real* att, ConstTensor<Real> qkv, int B, int T, int C, int NH) override;
  void attention_backward(Tensor<Real> dqkv, ConstTensor<Real> dout, ConstTensor<Real> qkv, const Real* att, int B,
                          int T, int C, int NH) override;
  void gelu_forward(Tensor<Real> out, ConstTensor<Real> inp, std::size_t n) override;
  void gelu_backward(Tensor<Real> dinp, ConstTensor<Real> dout, ConstTensor<Real> inp, std::size_t n) override;
  void residual_forward(Tensor<Real> out, ConstTensor<Real> a, ConstTensor<Real> b, std::size_t n) override;
  void residual_backward(Tensor<Real> da, Tensor<Real> db, ConstTensor<Real> dout, std::size_t n) override;
  void softmax_crossentropy_forward(Real* losses, Real* probs, ConstTensor<Real> logits, const std::int32_t* targets,
                                    int N, int V, int Vp) override;
  void softmax_crossentropy_backward(Tensor<Real> dlogits, const Real* dlosses, const Real* probs,
                                     const std::int32_t* targets, int N, int V, int Vp) override;
  void adamw_update(Real* params, const Real* grads, Real* m, Real* v, std::size_t n,
                    const AdamWStep& step) override;
  double global_norm(const Real* grads, std::size_t n) override;
  void copy(Real* dst, const Real* src, std::size_t n) override;

 private:
  Real gemm_input(Real x) const;     // x as the GEMM reads it in the current precision
  // The fp8 modes' operand: x [rows, cols] quantized by the recipe (Fp8GemmQuantizer, the CPU ops'
  // code) and dequantized, in `storage`.
  const Real* fp8_operand(const Real* x, std::size_t rows, std::size_t cols, bool k_along_rows, Fp8Operand role,
                          std::vector<Real>& storage, bool count = true);
  Real gemm_output(double sum) const;  // a GEMM result rounded to the output format
  MatmulPrecision precision_;
};

extern template class ReferenceOps<float>;
extern template class ReferenceOps<double>;

}  // namespace mpbench::workloads
