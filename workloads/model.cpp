#include "workloads/model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.hpp"
#include "core/random.hpp"

namespace mpbench::workloads {
namespace {

// Normal(0, 1) number i of stream `seed`, by Box-Muller on two 53-bit uniforms.
double normal_at(std::uint64_t seed, std::uint64_t i) {
  const double u1 = (static_cast<double>(mix64(seed, 2 * i) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(mix64(seed, 2 * i + 1) >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::string block(int l, const char* rest) { return "h." + std::to_string(l) + "." + rest; }

bool has_half_outputs(const amp::ModePolicy& policy) {
  return std::any_of(policy.ops.begin(), policy.ops.end(),
                     [](const amp::OpPolicy& op) { return half_storage(op.output) != Storage::real; });
}

// The storage of a buffer of op category `op`'s outputs.
Storage storage_of(const amp::ModePolicy& policy, ActivationStorage storage, amp::OpCategory op) {
  return storage == ActivationStorage::half ? half_storage(policy.op(op).output) : Storage::real;
}

}  // namespace

std::string_view activation_storage_name(ActivationStorage storage) {
  return storage == ActivationStorage::half ? "half" : "emulated";
}

ActivationStorage parse_activation_storage(std::string_view name) {
  for (ActivationStorage storage : {ActivationStorage::half, ActivationStorage::emulated})
    if (activation_storage_name(storage) == name) return storage;
  throw UsageError("unknown activation storage '" + std::string(name) + "': use half or emulated");
}

ActivationStorage activation_storage_for(ActivationStorage requested, bool ops_have_half_storage, amp::Mode mode) {
  const bool half = requested == ActivationStorage::half && ops_have_half_storage && has_half_outputs(amp::policy(mode));
  return half ? ActivationStorage::half : ActivationStorage::emulated;
}

std::size_t activation_bytes_estimate(const GptConfig& config, int B, int T, AttentionKernels attention_kernels,
                                      amp::Mode mode, ActivationStorage storage) {
  using amp::OpCategory;
  const amp::ModePolicy& policy = amp::policy(mode);
  const std::size_t N = static_cast<std::size_t>(B) * T;
  const std::size_t C = config.channels;
  const std::size_t Vp = config.padded_vocab();
  const std::size_t L = config.layers;
  const std::size_t attention = attention_saved_elements(attention_kernels, B, T, config.channels, config.heads);
  const auto of = [&](OpCategory op) { return element_bytes<float>(storage_of(policy, storage, op)); };
  const std::size_t matmul = of(OpCategory::matmul), add = of(OpCategory::add_concat);
  const std::size_t norm = of(OpCategory::layernorm);
  // Per layer, the forward: ln1, ln2 [N,C]; qkv [N,3C], attproj, fcproj [N,C], fch [N,4C] out of
  // GEMMs; atty [N,C]; residual2, residual3 [N,C]; fch_gelu [N,4C]; four [N] statistics and what
  // the attention saves, in Real. The gradients: the GEMMs' input gradients dln1, datty, dln2
  // [N,C] and dfch_gelu [N,4C], the residual branch gradients dattproj, dfcproj [N,C] (matmul's
  // type), dresidual2, dresidual3, dqkv (attention's type), dfch (GELU's type).
  const std::size_t layer_forward = 2 * N * C * norm + 9 * N * C * matmul + N * C * of(OpCategory::attention) +
                                    2 * N * C * add + 4 * N * C * of(OpCategory::gelu) +
                                    (4 * N + attention) * sizeof(float);
  const std::size_t layer_gradients = 9 * N * C * matmul + 2 * N * C * add + 3 * N * C * of(OpCategory::attention) +
                                      4 * N * C * of(OpCategory::gelu);
  // Outside the blocks: encoded, lnf [N,C], logits [N,Vp]; the forward adds lnf's two statistics,
  // the probabilities [N,Vp] and the losses [N]; the gradients, dencoded, dlnf, dlogits and dlosses.
  const std::size_t forward = N * C * of(OpCategory::embedding) + N * C * norm + N * Vp * matmul +
                              (2 * N + N * Vp + N) * sizeof(float);
  const std::size_t gradients = N * C * add + N * C * matmul + N * Vp * matmul + N * sizeof(float);
  return L * (layer_forward + layer_gradients) + forward + gradients + 2 * N * sizeof(std::int32_t);
}

GemmPrecision gemm_precision(amp::Mode mode) {
  switch (mode) {
    case amp::Mode::tf32: return GemmPrecision::tf32;
    case amp::Mode::amp_fp16: return GemmPrecision::fp16;
    case amp::Mode::amp_bf16:
    case amp::Mode::bf16: return GemmPrecision::bf16;
    case amp::Mode::fp8:
    case amp::Mode::fp8_current:
    case amp::Mode::mxfp8: return GemmPrecision::fp8_e4m3;
    case amp::Mode::fp32: break;
  }
  return GemmPrecision::fp32;
}

Fp8Recipe fp8_recipe(amp::Mode mode) {
  if (mode == amp::Mode::fp8) return Fp8Recipe::delayed;
  if (mode == amp::Mode::fp8_current) return Fp8Recipe::current;
  if (mode == amp::Mode::mxfp8) return Fp8Recipe::mxfp8;
  return Fp8Recipe::none;
}

std::vector<ParameterTensor> parameter_layout(const GptConfig& config) {
  const std::size_t C = config.channels;
  std::vector<ParameterTensor> tensors;
  std::size_t offset = 0;
  auto add = [&](std::string name, std::size_t size, bool is_matrix) {
    tensors.push_back({std::move(name), offset, size, is_matrix});
    offset += size;
  };
  add("wte.weight", static_cast<std::size_t>(config.padded_vocab()) * C, true);
  add("wpe.weight", static_cast<std::size_t>(config.max_seq) * C, true);
  for (int l = 0; l < config.layers; ++l) {
    add(block(l, "ln_1.weight"), C, false);
    add(block(l, "ln_1.bias"), C, false);
    add(block(l, "attn.c_attn.weight"), 3 * C * C, true);
    add(block(l, "attn.c_attn.bias"), 3 * C, false);
    add(block(l, "attn.c_proj.weight"), C * C, true);
    add(block(l, "attn.c_proj.bias"), C, false);
    add(block(l, "ln_2.weight"), C, false);
    add(block(l, "ln_2.bias"), C, false);
    add(block(l, "mlp.c_fc.weight"), 4 * C * C, true);
    add(block(l, "mlp.c_fc.bias"), 4 * C, false);
    add(block(l, "mlp.c_proj.weight"), 4 * C * C, true);
    add(block(l, "mlp.c_proj.bias"), C, false);
  }
  add("ln_f.weight", C, false);
  add("ln_f.bias", C, false);
  return tensors;
}

template <typename Real>
struct Gpt2Model<Real>::Layer {
  Real *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
};

template <typename Real>
Gpt2Model<Real>::Gpt2Model(const GptConfig& config, int B, int T, TransformerOps<Real>& ops, amp::Mode mode,
                           AttentionKernels attention, ActivationStorage storage)
    : config_(config),
      B_(B),
      T_(T),
      ops_(ops),
      policy_(amp::policy(mode)),
      attention_(attention),
      storage_(activation_storage_for(storage, ops.has_half_storage(), mode)),
      tensors_(parameter_layout(config)) {
  if (B < 1 || T < 1 || T > config.max_seq) {
    throw UsageError("sequence length " + std::to_string(T) + " is outside [1, " +
                     std::to_string(config.max_seq) + "] for config '" + config.name + "'");
  }
  if (config.channels % config.heads != 0) {
    throw UsageError("config '" + config.name + "': channels must be a multiple of heads");
  }
  configure_ops();
  const std::size_t count = tensors_.back().offset + tensors_.back().size;
  params_ = OpsArray<Real>(ops, count);
  grads_ = OpsArray<Real>(ops, count);
  activation_bytes_ = allocate(acts_, false) + allocate(dacts_, true);
  inputs_ = OpsArray<std::int32_t>(ops, static_cast<std::size_t>(B) * T);
  targets_ = OpsArray<std::int32_t>(ops, static_cast<std::size_t>(B) * T);
}

template <typename Real>
const ParameterTensor& Gpt2Model<Real>::tensor(const std::string& name) const {
  const auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const auto& t) { return t.name == name; });
  if (it == tensors_.end()) throw UsageError("the model has no parameter tensor '" + name + "'");
  return *it;
}

template <typename Real>
void Gpt2Model<Real>::upload_params(const std::vector<Real>& values) {
  if (values.size() != params_.size()) {
    throw UsageError("expected " + std::to_string(params_.size()) + " parameters for config '" + config_.name +
                     "', got " + std::to_string(values.size()));
  }
  params_.upload(values);
}

template <typename Real>
Real* Gpt2Model<Real>::at(OpsArray<Real>& buffer, const std::string& name) {
  return buffer.data() + tensor(name).offset;
}

template <typename Real>
typename Gpt2Model<Real>::Layer Gpt2Model<Real>::layer(OpsArray<Real>& buffer, int l) {
  return Layer{at(buffer, block(l, "ln_1.weight")),        at(buffer, block(l, "ln_1.bias")),
               at(buffer, block(l, "attn.c_attn.weight")), at(buffer, block(l, "attn.c_attn.bias")),
               at(buffer, block(l, "attn.c_proj.weight")), at(buffer, block(l, "attn.c_proj.bias")),
               at(buffer, block(l, "ln_2.weight")),        at(buffer, block(l, "ln_2.bias")),
               at(buffer, block(l, "mlp.c_fc.weight")),    at(buffer, block(l, "mlp.c_fc.bias")),
               at(buffer, block(l, "mlp.c_proj.weight")),  at(buffer, block(l, "mlp.c_proj.bias"))};
}

template <typename Real>
Gpt2Model<Real>::Buffer::Buffer(OpsMemory& memory, std::size_t count, Storage storage)
    : bytes_(memory, count * element_bytes<Real>(storage)), storage_(storage), count_(count) {}

template <typename Real>
Storage Gpt2Model<Real>::storage_for(amp::OpCategory op) const {
  return storage_of(policy_, storage_, op);
}

// Each buffer is in the storage of the op category whose outputs it holds; a gradient, in that of
// the op that writes it in the backward (a GEMM's input gradient: matmul).
template <typename Real>
std::size_t Gpt2Model<Real>::allocate(Activations& acts, bool gradients) {
  using amp::OpCategory;
  const std::size_t N = static_cast<std::size_t>(B_) * T_;
  const std::size_t C = config_.channels;
  // The backward needs no gradients of the saved statistics nor of what the attention saves.
  const std::size_t saved_rows = gradients ? 0 : N;
  const std::size_t attention = gradients ? 0 : attention_saved_elements(attention_, B_, T_, config_.channels, config_.heads);
  std::size_t bytes = 0;
  auto make = [&](std::size_t count, OpCategory forward_op, OpCategory backward_op) {
    Buffer buffer(ops_, count, storage_for(gradients ? backward_op : forward_op));
    bytes += buffer.bytes();
    return buffer;
  };
  auto make_real = [&](std::size_t count) {
    OpsArray<Real> array(ops_, count);
    bytes += array.bytes();
    return array;
  };
  const OpCategory matmul = OpCategory::matmul, add = OpCategory::add_concat;
  acts.encoded = make(N * C, OpCategory::embedding, add);
  acts.layers.resize(config_.layers);
  for (LayerActivations& a : acts.layers) {
    a.ln1 = make(N * C, OpCategory::layernorm, matmul);
    a.qkv = make(N * 3 * C, matmul, OpCategory::attention);
    a.atty = make(N * C, OpCategory::attention, matmul);
    a.attproj = make(N * C, matmul, matmul);
    a.residual2 = make(N * C, add, add);
    a.ln2 = make(N * C, OpCategory::layernorm, matmul);
    a.fch = make(N * 4 * C, matmul, OpCategory::gelu);
    a.fch_gelu = make(N * 4 * C, OpCategory::gelu, matmul);
    a.fcproj = make(N * C, matmul, matmul);
    a.residual3 = make(N * C, add, add);
    for (auto* v : {&a.ln1_mean, &a.ln1_rstd, &a.ln2_mean, &a.ln2_rstd}) *v = make_real(saved_rows);
    a.att = make_real(attention);
  }
  acts.lnf = make(N * C, OpCategory::layernorm, matmul);
  acts.logits = make(N * config_.padded_vocab(), matmul, matmul);
  acts.lnf_mean = make_real(saved_rows);
  acts.lnf_rstd = make_real(saved_rows);
  acts.probs = make_real(gradients ? 0 : N * config_.padded_vocab());
  acts.losses = make_real(N);
  return bytes;
}

template <typename Real>
void Gpt2Model<Real>::zero(Activations& acts) {
  for (Buffer* v : {&acts.encoded, &acts.lnf, &acts.logits}) v->zero();
  for (LayerActivations& a : acts.layers) {
    for (Buffer* v : {&a.ln1, &a.qkv, &a.atty, &a.attproj, &a.residual2, &a.ln2, &a.fch, &a.fch_gelu, &a.fcproj,
                      &a.residual3}) {
      v->zero();
    }
    for (auto* v : {&a.ln1_mean, &a.ln1_rstd, &a.att, &a.ln2_mean, &a.ln2_rstd}) v->zero();
  }
  for (auto* v : {&acts.lnf_mean, &acts.lnf_rstd, &acts.probs, &acts.losses}) v->zero();
}

template <typename Real>
void Gpt2Model<Real>::init(std::uint64_t seed) {
  std::vector<Real> values(params_.size(), Real(0));
  const double residual_scale = 1.0 / std::sqrt(2.0 * config_.layers);
  for (const ParameterTensor& t : tensors_) {
    const bool layernorm_weight = t.name.ends_with("ln_1.weight") || t.name.ends_with("ln_2.weight") ||
                                  t.name == "ln_f.weight";
    const bool residual_projection = t.name.ends_with("c_proj.weight");
    for (std::size_t i = 0; i < t.size; ++i) {
      double value = 0.0;
      if (layernorm_weight) {
        value = 1.0;
      } else if (t.is_matrix) {
        value = 0.02 * normal_at(seed, t.offset + i) * (residual_projection ? residual_scale : 1.0);
      }
      values[t.offset + i] = static_cast<Real>(value);
    }
  }
  // The padded vocabulary rows are never looked up nor predicted: keep them 0.
  const std::size_t C = config_.channels;
  std::fill(values.begin() + static_cast<std::ptrdiff_t>(config_.vocab * C),
            values.begin() + static_cast<std::ptrdiff_t>(config_.padded_vocab() * C), Real(0));
  params_.upload(values);
}

template <typename Real>
void Gpt2Model<Real>::configure_ops() {
  const Fp8Recipe recipe = fp8_recipe(policy_.mode);
  if (ops_.fp8().recipe() != recipe) ops_.fp8().configure(recipe);
  ops_.set_matmul_precision({gemm_precision(policy_.mode), policy_.op(amp::OpCategory::matmul).output});
  ops_.set_attention(attention_, {config_.head_size(), T_});
}

template <typename Real>
void Gpt2Model<Real>::store(Buffer& x, amp::OpCategory op) {
  const num::Format format = policy_.op(op).output;
  if (format != num::Format::fp32 && x.storage() == Storage::real) ops_.round_to(x.tensor().real("store"), x.size(), format);
}

template <typename Real>
void Gpt2Model<Real>::block_forward(int l, Buffer& residual) {
  using amp::OpCategory;
  const int N = B_ * T_, C = config_.channels;
  const Layer p = layer(params_, l);
  LayerActivations& a = acts_.layers[l];
  const Phase fwd = Phase::forward;
  in_op_range(ops_, "ln_1", l, fwd, [&] {
    ops_.layernorm_forward(a.ln1.tensor(), a.ln1_mean.data(), a.ln1_rstd.data(), residual.tensor(), p.ln1w, p.ln1b,
                           N, C);
    store(a.ln1, OpCategory::layernorm);
  });
  in_op_range(ops_, "c_attn", l, fwd,
              [&] { ops_.matmul_forward(a.qkv.tensor(), a.ln1.tensor(), p.qkvw, p.qkvb, N, C, 3 * C); });
  in_op_range(ops_, "attention", l, fwd, [&] {
    ops_.attention_forward(a.atty.tensor(), a.att.data(), a.qkv.tensor(), B_, T_, C, config_.heads);
    store(a.atty, OpCategory::attention);
  });
  in_op_range(ops_, "attn.c_proj", l, fwd,
              [&] { ops_.matmul_forward(a.attproj.tensor(), a.atty.tensor(), p.attprojw, p.attprojb, N, C, C); });
  in_op_range(ops_, "residual_1", l, fwd, [&] {
    ops_.residual_forward(a.residual2.tensor(), residual.tensor(), a.attproj.tensor(), a.residual2.size());
    store(a.residual2, OpCategory::add_concat);
  });
  in_op_range(ops_, "ln_2", l, fwd, [&] {
    ops_.layernorm_forward(a.ln2.tensor(), a.ln2_mean.data(), a.ln2_rstd.data(), a.residual2.tensor(), p.ln2w,
                           p.ln2b, N, C);
    store(a.ln2, OpCategory::layernorm);
  });
  in_op_range(ops_, "c_fc", l, fwd,
              [&] { ops_.matmul_forward(a.fch.tensor(), a.ln2.tensor(), p.fcw, p.fcb, N, C, 4 * C); });
  in_op_range(ops_, "gelu", l, fwd, [&] {
    ops_.gelu_forward(a.fch_gelu.tensor(), a.fch.tensor(), a.fch.size());
    store(a.fch_gelu, OpCategory::gelu);
  });
  in_op_range(ops_, "mlp.c_proj", l, fwd, [&] {
    ops_.matmul_forward(a.fcproj.tensor(), a.fch_gelu.tensor(), p.fcprojw, p.fcprojb, N, 4 * C, C);
  });
  in_op_range(ops_, "residual_2", l, fwd, [&] {
    ops_.residual_forward(a.residual3.tensor(), a.residual2.tensor(), a.fcproj.tensor(), a.residual3.size());
    store(a.residual3, OpCategory::add_concat);
  });
}

template <typename Real>
double Gpt2Model<Real>::forward(const std::int32_t* inputs, const std::int32_t* targets) {
  using amp::OpCategory;
  const int N = B_ * T_, C = config_.channels;
  const int V = config_.vocab, Vp = config_.padded_vocab();
  for (int i = 0; i < N; ++i) {
    if (inputs[i] < 0 || inputs[i] >= V || targets[i] < 0 || targets[i] >= V) {
      throw UsageError("token outside the vocabulary of " + std::to_string(V) + " at position " + std::to_string(i));
    }
  }
  configure_ops();
  in_op_range(ops_, "inputs", -1, Phase::forward, [&] {
    inputs_.upload(std::vector<std::int32_t>(inputs, inputs + N));
    targets_.upload(std::vector<std::int32_t>(targets, targets + N));
  });
  in_op_range(ops_, "embedding", -1, Phase::forward, [&] {
    ops_.encoder_forward(acts_.encoded.tensor(), inputs_.data(), at(params_, "wte.weight"), at(params_, "wpe.weight"),
                         B_, T_, C);
    store(acts_.encoded, OpCategory::embedding);
  });
  Buffer* residual = &acts_.encoded;
  for (int l = 0; l < config_.layers; ++l) {
    block_forward(l, *residual);
    residual = &acts_.layers[l].residual3;
  }
  in_op_range(ops_, "ln_f", -1, Phase::forward, [&] {
    ops_.layernorm_forward(acts_.lnf.tensor(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), residual->tensor(),
                           at(params_, "ln_f.weight"), at(params_, "ln_f.bias"), N, C);
    store(acts_.lnf, OpCategory::layernorm);
  });
  in_op_range(ops_, "lm_head", -1, Phase::forward, [&] {
    ops_.matmul_forward(acts_.logits.tensor(), acts_.lnf.tensor(), at(params_, "wte.weight"), nullptr, N, C, Vp);
  });
  in_op_range(ops_, "cross_entropy", -1, Phase::forward, [&] {
    ops_.softmax_crossentropy_forward(acts_.losses.data(), acts_.probs.data(), acts_.logits.tensor(),
                                      targets_.data(), N, V, Vp);
  });
  has_forward_ = true;
  double total = 0;
  in_op_range(ops_, "loss", -1, Phase::forward, [&] {
    for (Real loss : acts_.losses.download()) total += loss;
  });
  return total / N;
}

template <typename Real>
void Gpt2Model<Real>::block_backward(int l, Buffer& residual, Buffer& dresidual) {
  using amp::OpCategory;
  const int N = B_ * T_, C = config_.channels;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  const Layer p = layer(params_, l);
  const Layer g = layer(grads_, l);
  LayerActivations& a = acts_.layers[l];
  LayerActivations& d = dacts_.layers[l];
  const Phase bwd = Phase::backward;
  const std::size_t first = 2 + 12 * static_cast<std::size_t>(l);  // the block's ln_1.weight in tensors()
  // The gradient reaching a low-precision branch through a residual add is held in the branch's
  // type, as autocast's cast back to the input dtype does.
  in_op_range(ops_, "residual_2", l, bwd, [&] {
    ops_.residual_backward(d.residual2.tensor(), d.fcproj.tensor(), d.residual3.tensor(), NC);
    store(d.fcproj, OpCategory::matmul);
  });
  in_op_range(ops_, "mlp.c_proj", l, bwd, [&] {
    ops_.matmul_backward(d.fch_gelu.tensor(), g.fcprojw, g.fcprojb, d.fcproj.tensor(), a.fch_gelu.tensor(),
                         p.fcprojw, N, 4 * C, C);
    gradients_final_from(first + 10);
  });
  tell_final();
  in_op_range(ops_, "gelu", l, bwd, [&] {
    ops_.gelu_backward(d.fch.tensor(), d.fch_gelu.tensor(), a.fch.tensor(), a.fch.size());
    store(d.fch, OpCategory::gelu);
  });
  in_op_range(ops_, "c_fc", l, bwd, [&] {
    ops_.matmul_backward(d.ln2.tensor(), g.fcw, g.fcb, d.fch.tensor(), a.ln2.tensor(), p.fcw, N, C, 4 * C);
    gradients_final_from(first + 8);
  });
  tell_final();
  in_op_range(ops_, "ln_2", l, bwd, [&] {
    ops_.layernorm_backward(d.residual2.tensor(), g.ln2w, g.ln2b, d.ln2.tensor(), a.residual2.tensor(), p.ln2w,
                            a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
    store(d.residual2, OpCategory::add_concat);
    gradients_final_from(first + 6);
  });
  tell_final();
  in_op_range(ops_, "residual_1", l, bwd, [&] {
    ops_.residual_backward(dresidual.tensor(), d.attproj.tensor(), d.residual2.tensor(), NC);
    store(d.attproj, OpCategory::matmul);
  });
  in_op_range(ops_, "attn.c_proj", l, bwd, [&] {
    ops_.matmul_backward(d.atty.tensor(), g.attprojw, g.attprojb, d.attproj.tensor(), a.atty.tensor(), p.attprojw,
                         N, C, C);
    gradients_final_from(first + 4);
  });
  tell_final();
  in_op_range(ops_, "attention", l, bwd, [&] {
    ops_.attention_backward(d.qkv.tensor(), d.atty.tensor(), a.qkv.tensor(), a.att.data(), B_, T_, C,
                            config_.heads);
    store(d.qkv, OpCategory::attention);
  });
  in_op_range(ops_, "c_attn", l, bwd, [&] {
    ops_.matmul_backward(d.ln1.tensor(), g.qkvw, g.qkvb, d.qkv.tensor(), a.ln1.tensor(), p.qkvw, N, C, 3 * C);
    gradients_final_from(first + 2);
  });
  tell_final();
  in_op_range(ops_, "ln_1", l, bwd, [&] {
    ops_.layernorm_backward(dresidual.tensor(), g.ln1w, g.ln1b, d.ln1.tensor(), residual.tensor(), p.ln1w,
                            a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
    store(dresidual, OpCategory::add_concat);
    gradients_final_from(first + 0);
  });
  tell_final();
}

template <typename Real>
void Gpt2Model<Real>::gradients_final_from(std::size_t index) {
  const std::size_t offset = tensors_.at(index).offset;
  if (offset >= final_offset_) return;
  // Parameter gradients are kept in the type the optimizer reads (bf16 in the bf16 mode).
  const num::Format gradient_format = policy_.op(amp::OpCategory::optimizer).input;
  if (gradient_format != num::Format::fp32)
    ops_.round_to(grads_.data() + offset, final_offset_ - offset, gradient_format);
  final_offset_ = offset;
}

template <typename Real>
void Gpt2Model<Real>::tell_final() {
  if (final_offset_ == told_offset_) return;
  told_offset_ = final_offset_;
  if (final_from_ && *final_from_) (*final_from_)(final_offset_);
}

template <typename Real>
void Gpt2Model<Real>::backward(double loss_weight, const GradientsFinal& final_from) {
  using amp::OpCategory;
  if (!has_forward_) throw UsageError("backward() needs a forward() first");
  const int N = B_ * T_, C = config_.channels;
  const int V = config_.vocab, Vp = config_.padded_vocab();
  configure_ops();
  final_from_ = &final_from;
  final_offset_ = told_offset_ = grads_.size();
  struct Forget {
    const GradientsFinal*& callback;
    ~Forget() { callback = nullptr; }
  } forget{final_from_};
  in_op_range(ops_, "zero_activation_grads", -1, Phase::backward, [&] {
    zero(dacts_);
    dacts_.losses.upload(std::vector<Real>(dacts_.losses.size(), static_cast<Real>(loss_weight / N)));
  });
  in_op_range(ops_, "cross_entropy", -1, Phase::backward, [&] {
    ops_.softmax_crossentropy_backward(dacts_.logits.tensor(), dacts_.losses.data(), acts_.probs.data(),
                                       targets_.data(), N, V, Vp);
    store(dacts_.logits, OpCategory::matmul);
  });
  in_op_range(ops_, "lm_head", -1, Phase::backward, [&] {
    ops_.matmul_backward(dacts_.lnf.tensor(), at(grads_, "wte.weight"), nullptr, dacts_.logits.tensor(),
                         acts_.lnf.tensor(), at(params_, "wte.weight"), N, C, Vp);
  });
  const int last = config_.layers - 1;
  Buffer& residual = last >= 0 ? acts_.layers[last].residual3 : acts_.encoded;
  Buffer& dresidual = last >= 0 ? dacts_.layers[last].residual3 : dacts_.encoded;
  in_op_range(ops_, "ln_f", -1, Phase::backward, [&] {
    ops_.layernorm_backward(dresidual.tensor(), at(grads_, "ln_f.weight"), at(grads_, "ln_f.bias"),
                            dacts_.lnf.tensor(), residual.tensor(), at(params_, "ln_f.weight"), acts_.lnf_mean.data(),
                            acts_.lnf_rstd.data(), N, C);
    store(dresidual, OpCategory::add_concat);
    gradients_final_from(tensors_.size() - 2);  // ln_f.weight
  });
  tell_final();
  for (int l = last; l >= 0; --l) {
    Buffer& block_input = l > 0 ? acts_.layers[l - 1].residual3 : acts_.encoded;
    Buffer& dblock_input = l > 0 ? dacts_.layers[l - 1].residual3 : dacts_.encoded;
    block_backward(l, block_input, dblock_input);
  }
  in_op_range(ops_, "embedding", -1, Phase::backward, [&] {
    ops_.encoder_backward(at(grads_, "wte.weight"), at(grads_, "wpe.weight"), dacts_.encoded.tensor(), inputs_.data(),
                          B_, T_, C);
    gradients_final_from(0);  // wte (its last contribution) and wpe
  });
  tell_final();
}

template class Gpt2Model<float>;
template class Gpt2Model<double>;

}  // namespace mpbench::workloads
