#pragma once
// The operations a GPT-2 decoder needs, forward and backward, behind one backend-neutral interface:
// the model (model.hpp) is written once against it. Real is the element type (float for training,
// double for the finite-difference tests). For now every pointer is host memory; the CPU and CUDA
// implementations will take the same layouts.
//
// Layouts are llm.c's, row-major: N = B*T rows of activations; a [B,T,C] tensor holds row b*T+t.
// Every backward ADDS into its gradient outputs (so gradients of shared inputs accumulate); callers
// zero them first. A null bias pointer means "no bias" (and no bias gradient).
#include <cstddef>
#include <cstdint>

#include "workloads/elementwise.hpp"

namespace mpbench::workloads {

template <typename Real>
class TransformerOps {
 public:
  virtual ~TransformerOps() = default;

  // out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]. wte [V,C], wpe [T_max,C].
  virtual void encoder_forward(Real* out, const std::int32_t* tokens, const Real* wte, const Real* wpe,
                               int B, int T, int C) = 0;
  virtual void encoder_backward(Real* dwte, Real* dwpe, const Real* dout, const std::int32_t* tokens,
                                int B, int T, int C) = 0;

  // Per row n of inp [N,C]: out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + 1e-5)
  // (biased variance). mean and rstd [N] are saved for the backward.
  virtual void layernorm_forward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* weight,
                                 const Real* bias, int N, int C) = 0;
  virtual void layernorm_backward(Real* dinp, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                                  const Real* weight, const Real* mean, const Real* rstd, int N, int C) = 0;

  // out [N,OC] = inp [N,C] * weight^T + bias; weight [OC,C] (PyTorch Linear's layout), bias [OC].
  virtual void matmul_forward(Real* out, const Real* inp, const Real* weight, const Real* bias, int N, int C,
                              int OC) = 0;
  virtual void matmul_backward(Real* dinp, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                               const Real* weight, int N, int C, int OC) = 0;

  // Causal multi-head attention. qkv [B,T,3C] holds q, k, v side by side, head h in channels
  // [h*hs, (h+1)*hs) of each. att [B,NH,T,T] saves softmax(q k^T / sqrt(hs)) over t2 <= t (0 above
  // the diagonal); out [B,T,C] = att v, heads side by side.
  virtual void attention_forward(Real* out, Real* att, const Real* qkv, int B, int T, int C, int NH) = 0;
  virtual void attention_backward(Real* dqkv, const Real* dout, const Real* qkv, const Real* att, int B, int T,
                                  int C, int NH) = 0;

  // out = gelu(inp), tanh approximation, n elements.
  virtual void gelu_forward(Real* out, const Real* inp, std::size_t n) = 0;
  virtual void gelu_backward(Real* dinp, const Real* dout, const Real* inp, std::size_t n) = 0;

  // out = a + b, n elements.
  virtual void residual_forward(Real* out, const Real* a, const Real* b, std::size_t n) = 0;
  virtual void residual_backward(Real* da, Real* db, const Real* dout, std::size_t n) = 0;

  // Per row n of logits [N,Vp]: probs = softmax over the first V columns (the padding columns
  // V..Vp-1 get probability 0), losses[n] = -log probs[n, targets[n]].
  virtual void softmax_crossentropy_forward(Real* losses, Real* probs, const Real* logits,
                                            const std::int32_t* targets, int N, int V, int Vp) = 0;
  // dlogits += dlosses[n] * (probs - onehot(target)); the padding columns get 0.
  virtual void softmax_crossentropy_backward(Real* dlogits, const Real* dlosses, const Real* probs,
                                             const std::int32_t* targets, int N, int V, int Vp) = 0;

  // AdamW on n parameters and their moments m, v (see adamw_update_element).
  virtual void adamw_update(Real* params, const Real* grads, Real* m, Real* v, std::size_t n,
                            const AdamWStep& step) = 0;
  // sqrt(sum grads^2) over n elements.
  virtual double global_norm(const Real* grads, std::size_t n) = 0;
};

}  // namespace mpbench::workloads
