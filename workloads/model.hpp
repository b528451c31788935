#pragma once
// A GPT-2 decoder written once against TransformerOps: token and position embeddings, L pre-norm
// blocks (LayerNorm, fused QKV, causal attention, projection, residual; LayerNorm, 4x MLP with
// GELU, residual), final LayerNorm, LM head tied to the token embedding, softmax cross-entropy.
//
// All parameters live in one contiguous buffer (so are their gradients), tensor after tensor in the
// order of tensors(), named as Hugging Face names GPT-2's (h.0.attn.c_attn.weight, ...). Matrices
// are [out, in] as in PyTorch's Linear (Hugging Face's Conv1D stores the transpose). Parameters,
// gradients and activations are in the ops' memory.
//
// A precision mode (amp/policy.hpp) decides how each op's outputs are stored: the GEMMs run in the
// mode's precision and every output the policy keeps in fp16/bf16 is rounded to it (values exactly
// as half storage holds them, kept in fp32 buffers), in the forward and the backward pass alike.
#include <cstdint>
#include <string>
#include <vector>

#include "amp/policy.hpp"
#include "workloads/config.hpp"
#include "workloads/ops.hpp"

namespace mpbench::workloads {

struct ParameterTensor {
  std::string name;
  std::size_t offset = 0;  // into the parameter buffer, in elements
  std::size_t size = 0;
  bool is_matrix = false;  // weight decay applies to matrices (embeddings included) only
};

// The tensors of a config, in buffer order.
std::vector<ParameterTensor> parameter_layout(const GptConfig& config);

// Bytes of the activations, their gradients and the token arrays Gpt2Model<float> allocates for
// batches of B sequences of T tokens with `attention` (for a memory check before allocating anything).
std::size_t activation_bytes_estimate(const GptConfig& config, int B, int T,
                                      AttentionKernels attention = AttentionKernels::unfused);

// The GEMM precision a mode runs its matmuls in.
GemmPrecision gemm_precision(amp::Mode mode);

template <typename Real>
class Gpt2Model {
 public:
  // Activations are sized for batches of B sequences of T <= config.max_seq tokens; the attention
  // runs on `attention` kernels (UsageError when the ops have none such).
  Gpt2Model(const GptConfig& config, int B, int T, TransformerOps<Real>& ops, amp::Mode mode = amp::Mode::fp32,
            AttentionKernels attention = AttentionKernels::unfused);

  // GPT-2's initialisation: matrices normal(0, 0.02), the two residual projections of each block
  // scaled by 1/sqrt(2L), biases 0, LayerNorm weights 1; the padded rows of wte are 0.
  void init(std::uint64_t seed);

  const GptConfig& config() const { return config_; }
  const amp::ModePolicy& policy() const { return policy_; }
  AttentionKernels attention() const { return attention_; }
  const std::vector<ParameterTensor>& tensors() const { return tensors_; }
  const ParameterTensor& tensor(const std::string& name) const;
  std::size_t parameter_count() const { return params_.size(); }
  Real* params() { return params_.data(); }
  Real* grads() { return grads_.data(); }
  std::vector<Real> download_params() const { return params_.download(); }
  void upload_params(const std::vector<Real>& values);
  std::vector<Real> download_grads() const { return grads_.download(); }
  // probs [B,T,Vp] of the last forward.
  std::vector<Real> download_probs() const { return acts_.probs.download(); }
  // Bytes of the activation and activation-gradient buffers.
  std::size_t activation_bytes() const { return activation_bytes_; }

  // Runs the model on host token arrays inputs [B,T] and returns the mean cross-entropy against
  // targets [B,T].
  double forward(const std::int32_t* inputs, const std::int32_t* targets);
  // Adds the gradient of (loss_weight * mean loss of the last forward) to grads().
  void backward(double loss_weight = 1.0);
  void zero_grad() { grads_.zero(); }

 private:
  struct Layer;  // pointers to one block's parameters (or gradients)
  struct LayerActivations {
    OpsArray<Real> ln1, ln1_mean, ln1_rstd, qkv, att, atty, attproj, residual2;
    OpsArray<Real> ln2, ln2_mean, ln2_rstd, fch, fch_gelu, fcproj, residual3;
  };
  struct Activations {
    OpsArray<Real> encoded;
    std::vector<LayerActivations> layers;
    OpsArray<Real> lnf, lnf_mean, lnf_rstd, logits, probs, losses;
  };

  Layer layer(OpsArray<Real>& buffer, int l);
  Real* at(OpsArray<Real>& buffer, const std::string& name);
  // Activations for the forward pass, or (gradients = true) the gradients the backward writes.
  std::size_t allocate(Activations& acts, bool gradients);
  void zero(Activations& acts);
  // Sets the ops to the mode's GEMM precision and the model's attention kernels (the ops may be
  // shared with other models).
  void configure_ops();
  // Rounds n values to the storage format the policy gives op category `op`'s outputs.
  void store(Real* x, std::size_t n, amp::OpCategory op);
  void block_forward(int l, const Real* residual);
  void block_backward(int l, const Real* residual, Real* dresidual);

  GptConfig config_;
  int B_, T_;
  TransformerOps<Real>& ops_;
  const amp::ModePolicy& policy_;
  AttentionKernels attention_;
  std::vector<ParameterTensor> tensors_;
  OpsArray<Real> params_, grads_;
  Activations acts_, dacts_;
  std::size_t activation_bytes_ = 0;
  OpsArray<std::int32_t> inputs_, targets_;
  bool has_forward_ = false;
};

extern template class Gpt2Model<float>;
extern template class Gpt2Model<double>;

}  // namespace mpbench::workloads
