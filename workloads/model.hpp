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
// mode's precision and every activation the policy keeps in fp16/bf16 is held in that type, in the
// forward and the backward pass alike. With ops that have no half storage, or when asked
// (ActivationStorage::emulated), such activations are Real buffers rounded to the type after each
// op instead: the same values, in twice the bytes.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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

// How a model holds the activations its mode keeps in fp16/bf16: in that type (2 bytes each), or
// in Real buffers holding the rounded values.
enum class ActivationStorage { half, emulated };
std::string_view activation_storage_name(ActivationStorage storage);  // "half", "emulated"
// The storage of that name; UsageError for any other.
ActivationStorage parse_activation_storage(std::string_view name);
// What a model in `mode` asked for `requested` uses: half only when the mode keeps some activations
// in fp16/bf16 and the ops have half storage.
ActivationStorage activation_storage_for(ActivationStorage requested, bool ops_have_half_storage, amp::Mode mode);

// Bytes of the activations, their gradients and the token arrays Gpt2Model<float> allocates for
// batches of B sequences of T tokens with `attention` in `mode`, its activations held as `storage`
// says (for a memory check before allocating anything).
std::size_t activation_bytes_estimate(const GptConfig& config, int B, int T,
                                      AttentionKernels attention = AttentionKernels::unfused,
                                      amp::Mode mode = amp::Mode::fp32,
                                      ActivationStorage storage = ActivationStorage::emulated);

// The GEMM precision a mode runs its matmuls in.
GemmPrecision gemm_precision(amp::Mode mode);
// The fp8 modes' scaling recipe: fp8-delayed delayed, fp8-current current, mxfp8 mxfp8, none for the others.
Fp8Recipe fp8_recipe(amp::Mode mode);

template <typename Real>
class Gpt2Model {
 public:
  // Activations are sized for batches of B sequences of T <= config.max_seq tokens; the attention
  // runs on `attention` kernels (UsageError when the ops have none such). Half storage is used
  // only where the ops have it.
  Gpt2Model(const GptConfig& config, int B, int T, TransformerOps<Real>& ops, amp::Mode mode = amp::Mode::fp32,
            AttentionKernels attention = AttentionKernels::unfused,
            ActivationStorage storage = ActivationStorage::half);

  // GPT-2's initialisation: matrices normal(0, 0.02), the two residual projections of each block
  // scaled by 1/sqrt(2L), biases 0, LayerNorm weights 1; the padded rows of wte are 0.
  void init(std::uint64_t seed);

  const GptConfig& config() const { return config_; }
  const amp::ModePolicy& policy() const { return policy_; }
  AttentionKernels attention() const { return attention_; }
  // How the activations are held: half only when the mode has half-type activations and the ops
  // have half storage.
  ActivationStorage activation_storage() const { return storage_; }
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
  // Told during backward() each time the gradients grads()[offset, parameter_count()) have all
  // been given their last contribution of this backward pass (and are rounded to the type the
  // optimizer reads): from the end of the buffer down, as the backward runs from the last layer to
  // the first (ln_f, then each block's tensors from mlp.c_proj to ln_1, last block first) and ends
  // with offset 0 (wpe and wte: wte's gradient, tied to the LM head, gets its last contribution from
  // the embedding's backward, after every block). Data parallelism starts a bucket's all-reduce
  // there; the backward does not touch those gradients again.
  using GradientsFinal = std::function<void(std::size_t offset)>;
  // Adds the gradient of (loss_weight * mean loss of the last forward) to grads().
  void backward(double loss_weight = 1.0, const GradientsFinal& final_from = {});
  void zero_grad() { grads_.zero(); }

 private:
  struct Layer;  // pointers to one block's parameters (or gradients)
  // An activation buffer of `count` elements in Real or half storage.
  class Buffer {
   public:
    Buffer() = default;
    Buffer(OpsMemory& memory, std::size_t count, Storage storage);
    Tensor<Real> tensor() { return {bytes_.data(), storage_}; }
    Storage storage() const { return storage_; }
    std::size_t size() const { return count_; }
    std::size_t bytes() const { return bytes_.size(); }
    void zero() { bytes_.zero(); }

   private:
    OpsArray<std::byte> bytes_;
    Storage storage_ = Storage::real;
    std::size_t count_ = 0;
  };
  struct LayerActivations {
    Buffer ln1, qkv, atty, attproj, residual2, ln2, fch, fch_gelu, fcproj, residual3;
    OpsArray<Real> ln1_mean, ln1_rstd, att, ln2_mean, ln2_rstd;
  };
  struct Activations {
    Buffer encoded, lnf, logits;
    std::vector<LayerActivations> layers;
    OpsArray<Real> lnf_mean, lnf_rstd, probs, losses;
  };

  Layer layer(OpsArray<Real>& buffer, int l);
  Real* at(OpsArray<Real>& buffer, const std::string& name);
  // Activations for the forward pass, or (gradients = true) the gradients the backward writes.
  std::size_t allocate(Activations& acts, bool gradients);
  void zero(Activations& acts);
  // Sets the ops to the mode's GEMM precision and the model's attention kernels (the ops may be
  // shared with other models).
  void configure_ops();
  // The storage of a buffer holding op category `op`'s outputs.
  Storage storage_for(amp::OpCategory op) const;
  // Rounds x's values to the format the policy gives op category `op`'s outputs, unless x holds
  // them in that format already.
  void store(Buffer& x, amp::OpCategory op);
  void block_forward(int l, Buffer& residual);
  void block_backward(int l, Buffer& residual, Buffer& dresidual);
  // The gradients from tensor `index` of tensors() to the end are final: rounds the newly final
  // ones to the optimizer's type (in the op's range). tell_final() then tells final_from_.
  void gradients_final_from(std::size_t index);
  void tell_final();

  GptConfig config_;
  int B_, T_;
  TransformerOps<Real>& ops_;
  const amp::ModePolicy& policy_;
  AttentionKernels attention_;
  ActivationStorage storage_;
  std::vector<ParameterTensor> tensors_;
  OpsArray<Real> params_, grads_;
  Activations acts_, dacts_;
  std::size_t activation_bytes_ = 0;
  OpsArray<std::int32_t> inputs_, targets_;
  bool has_forward_ = false;
  const GradientsFinal* final_from_ = nullptr;  // during backward()
  std::size_t final_offset_ = 0;                // the gradients from here on are final
  std::size_t told_offset_ = 0;                 // what final_from_ was last told
};

extern template class Gpt2Model<float>;
extern template class Gpt2Model<double>;

}  // namespace mpbench::workloads
