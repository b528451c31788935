#pragma once
// Causal multi-head attention in one fused kernel per direction: cuDNN's scaled-dot-product
// attention, through the cuDNN frontend's graph API (flash attention: the [T,T] scores and
// probabilities stay on chip, the forward saves each row's softmax log-sum-exp for the backward).
// Operands are 16-bit (fp16 or bf16) [B,NH,T,hs] tensors, packed; softmax and accumulation in fp32.
//
// cuDNN is loaded when first needed (dlopen of libcudnn.so.9), so a machine without it still runs
// everything else. A build without the cuDNN frontend headers has no fused attention at all.
#include <cuda_runtime_api.h>

#include <compare>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "amp/format_info.hpp"

namespace mpbench::workloads {

struct AttentionShape {
  int B = 0, NH = 0, T = 0, hs = 0;
  auto operator<=>(const AttentionShape&) const = default;
};

class FusedAttention {
 public:
  virtual ~FusedAttention() = default;
  // e.g. "cuDNN 9.19.0 fused attention (frontend 1.32.0)".
  virtual std::string description() const = 0;
  // out = softmax(q k^T / sqrt(hs) over t2 <= t) v; stats [B,NH,T] = the natural log-sum-exp of
  // each row of scaled scores. q, k, v, out: [B,NH,T,hs] 16-bit codes of `format` (fp16 or bf16).
  virtual void forward(void* out, float* stats, const void* q, const void* k, const void* v,
                       const AttentionShape& shape, num::Format format) = 0;
  // dq, dk, dv (overwritten, same layout) from dout and what the forward read and saved.
  virtual void backward(void* dq, void* dk, void* dv, const void* dout, const void* q, const void* k, const void* v,
                        const void* out, const float* stats, const AttentionShape& shape, num::Format format) = 0;
};

// Device memory of at least `bytes` for a workspace, valid until the next call.
using WorkspaceProvider = std::function<void*(std::size_t bytes)>;

// Why this build or machine has no fused attention, or nullopt when it has.
std::optional<std::string> fused_attention_unavailable();

// cuDNN's fused attention, running on `stream`. Throws BackendError when it is unavailable.
std::unique_ptr<FusedAttention> make_fused_attention(cudaStream_t stream, WorkspaceProvider workspace);

}  // namespace mpbench::workloads
