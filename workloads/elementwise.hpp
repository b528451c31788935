#pragma once
// Per-element math shared by every implementation of TransformerOps (reference loops, CPU, CUDA
// kernels), so the CPU tests cover the code the kernels run.
#include <cmath>

#include "amp/format_info.hpp"
#include "amp/formats.hpp"
#include "core/gemm.hpp"
#include "core/hostdevice.hpp"

namespace mpbench::workloads {

// GELU, tanh approximation (GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename Real>
MPB_HD Real gelu(Real x) {
  using std::tanh;
  const Real s = Real(0.7978845608028654);  // sqrt(2/pi)
  return Real(0.5) * x * (Real(1) + tanh(s * (x + Real(0.044715) * x * x * x)));
}

// d gelu(x) / dx.
template <typename Real>
MPB_HD Real gelu_derivative(Real x) {
  using std::tanh;
  const Real s = Real(0.7978845608028654);
  const Real u = s * (x + Real(0.044715) * x * x * x);
  const Real th = tanh(u);
  const Real sech2 = Real(1) - th * th;
  return Real(0.5) * (Real(1) + th) + Real(0.5) * x * sech2 * s * (Real(1) + Real(3 * 0.044715) * x * x);
}

// One AdamW step's hyper-parameters. t counts steps from 1 (bias correction); grad_scale multiplies
// each gradient first (the clipping factor); weight_decay is decoupled and 0 for non-matrices.
struct AdamWStep {
  float lr = 0;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0;
  float grad_scale = 1;
  int t = 1;
};

// Updates one parameter and its two moments in place.
template <typename Real>
MPB_HD void adamw_update_element(Real& param, Real& m, Real& v, Real grad, const AdamWStep& s) {
  using std::pow;
  using std::sqrt;
  const Real g = grad * Real(s.grad_scale);
  m = Real(s.beta1) * m + (Real(1) - Real(s.beta1)) * g;
  v = Real(s.beta2) * v + (Real(1) - Real(s.beta2)) * g * g;
  const Real m_hat = m / (Real(1) - pow(Real(s.beta1), Real(s.t)));
  const Real v_hat = v / (Real(1) - pow(Real(s.beta2), Real(s.t)));
  param -= Real(s.lr) * (m_hat / (sqrt(v_hat) + Real(s.eps)) + Real(s.weight_decay) * param);
}

// x rounded to the nearest value of `format` (round to nearest even; inf past fp16's and bf16's
// range, NaN past e4m3's): what storing x in that format and reading it back gives.
MPB_HD float round_to_format(float x, num::Format format) {
  switch (format) {
    case num::Format::tf32: return num::round_to_tf32(x);
    case num::Format::fp16: return num::f16_bits_to_f32(num::f32_to_f16_bits(x));
    case num::Format::bf16: return num::bf16_bits_to_f32(num::f32_to_bf16_bits(x));
    case num::Format::e4m3: return num::e4m3_bits_to_f32(num::f32_to_e4m3_bits(x, false));
    case num::Format::e5m2: return num::e5m2_bits_to_f32(num::f32_to_e5m2_bits(x, false));
    case num::Format::fp32: break;
  }
  return x;
}

// The format a GEMM of this precision reads its inputs in.
inline num::Format gemm_input_format(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::tf32: return num::Format::tf32;
    case GemmPrecision::fp16:
    case GemmPrecision::fp16_acc16: return num::Format::fp16;
    case GemmPrecision::bf16: return num::Format::bf16;
    case GemmPrecision::fp8_e4m3: return num::Format::e4m3;
    case GemmPrecision::fp32: break;
  }
  return num::Format::fp32;
}

// The format attention's batched products read their operands in: the GEMM input format, except
// in the fp8 modes, whose attention stays in bf16 (Transformer Engine's fp8 recipes quantize the
// linear layers' GEMMs only).
inline num::Format attention_input_format(GemmPrecision precision) {
  return precision == GemmPrecision::fp8_e4m3 ? num::Format::bf16 : gemm_input_format(precision);
}

}  // namespace mpbench::workloads
