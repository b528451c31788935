#pragma once
// A GPT-2 decoder written once against TransformerOps: token and position embeddings, L pre-norm
// blocks (LayerNorm, fused QKV, causal attention, projection, residual; LayerNorm, 4x MLP with
// GELU, residual), final LayerNorm, LM head tied to the token embedding, softmax cross-entropy.
//
// All parameters live in one contiguous buffer (so are their gradients), tensor after tensor in the
// order of tensors(), named as Hugging Face names GPT-2's (h.0.attn.c_attn.weight, ...). Matrices
// are [out, in] as in PyTorch's Linear (Hugging Face's Conv1D stores the transpose).
#include <cstdint>
#include <string>
#include <vector>

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

template <typename Real>
class Gpt2Model {
 public:
  // Activations are sized for batches of B sequences of T <= config.max_seq tokens.
  Gpt2Model(const GptConfig& config, int B, int T, TransformerOps<Real>& ops);

  // GPT-2's initialisation: matrices normal(0, 0.02), the two residual projections of each block
  // scaled by 1/sqrt(2L), biases 0, LayerNorm weights 1; the padded rows of wte are 0.
  void init(std::uint64_t seed);

  const GptConfig& config() const { return config_; }
  const std::vector<ParameterTensor>& tensors() const { return tensors_; }
  const ParameterTensor& tensor(const std::string& name) const;
  std::vector<Real>& params() { return params_; }
  std::vector<Real>& grads() { return grads_; }

  // Runs the model on inputs [B,T] and returns the mean cross-entropy against targets [B,T].
  double forward(const std::int32_t* inputs, const std::int32_t* targets);
  // Adds the gradient of (loss_weight * mean loss of the last forward) to grads().
  void backward(double loss_weight = 1.0);
  void zero_grad();
  // probs [B,T,Vp] of the last forward.
  const std::vector<Real>& probs() const { return acts_.probs; }

 private:
  struct Layer;  // pointers to one block's parameters (or gradients)
  struct LayerActivations {
    std::vector<Real> ln1, ln1_mean, ln1_rstd, qkv, att, atty, attproj, residual2;
    std::vector<Real> ln2, ln2_mean, ln2_rstd, fch, fch_gelu, fcproj, residual3;
  };
  struct Activations {
    std::vector<Real> encoded;
    std::vector<LayerActivations> layers;
    std::vector<Real> lnf, lnf_mean, lnf_rstd, logits, probs, losses;
  };

  Layer layer(std::vector<Real>& buffer, int l);
  Real* at(std::vector<Real>& buffer, const std::string& name);
  void allocate(Activations& acts) const;
  void zero(Activations& acts) const;
  void block_forward(int l, const Real* residual);
  void block_backward(int l, const Real* residual, Real* dresidual);

  GptConfig config_;
  int B_, T_;
  TransformerOps<Real>& ops_;
  std::vector<ParameterTensor> tensors_;
  std::vector<Real> params_, grads_;
  Activations acts_, dacts_;
  std::vector<std::int32_t> inputs_, targets_;
};

extern template class Gpt2Model<float>;
extern template class Gpt2Model<double>;

}  // namespace mpbench::workloads
