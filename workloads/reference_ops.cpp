#include "workloads/reference_ops.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "workloads/host_staging.hpp"

namespace mpbench::workloads {

namespace {
constexpr double kLayerNormEps = 1e-5;
}  // namespace

template <typename Real>
void ReferenceOps<Real>::encoder_forward(Tensor<Real> out_tensor, const std::int32_t* tokens, const Real* wte,
                                         const Real* wpe, int B, int T, int C) {
  RealOutput<Real> staged_out(out_tensor, static_cast<std::size_t>(B) * T * C);
  Real* out = staged_out.data();
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const Real* token_row = wte + static_cast<std::size_t>(tokens[b * T + t]) * C;
      const Real* position_row = wpe + static_cast<std::size_t>(t) * C;
      Real* out_row = out + (static_cast<std::size_t>(b) * T + t) * C;
      for (int c = 0; c < C; ++c) out_row[c] = static_cast<Real>(double(token_row[c]) + double(position_row[c]));
    }
  }
  staged_out.finish();
}

template <typename Real>
void ReferenceOps<Real>::encoder_backward(Real* dwte, Real* dwpe, ConstTensor<Real> dout_tensor,
                                          const std::int32_t* tokens, int B, int T, int C) {
  const RealInput<Real> staged_dout(dout_tensor, static_cast<std::size_t>(B) * T * C);
  const Real* dout = staged_dout.data();
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const Real* dout_row = dout + (static_cast<std::size_t>(b) * T + t) * C;
      Real* dtoken_row = dwte + static_cast<std::size_t>(tokens[b * T + t]) * C;
      Real* dposition_row = dwpe + static_cast<std::size_t>(t) * C;
      for (int c = 0; c < C; ++c) {
        dtoken_row[c] += dout_row[c];
        dposition_row[c] += dout_row[c];
      }
    }
  }
}

template <typename Real>
void ReferenceOps<Real>::layernorm_forward(Tensor<Real> out_tensor, Real* mean, Real* rstd,
                                           ConstTensor<Real> inp_tensor, const Real* weight, const Real* bias, int N,
                                           int C) {
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  RealOutput<Real> staged_out(out_tensor, NC);
  const RealInput<Real> staged_inp(inp_tensor, NC);
  Real* out = staged_out.data();
  const Real* inp = staged_inp.data();
  for (int n = 0; n < N; ++n) {
    const Real* x = inp + static_cast<std::size_t>(n) * C;
    double sum = 0;
    for (int c = 0; c < C; ++c) sum += x[c];
    const double m = sum / C;
    double squares = 0;
    for (int c = 0; c < C; ++c) squares += (x[c] - m) * (x[c] - m);
    const double s = 1.0 / std::sqrt(squares / C + kLayerNormEps);
    Real* y = out + static_cast<std::size_t>(n) * C;
    for (int c = 0; c < C; ++c) y[c] = static_cast<Real>((x[c] - m) * s * weight[c] + bias[c]);
    mean[n] = static_cast<Real>(m);
    rstd[n] = static_cast<Real>(s);
  }
  staged_out.finish();
}

// With xhat = (x - mean) * rstd and g = dout * weight:
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
template <typename Real>
void ReferenceOps<Real>::layernorm_backward(Tensor<Real> dinp_tensor, Real* dweight, Real* dbias,
                                            ConstTensor<Real> dout_tensor, ConstTensor<Real> inp_tensor,
                                            const Real* weight, const Real* mean, const Real* rstd, int N, int C) {
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  RealOutput<Real> staged_dinp(dinp_tensor, NC);
  const RealInput<Real> staged_dout(dout_tensor, NC), staged_inp(inp_tensor, NC);
  Real* dinp = staged_dinp.data();
  const Real* dout = staged_dout.data();
  const Real* inp = staged_inp.data();
  for (int n = 0; n < N; ++n) {
    const Real* x = inp + static_cast<std::size_t>(n) * C;
    const Real* dy = dout + static_cast<std::size_t>(n) * C;
    Real* dx = dinp + static_cast<std::size_t>(n) * C;
    const double m = mean[n];
    const double s = rstd[n];
    double g_mean = 0;
    double g_xhat_mean = 0;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * s;
      const double g = double(dy[c]) * weight[c];
      g_mean += g;
      g_xhat_mean += g * xhat;
    }
    g_mean /= C;
    g_xhat_mean /= C;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * s;
      const double g = double(dy[c]) * weight[c];
      dbias[c] = static_cast<Real>(dbias[c] + double(dy[c]));
      dweight[c] = static_cast<Real>(dweight[c] + double(dy[c]) * xhat);
      dx[c] = static_cast<Real>(dx[c] + s * (g - g_mean - xhat * g_xhat_mean));
    }
  }
  staged_dinp.finish();
}

// The fp8 modes' GEMM operand: x [rows, cols] quantized as `role` by the recipe and dequantized
// (Fp8GemmQuantizer, the same code as the CPU ops'), in `storage`.
template <typename Real>
const Real* ReferenceOps<Real>::fp8_operand(const Real* x, std::size_t rows, std::size_t cols, bool k_along_rows,
                                            Fp8Operand role, std::vector<Real>& storage, bool count) {
  const std::size_t n = rows * cols;
  std::vector<float> values(x, x + n), out(n);
  this->fp8().quantize_matrix(role, values.data(), rows, cols, k_along_rows, out.data(), count);
  values = std::move(out);
  storage.assign(values.begin(), values.end());
  return storage.data();
}

// Outside the fp8 modes' linear GEMMs (which read fp8_operand's values as they are), x rounded to
// the GEMM input format; attention's products in the fp8 modes read bf16.
template <typename Real>
Real ReferenceOps<Real>::gemm_input(Real x) const {
  const num::Format format = attention_input_format(precision_.gemm);
  return format == num::Format::fp32 ? x : static_cast<Real>(round_to_format(static_cast<float>(x), format));
}

template <typename Real>
Real ReferenceOps<Real>::gemm_output(double sum) const {
  return precision_.output == num::Format::fp32
             ? static_cast<Real>(sum)
             : static_cast<Real>(round_to_format(static_cast<float>(sum), precision_.output));
}

template <typename Real>
void ReferenceOps<Real>::matmul_forward(Tensor<Real> out_tensor, ConstTensor<Real> inp_tensor, const Real* weight,
                                        const Real* bias, int N, int C, int OC) {
  RealOutput<Real> staged_out(out_tensor, static_cast<std::size_t>(N) * OC);
  const RealInput<Real> staged_inp(inp_tensor, static_cast<std::size_t>(N) * C);
  Real* out = staged_out.data();
  const Real* inp = staged_inp.data();
  const bool fp8 = precision_.gemm == GemmPrecision::fp8_e4m3;
  std::vector<Real> fp8_inp, fp8_weight;
  if (fp8) {
    inp = fp8_operand(inp, N, C, true, Fp8Operand::input, fp8_inp);  // K = C along the rows of both
    weight = fp8_operand(weight, OC, C, true, Fp8Operand::weight, fp8_weight);
  }
  const auto read = [&](Real x) { return fp8 ? x : gemm_input(x); };
  for (int n = 0; n < N; ++n) {
    const Real* x = inp + static_cast<std::size_t>(n) * C;
    for (int o = 0; o < OC; ++o) {
      const Real* w = weight + static_cast<std::size_t>(o) * C;
      double sum = bias ? double(bias[o]) : 0.0;
      for (int c = 0; c < C; ++c) sum += double(read(x[c])) * read(w[c]);
      out[static_cast<std::size_t>(n) * OC + o] = gemm_output(sum);
    }
  }
  staged_out.finish();
}

// dinp = dout * weight, dweight = dout^T * inp, dbias = column sums of dout; each GEMM result is
// rounded to the output format before it is added.
template <typename Real>
void ReferenceOps<Real>::matmul_backward(Tensor<Real> dinp_tensor, Real* dweight, Real* dbias,
                                         ConstTensor<Real> dout_tensor, ConstTensor<Real> inp_tensor,
                                         const Real* weight, int N, int C, int OC) {
  RealOutput<Real> staged_dinp(dinp_tensor, static_cast<std::size_t>(N) * C);
  const RealInput<Real> staged_dout(dout_tensor, static_cast<std::size_t>(N) * OC);
  const RealInput<Real> staged_inp(inp_tensor, static_cast<std::size_t>(N) * C);
  Real* dinp = staged_dinp.data();
  const Real* dout = staged_dout.data();
  const Real* inp = staged_inp.data();
  const Real* dout_unscaled = dout;  // dbias sums dout as it is
  const bool fp8 = precision_.gemm == GemmPrecision::fp8_e4m3;
  // dinp = dout weight (K = OC: along dout's rows, down weight's columns); dweight = dout^T inp
  // (K = N: down the columns of both). mxfp8 blocks dout both ways; per-tensor, one copy.
  std::vector<Real> fp8_dout, fp8_dout_columns, fp8_inp, fp8_weight;
  const Real* dout_columns = dout;
  if (fp8) {
    const Real* raw_dout = dout;
    dout = fp8_operand(raw_dout, N, OC, true, Fp8Operand::grad, fp8_dout);
    weight = fp8_operand(weight, OC, C, false, Fp8Operand::weight, fp8_weight);
    dout_columns = this->fp8().recipe() == Fp8Recipe::mxfp8
                       ? fp8_operand(raw_dout, N, OC, false, Fp8Operand::grad, fp8_dout_columns, false)
                       : dout;
    inp = fp8_operand(inp, N, C, false, Fp8Operand::input, fp8_inp);
  } else {
    dout_columns = dout;
  }
  const auto read = [&](Real x) { return fp8 ? x : gemm_input(x); };
  for (int n = 0; n < N; ++n) {
    const Real* dy = dout + static_cast<std::size_t>(n) * OC;
    for (int c = 0; c < C; ++c) {
      double sum = 0;
      for (int o = 0; o < OC; ++o) sum += double(read(dy[o])) * read(weight[static_cast<std::size_t>(o) * C + c]);
      dinp[static_cast<std::size_t>(n) * C + c] += gemm_output(sum);
    }
  }
  staged_dinp.finish();
  for (int o = 0; o < OC; ++o) {
    for (int c = 0; c < C; ++c) {
      double sum = 0;
      for (int n = 0; n < N; ++n) {
        sum += double(read(dout_columns[static_cast<std::size_t>(n) * OC + o])) *
               read(inp[static_cast<std::size_t>(n) * C + c]);
      }
      dweight[static_cast<std::size_t>(o) * C + c] += gemm_output(sum);
    }
    if (dbias) {
      double sum = 0;
      for (int n = 0; n < N; ++n) sum += dout_unscaled[static_cast<std::size_t>(n) * OC + o];
      dbias[o] += gemm_output(sum);
    }
  }
}

template <typename Real>
void ReferenceOps<Real>::attention_forward(Tensor<Real> out_tensor, Real* att, ConstTensor<Real> qkv_tensor, int B,
                                           int T, int C, int NH) {
  const std::size_t BTC = static_cast<std::size_t>(B) * T * C;
  RealOutput<Real> staged_out(out_tensor, BTC);
  const RealInput<Real> staged_qkv(qkv_tensor, 3 * BTC);
  Real* out = staged_out.data();
  const Real* qkv = staged_qkv.data();
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> scores(T);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const Real* q = qkv + (static_cast<std::size_t>(b) * T + t) * 3 * C + h * hs;
        double max_score = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const Real* k = qkv + (static_cast<std::size_t>(b) * T + t2) * 3 * C + C + h * hs;
          double dot = 0;
          for (int i = 0; i < hs; ++i) dot += double(gemm_input(q[i])) * gemm_input(k[i]);
          scores[t2] = dot * scale;
          max_score = std::max(max_score, scores[t2]);
        }
        double total = 0;
        for (int t2 = 0; t2 <= t; ++t2) total += (scores[t2] = std::exp(scores[t2] - max_score));
        Real* att_row = att + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
        for (int t2 = 0; t2 < T; ++t2) att_row[t2] = t2 <= t ? static_cast<Real>(scores[t2] / total) : Real(0);
        Real* y = out + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) {
          double sum = 0;
          for (int t2 = 0; t2 <= t; ++t2) {
            sum += double(gemm_input(att_row[t2])) *
                   gemm_input(qkv[(static_cast<std::size_t>(b) * T + t2) * 3 * C + 2 * C + h * hs + i]);
          }
          y[i] = static_cast<Real>(sum);
        }
      }
    }
  }
  staged_out.finish();
}

// Per (b, h, t): datt = dy v^T; dv += att^T dy; softmax backward
// dscore = att * (datt - sum(att * datt)) * scale; dq += dscore k; dk += dscore^T q. The operands of
// those four products are read in the GEMM input format, as in the forward.
template <typename Real>
void ReferenceOps<Real>::attention_backward(Tensor<Real> dqkv_tensor, ConstTensor<Real> dout_tensor,
                                            ConstTensor<Real> qkv_tensor, const Real* att, int B, int T, int C,
                                            int NH) {
  const std::size_t BTC = static_cast<std::size_t>(B) * T * C;
  RealOutput<Real> staged_dqkv(dqkv_tensor, 3 * BTC);
  const RealInput<Real> staged_dout(dout_tensor, BTC), staged_qkv(qkv_tensor, 3 * BTC);
  Real* dqkv = staged_dqkv.data();
  const Real* dout = staged_dout.data();
  const Real* qkv = staged_qkv.data();
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> datt(T);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const std::size_t row_t = (static_cast<std::size_t>(b) * T + t) * 3 * C;
        const Real* att_row = att + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
        const Real* dy = dout + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        double weighted = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          const std::size_t row_t2 = (static_cast<std::size_t>(b) * T + t2) * 3 * C;
          double dot = 0;
          for (int i = 0; i < hs; ++i) {
            dot += double(gemm_input(dy[i])) * gemm_input(qkv[row_t2 + 2 * C + h * hs + i]);
            dqkv[row_t2 + 2 * C + h * hs + i] += static_cast<Real>(double(gemm_input(att_row[t2])) * gemm_input(dy[i]));
          }
          datt[t2] = dot;
          weighted += double(att_row[t2]) * dot;
        }
        for (int t2 = 0; t2 <= t; ++t2) {
          const std::size_t row_t2 = (static_cast<std::size_t>(b) * T + t2) * 3 * C;
          const double dscore = gemm_input(static_cast<Real>(double(att_row[t2]) * (datt[t2] - weighted) * scale));
          for (int i = 0; i < hs; ++i) {
            dqkv[row_t + h * hs + i] += static_cast<Real>(dscore * gemm_input(qkv[row_t2 + C + h * hs + i]));
            dqkv[row_t2 + C + h * hs + i] += static_cast<Real>(dscore * gemm_input(qkv[row_t + h * hs + i]));
          }
        }
      }
    }
  }
  staged_dqkv.finish();
}

template <typename Real>
void ReferenceOps<Real>::gelu_forward(Tensor<Real> out, ConstTensor<Real> inp, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) store(out, i, static_cast<Real>(gelu(double(load(inp, i)))));
}

template <typename Real>
void ReferenceOps<Real>::gelu_backward(Tensor<Real> dinp, ConstTensor<Real> dout, ConstTensor<Real> inp,
                                       std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const Real grad = static_cast<Real>(gelu_derivative(double(load(inp, i))) * load(dout, i));
    store(dinp, i, static_cast<Real>(load<Real>(dinp, i) + grad));
  }
}

template <typename Real>
void ReferenceOps<Real>::residual_forward(Tensor<Real> out, ConstTensor<Real> a, ConstTensor<Real> b,
                                          std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) store(out, i, static_cast<Real>(double(load(a, i)) + double(load(b, i))));
}

template <typename Real>
void ReferenceOps<Real>::residual_backward(Tensor<Real> da, Tensor<Real> db, ConstTensor<Real> dout,
                                           std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const Real grad = load(dout, i);
    store(da, i, static_cast<Real>(load<Real>(da, i) + grad));
    store(db, i, static_cast<Real>(load<Real>(db, i) + grad));
  }
}

template <typename Real>
void ReferenceOps<Real>::softmax_crossentropy_forward(Real* losses, Real* probs, ConstTensor<Real> logits_tensor,
                                                      const std::int32_t* targets, int N, int V, int Vp) {
  const RealInput<Real> staged_logits(logits_tensor, static_cast<std::size_t>(N) * Vp);
  const Real* logits = staged_logits.data();
  for (int n = 0; n < N; ++n) {
    const Real* z = logits + static_cast<std::size_t>(n) * Vp;
    Real* p = probs + static_cast<std::size_t>(n) * Vp;
    double max_logit = -INFINITY;
    for (int v = 0; v < V; ++v) max_logit = std::max(max_logit, double(z[v]));
    double total = 0;
    for (int v = 0; v < V; ++v) total += std::exp(z[v] - max_logit);
    for (int v = 0; v < V; ++v) p[v] = static_cast<Real>(std::exp(z[v] - max_logit) / total);
    for (int v = V; v < Vp; ++v) p[v] = Real(0);
    // log p[target] from the logits, not from the rounded probability.
    losses[n] = static_cast<Real>(std::log(total) - (z[targets[n]] - max_logit));
  }
}

template <typename Real>
void ReferenceOps<Real>::softmax_crossentropy_backward(Tensor<Real> dlogits_tensor, const Real* dlosses,
                                                       const Real* probs, const std::int32_t* targets, int N, int V,
                                                       int Vp) {
  RealOutput<Real> staged_dlogits(dlogits_tensor, static_cast<std::size_t>(N) * Vp);
  Real* dlogits = staged_dlogits.data();
  for (int n = 0; n < N; ++n) {
    const Real* p = probs + static_cast<std::size_t>(n) * Vp;
    Real* dz = dlogits + static_cast<std::size_t>(n) * Vp;
    for (int v = 0; v < V; ++v) {
      const double indicator = v == targets[n] ? 1.0 : 0.0;
      dz[v] = static_cast<Real>(dz[v] + double(dlosses[n]) * (double(p[v]) - indicator));
    }
  }
  staged_dlogits.finish();
}

template <typename Real>
void ReferenceOps<Real>::adamw_update(Real* params, const Real* grads, Real* m, Real* v, std::size_t n,
                                      const AdamWStep& step) {
  for (std::size_t i = 0; i < n; ++i) {
    double p = params[i], mi = m[i], vi = v[i];
    adamw_update_element(p, mi, vi, double(grads[i]), step);
    params[i] = static_cast<Real>(p);
    m[i] = static_cast<Real>(mi);
    v[i] = static_cast<Real>(vi);
  }
}

template <typename Real>
double ReferenceOps<Real>::global_norm(const Real* grads, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += double(grads[i]) * grads[i];
  return std::sqrt(sum);
}

template <typename Real>
const CapabilityTable& ReferenceOps<Real>::capabilities() const {
  static const CapabilityTable kTable = CapabilityTable::every_precision(
      GemmPath::converted, "the reference loops round the operands to the format and accumulate in Real");
  return kTable;
}

template <typename Real>
void ReferenceOps<Real>::set_matmul_precision(const MatmulPrecision& precision) {
  if (const auto reason = this->unsupported(precision.gemm)) throw UsageError(*reason);
  if (precision.gemm == GemmPrecision::fp8_e4m3 && !this->fp8().active())
    throw UsageError("fp8 GEMMs quantize with per-tensor scales: configure a recipe first (fp8().configure)");
  precision_ = precision;
}

template <typename Real>
void ReferenceOps<Real>::round_to(Real* x, std::size_t n, num::Format format) {
  if (format == num::Format::fp32) return;
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<Real>(round_to_format(static_cast<float>(x[i]), format));
}

template <typename Real>
void ReferenceOps<Real>::copy(Real* dst, const Real* src, std::size_t n) {
  std::copy(src, src + n, dst);
}

template class ReferenceOps<float>;
template class ReferenceOps<double>;

}  // namespace mpbench::workloads
