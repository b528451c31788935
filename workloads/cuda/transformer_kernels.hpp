#pragma once
// Host-side launchers of the Transformer workload's own CUDA kernels (transformer_kernels.cu). Each
// one launches on launch.stream, checks the launch, and does nothing for empty work. Layouts and
// semantics are those of TransformerOps (workloads/ops.hpp); all arithmetic is fp32 unless a
// comment says otherwise.
//
// "Operand" buffers hold values as a GEMM of some input format reads them: fp32 and tf32 as
// floats (tf32 values rounded to nearest even, so a TF32 Tensor Core reads them exactly), fp16 and
// bf16 as 16-bit codes, rounded to nearest even with round_to_format's rules.
//
// Activations come as Tensor views (workloads/tensor.hpp): floats or fp16/bf16 codes. Kernels read
// them as floats and round each value they write to the tensor's storage once.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "amp/format_info.hpp"
#include "workloads/elementwise.hpp"
#include "workloads/tensor.hpp"

namespace mpbench::workloads::cuda_kernels {

struct Launch {
  cudaStream_t stream = nullptr;
  unsigned max_blocks = 1;  // grid-stride kernels launch at most this many blocks
};

// Bytes of one operand value in `format`'s storage: 2 for fp16 and bf16, 4 for fp32 and tf32.
std::size_t operand_bytes(num::Format format);

// Why this build's kernels cannot run on the current device, or nullopt when they can.
std::optional<std::string> kernel_image_problem();

// out[i] = in[i] as an operand of `format` (fp32, tf32, fp16 or bf16).
void convert_operands(const Launch& launch, void* out, ConstTensor<float> in, std::size_t n, num::Format format);
// x[i] = round_to_format(x[i], format).
void round_values(const Launch& launch, float* x, std::size_t n, num::Format format);
// out[n,o] = round_to_format(result[n,o] + bias[o], format) on [N,OC]; bias may be null, and
// result may be out's own floats (in place).
void add_bias_and_round(const Launch& launch, Tensor<float> out, const float* result, const float* bias, int N, int OC,
                        num::Format format);
// acc[i] += round_to_format(x[i], format).
void add_rounded(const Launch& launch, Tensor<float> acc, const float* x, std::size_t n, num::Format format);
// dbias[o] += round_to_format(sum_n dout[n,o], format) on dout [N,OC].
void add_column_sums(const Launch& launch, float* dbias, ConstTensor<float> dout, int N, int OC, num::Format format);

void encoder_forward(const Launch& launch, Tensor<float> out, const std::int32_t* tokens, const float* wte,
                     const float* wpe, int B, int T, int C);
void encoder_backward(const Launch& launch, float* dwte, float* dwpe, ConstTensor<float> dout,
                      const std::int32_t* tokens, int B, int T, int C);
void layernorm_forward(const Launch& launch, Tensor<float> out, float* mean, float* rstd, ConstTensor<float> inp,
                       const float* weight, const float* bias, int N, int C);
void layernorm_backward(const Launch& launch, Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                        ConstTensor<float> inp, const float* weight, const float* mean, const float* rstd, int N,
                        int C);
void gelu_forward(const Launch& launch, Tensor<float> out, ConstTensor<float> inp, std::size_t n);
void gelu_backward(const Launch& launch, Tensor<float> dinp, ConstTensor<float> dout, ConstTensor<float> inp,
                   std::size_t n);
void residual_forward(const Launch& launch, Tensor<float> out, ConstTensor<float> a, ConstTensor<float> b,
                      std::size_t n);
void residual_backward(const Launch& launch, Tensor<float> da, Tensor<float> db, ConstTensor<float> dout,
                       std::size_t n);
void softmax_crossentropy_forward(const Launch& launch, float* losses, float* probs, ConstTensor<float> logits,
                                  const std::int32_t* targets, int N, int V, int Vp);
void softmax_crossentropy_backward(const Launch& launch, Tensor<float> dlogits, const float* dlosses,
                                   const float* probs, const std::int32_t* targets, int N, int V, int Vp);
void adamw_update(const Launch& launch, float* params, const float* grads, float* m, float* v, std::size_t n,
                  const AdamWStep& step);
// partials[b] = sum of x[i]^2 over the elements block b visits, in double, for b < the returned
// number of blocks (at most launch.max_blocks); the caller sums them.
unsigned sum_of_squares(const Launch& launch, double* partials, const float* x, std::size_t n);

// Attention layouts. A "rows" tensor holds row b*T+t with `row_stride` elements between rows and
// head h in columns [h*hs, (h+1)*hs); a "heads" tensor is [B,NH,T,hs], packed.
// heads = rows, as operands of `format`.
void rows_to_heads(const Launch& launch, void* heads, ConstTensor<float> rows, int row_stride, int B, int T, int NH,
                   int hs, num::Format format);
// rows = heads, or rows += heads when `accumulate`; heads holds floats (fp32, tf32) or 16-bit codes
// (fp16, bf16) as `format` says.
void heads_to_rows(const Launch& launch, Tensor<float> rows, const void* heads, num::Format format, int row_stride,
                   int B, int T, int NH, int hs, bool accumulate);
// In place on the raw scores q k^T [BNH,T,T]: row t becomes softmax(scale * score) over t2 <= t, 0 above.
void causal_softmax(const Launch& launch, float* att, int BNH, int T, float scale);
// dscore = att * (datt - sum_t2 att * datt) * scale over t2 <= t (0 above), as operands of `format`.
void causal_softmax_backward(const Launch& launch, void* dscore, const float* att, const float* datt, int BNH, int T,
                             float scale, num::Format format);

}  // namespace mpbench::workloads::cuda_kernels
