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

}  // namespace

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
Gpt2Model<Real>::Gpt2Model(const GptConfig& config, int B, int T, TransformerOps<Real>& ops)
    : config_(config), B_(B), T_(T), ops_(ops), tensors_(parameter_layout(config)) {
  if (B < 1 || T < 1 || T > config.max_seq) {
    throw UsageError("sequence length " + std::to_string(T) + " is outside [1, " +
                     std::to_string(config.max_seq) + "] for config '" + config.name + "'");
  }
  if (config.channels % config.heads != 0) {
    throw UsageError("config '" + config.name + "': channels must be a multiple of heads");
  }
  const std::size_t count = tensors_.back().offset + tensors_.back().size;
  params_.assign(count, Real(0));
  grads_.assign(count, Real(0));
  allocate(acts_);
  allocate(dacts_);
}

template <typename Real>
const ParameterTensor& Gpt2Model<Real>::tensor(const std::string& name) const {
  const auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const auto& t) { return t.name == name; });
  if (it == tensors_.end()) throw UsageError("the model has no parameter tensor '" + name + "'");
  return *it;
}

template <typename Real>
Real* Gpt2Model<Real>::at(std::vector<Real>& buffer, const std::string& name) {
  return buffer.data() + tensor(name).offset;
}

template <typename Real>
typename Gpt2Model<Real>::Layer Gpt2Model<Real>::layer(std::vector<Real>& buffer, int l) {
  return Layer{at(buffer, block(l, "ln_1.weight")),        at(buffer, block(l, "ln_1.bias")),
               at(buffer, block(l, "attn.c_attn.weight")), at(buffer, block(l, "attn.c_attn.bias")),
               at(buffer, block(l, "attn.c_proj.weight")), at(buffer, block(l, "attn.c_proj.bias")),
               at(buffer, block(l, "ln_2.weight")),        at(buffer, block(l, "ln_2.bias")),
               at(buffer, block(l, "mlp.c_fc.weight")),    at(buffer, block(l, "mlp.c_fc.bias")),
               at(buffer, block(l, "mlp.c_proj.weight")),  at(buffer, block(l, "mlp.c_proj.bias"))};
}

template <typename Real>
void Gpt2Model<Real>::allocate(Activations& acts) const {
  const std::size_t N = static_cast<std::size_t>(B_) * T_;
  const std::size_t C = config_.channels;
  const std::size_t NH = config_.heads;
  acts.encoded.assign(N * C, Real(0));
  acts.layers.resize(config_.layers);
  for (LayerActivations& a : acts.layers) {
    for (auto* v : {&a.ln1, &a.atty, &a.attproj, &a.residual2, &a.ln2, &a.fcproj, &a.residual3}) v->assign(N * C, 0);
    for (auto* v : {&a.ln1_mean, &a.ln1_rstd, &a.ln2_mean, &a.ln2_rstd}) v->assign(N, 0);
    a.qkv.assign(N * 3 * C, 0);
    a.att.assign(B_ * NH * T_ * T_, 0);
    a.fch.assign(N * 4 * C, 0);
    a.fch_gelu.assign(N * 4 * C, 0);
  }
  acts.lnf.assign(N * C, 0);
  acts.lnf_mean.assign(N, 0);
  acts.lnf_rstd.assign(N, 0);
  acts.logits.assign(N * config_.padded_vocab(), 0);
  acts.probs.assign(N * config_.padded_vocab(), 0);
  acts.losses.assign(N, 0);
}

template <typename Real>
void Gpt2Model<Real>::zero(Activations& acts) const {
  auto clear = [](std::vector<Real>& v) { std::fill(v.begin(), v.end(), Real(0)); };
  clear(acts.encoded);
  for (LayerActivations& a : acts.layers) {
    for (auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.att, &a.atty, &a.attproj, &a.residual2, &a.ln2,
                    &a.ln2_mean, &a.ln2_rstd, &a.fch, &a.fch_gelu, &a.fcproj, &a.residual3}) {
      clear(*v);
    }
  }
  for (auto* v : {&acts.lnf, &acts.lnf_mean, &acts.lnf_rstd, &acts.logits, &acts.probs, &acts.losses}) clear(*v);
}

template <typename Real>
void Gpt2Model<Real>::init(std::uint64_t seed) {
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
      params_[t.offset + i] = static_cast<Real>(value);
    }
  }
  // The padded vocabulary rows are never looked up nor predicted: keep them 0.
  const std::size_t C = config_.channels;
  std::fill(params_.begin() + static_cast<std::ptrdiff_t>(config_.vocab * C),
            params_.begin() + static_cast<std::ptrdiff_t>(config_.padded_vocab() * C), Real(0));
}

template <typename Real>
void Gpt2Model<Real>::zero_grad() {
  std::fill(grads_.begin(), grads_.end(), Real(0));
}

template <typename Real>
void Gpt2Model<Real>::block_forward(int l, const Real* residual) {
  const int N = B_ * T_, C = config_.channels;
  const Layer p = layer(params_, l);
  LayerActivations& a = acts_.layers[l];
  ops_.layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), residual, p.ln1w, p.ln1b, N, C);
  ops_.matmul_forward(a.qkv.data(), a.ln1.data(), p.qkvw, p.qkvb, N, C, 3 * C);
  ops_.attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), B_, T_, C, config_.heads);
  ops_.matmul_forward(a.attproj.data(), a.atty.data(), p.attprojw, p.attprojb, N, C, C);
  ops_.residual_forward(a.residual2.data(), residual, a.attproj.data(), a.residual2.size());
  ops_.layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.residual2.data(), p.ln2w, p.ln2b,
                         N, C);
  ops_.matmul_forward(a.fch.data(), a.ln2.data(), p.fcw, p.fcb, N, C, 4 * C);
  ops_.gelu_forward(a.fch_gelu.data(), a.fch.data(), a.fch.size());
  ops_.matmul_forward(a.fcproj.data(), a.fch_gelu.data(), p.fcprojw, p.fcprojb, N, 4 * C, C);
  ops_.residual_forward(a.residual3.data(), a.residual2.data(), a.fcproj.data(), a.residual3.size());
}

template <typename Real>
double Gpt2Model<Real>::forward(const std::int32_t* inputs, const std::int32_t* targets) {
  const int N = B_ * T_, C = config_.channels;
  const int V = config_.vocab, Vp = config_.padded_vocab();
  for (int i = 0; i < N; ++i) {
    if (inputs[i] < 0 || inputs[i] >= V || targets[i] < 0 || targets[i] >= V) {
      throw UsageError("token outside the vocabulary of " + std::to_string(V) + " at position " + std::to_string(i));
    }
  }
  inputs_.assign(inputs, inputs + N);
  targets_.assign(targets, targets + N);
  ops_.encoder_forward(acts_.encoded.data(), inputs, at(params_, "wte.weight"), at(params_, "wpe.weight"), B_, T_,
                       C);
  const Real* residual = acts_.encoded.data();
  for (int l = 0; l < config_.layers; ++l) {
    block_forward(l, residual);
    residual = acts_.layers[l].residual3.data();
  }
  ops_.layernorm_forward(acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), residual,
                         at(params_, "ln_f.weight"), at(params_, "ln_f.bias"), N, C);
  ops_.matmul_forward(acts_.logits.data(), acts_.lnf.data(), at(params_, "wte.weight"), nullptr, N, C, Vp);
  ops_.softmax_crossentropy_forward(acts_.losses.data(), acts_.probs.data(), acts_.logits.data(), targets, N, V, Vp);
  double total = 0;
  for (Real loss : acts_.losses) total += loss;
  return total / N;
}

template <typename Real>
void Gpt2Model<Real>::block_backward(int l, const Real* residual, Real* dresidual) {
  const int N = B_ * T_, C = config_.channels;
  const Layer p = layer(params_, l);
  const Layer g = layer(grads_, l);
  LayerActivations& a = acts_.layers[l];
  LayerActivations& d = dacts_.layers[l];
  ops_.residual_backward(d.residual2.data(), d.fcproj.data(), d.residual3.data(), d.residual3.size());
  ops_.matmul_backward(d.fch_gelu.data(), g.fcprojw, g.fcprojb, d.fcproj.data(), a.fch_gelu.data(), p.fcprojw, N,
                       4 * C, C);
  ops_.gelu_backward(d.fch.data(), d.fch_gelu.data(), a.fch.data(), a.fch.size());
  ops_.matmul_backward(d.ln2.data(), g.fcw, g.fcb, d.fch.data(), a.ln2.data(), p.fcw, N, C, 4 * C);
  ops_.layernorm_backward(d.residual2.data(), g.ln2w, g.ln2b, d.ln2.data(), a.residual2.data(), p.ln2w,
                          a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
  ops_.residual_backward(dresidual, d.attproj.data(), d.residual2.data(), d.residual2.size());
  ops_.matmul_backward(d.atty.data(), g.attprojw, g.attprojb, d.attproj.data(), a.atty.data(), p.attprojw, N, C, C);
  ops_.attention_backward(d.qkv.data(), d.atty.data(), a.qkv.data(), a.att.data(), B_, T_, C, config_.heads);
  ops_.matmul_backward(d.ln1.data(), g.qkvw, g.qkvb, d.qkv.data(), a.ln1.data(), p.qkvw, N, C, 3 * C);
  ops_.layernorm_backward(dresidual, g.ln1w, g.ln1b, d.ln1.data(), residual, p.ln1w, a.ln1_mean.data(),
                          a.ln1_rstd.data(), N, C);
}

template <typename Real>
void Gpt2Model<Real>::backward(double loss_weight) {
  if (inputs_.empty()) throw UsageError("backward() needs a forward() first");
  const int N = B_ * T_, C = config_.channels;
  const int V = config_.vocab, Vp = config_.padded_vocab();
  zero(dacts_);
  std::fill(dacts_.losses.begin(), dacts_.losses.end(), static_cast<Real>(loss_weight / N));
  ops_.softmax_crossentropy_backward(dacts_.logits.data(), dacts_.losses.data(), acts_.probs.data(),
                                     targets_.data(), N, V, Vp);
  ops_.matmul_backward(dacts_.lnf.data(), at(grads_, "wte.weight"), nullptr, dacts_.logits.data(),
                       acts_.lnf.data(), at(params_, "wte.weight"), N, C, Vp);
  const int last = config_.layers - 1;
  const Real* residual = last >= 0 ? acts_.layers[last].residual3.data() : acts_.encoded.data();
  Real* dresidual = last >= 0 ? dacts_.layers[last].residual3.data() : dacts_.encoded.data();
  ops_.layernorm_backward(dresidual, at(grads_, "ln_f.weight"), at(grads_, "ln_f.bias"), dacts_.lnf.data(), residual,
                          at(params_, "ln_f.weight"), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), N, C);
  for (int l = last; l >= 0; --l) {
    const Real* block_input = l > 0 ? acts_.layers[l - 1].residual3.data() : acts_.encoded.data();
    Real* dblock_input = l > 0 ? dacts_.layers[l - 1].residual3.data() : dacts_.encoded.data();
    block_backward(l, block_input, dblock_input);
  }
  ops_.encoder_backward(at(grads_, "wte.weight"), at(grads_, "wpe.weight"), dacts_.encoded.data(), inputs_.data(),
                        B_, T_, C);
}

template class Gpt2Model<float>;
template class Gpt2Model<double>;

}  // namespace mpbench::workloads
