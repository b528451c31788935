// CudaTransformerOps against the reference ops: every op forward and backward on fresh random inputs
// of odd sizes, in each GEMM precision; cuDNN's fused attention in fp16 and bf16; the tiny model in
// each precision mode, with fused attention too; a short amp-fp16 training run. Skipped, with the
// reason, where no GPU (or, for the fused attention, no cuDNN) is usable.
//
// Tolerances. Where the GPU and the reference read the same operand values (fp32, and fp16/bf16
// whose operands both round to nearest even), a GEMM result differs only by fp32 accumulation:
// at most K units of fp32 roundoff (2^-24) of sum |a b| by the textbook bound; it is doubled twice
// for the Tensor Cores, whose accumulation truncates. TF32 Tensor Cores drop the low 13 mantissa bits
// of fp32 operands where the reference rounds to nearest: a product may then differ by
// (2^-10 + 2^-11) * 2 = 3 * 2^-10 of |a b|. A result rounded to fp16/bf16 may in addition land on
// the other side of a rounding boundary: one unit in the last place of that format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "amp/format_info.hpp"
#include "amp/policy.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "core/error.hpp"
#include "core/random.hpp"
#include "tests/workloads/gradient_check.hpp"
#include "workloads/config.hpp"
#include "workloads/cuda/cuda_ops.hpp"
#include "workloads/data.hpp"
#include "workloads/model.hpp"
#include "workloads/reference_ops.hpp"
#include "workloads/trainer.hpp"

namespace mpbench::workloads {
namespace {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  const std::vector<double> values = testing::random_values(n, seed, lo, hi);
  return std::vector<float>(values.begin(), values.end());
}

using testing::random_tokens;

// One unit in the last place of `format` at |x| (its smallest subnormal near 0).
double ulp(double x, num::Format format) {
  const num::FormatInfo& info = num::format_info(format);
  int exponent = 0;
  std::frexp(std::abs(x), &exponent);  // |x| in [2^(exponent-1), 2^exponent)
  return std::max(std::ldexp(1.0, exponent - 1 - info.mantissa_bits), info.min_subnormal);
}

// How far apart the GPU's and the reference's GEMM results may be, per unit of sum |a b| over K terms.
double gemm_tolerance(GemmPrecision precision, int K) {
  const double accumulation = (K + 2) * 0x1p-22;
  return precision == GemmPrecision::tf32 ? accumulation + 3 * 0x1p-10 : accumulation;
}

// Expects |gpu[i] - ref[i]| <= bound(i) for every i (a NaN fails); reports the first few misses.
void expect_within(const std::vector<float>& gpu, const std::vector<float>& ref,
                   const std::function<double(std::size_t)>& bound, const std::string& what) {
  ASSERT_EQ(gpu.size(), ref.size()) << what;
  std::size_t misses = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const double difference = std::abs(double(gpu[i]) - double(ref[i]));
    if (difference <= bound(i)) continue;
    if (++misses <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: GPU " << gpu[i] << ", reference " << ref[i] << ", difference "
                    << difference << " > " << bound(i);
    }
  }
  EXPECT_EQ(misses, 0u) << what << ": elements outside the tolerance, of " << gpu.size();
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& ref, double atol, double rtol,
                  const std::string& what) {
  expect_within(gpu, ref, [&](std::size_t i) { return atol + rtol * std::abs(double(ref[i])); }, what);
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::abs(x)));
  return m;
}

// v as 16-bit codes of a half storage, and back.
std::vector<std::uint16_t> half_codes(const std::vector<float>& v, Storage storage) {
  std::vector<std::uint16_t> codes(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) store(Tensor<float>(codes.data(), storage), i, v[i]);
  return codes;
}
std::vector<float> half_values(const std::vector<std::uint16_t>& codes, Storage storage) {
  std::vector<float> v(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) v[i] = load<float>(ConstTensor<float>(codes.data(), storage), i);
  return v;
}

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = cuda::unavailable_reason()) GTEST_SKIP() << "no usable GPU: " << *why;
    try {
      gpu_ = std::make_unique<CudaTransformerOps>(cuda::make_device(0));
    } catch (const UsageError& e) {
      GTEST_SKIP() << "no usable GPU: " << e.what();
    }
    seed_ = testing::fresh_seed();
  }

  template <typename T>
  OpsArray<T> on_gpu(const std::vector<T>& host) {
    OpsArray<T> array(*gpu_, host.size());
    array.upload(host);
    return array;
  }

  std::unique_ptr<CudaTransformerOps> gpu_;
  ReferenceOps<float> ref_;
  std::uint64_t seed_ = 0;
};

class CudaOpsPrecision : public CudaOpsTest, public ::testing::WithParamInterface<GemmPrecision> {
 protected:
  void SetUp() override {
    CudaOpsTest::SetUp();
    if (IsSkipped()) return;
    if (const auto why = gpu_->unsupported(GetParam())) GTEST_SKIP() << *why;
  }
  num::Format input() const { return gemm_input_format(GetParam()); }
  // One unit of the input format relative to a value: the size of a rounding-boundary flip.
  double flip() const {
    return input() == num::Format::fp32 ? 0.0 : std::ldexp(1.0, -num::format_info(input()).mantissa_bits);
  }
};

// Runs without a GPU: the ops refuse to be made on no device context.
TEST(CudaOpsDeviceContext, NoDeviceIsAUsageError) { EXPECT_THROW(CudaTransformerOps(nullptr), UsageError); }

TEST(CudaOpsDeviceContext, OpsOnTheBackendsContextReadItsCapabilityTable) {
  if (const auto why = cuda::unavailable_reason()) GTEST_SKIP() << "no usable GPU: " << *why;
  const std::unique_ptr<Backend> backend = cuda::make_backend(0);
  const auto& gpu = dynamic_cast<const cuda::CudaBackend&>(*backend);
  const CudaTransformerOps ops(gpu.device_context());
  EXPECT_EQ(&ops.capabilities(), &backend->capabilities()) << "the device's one table";
}

TEST_F(CudaOpsTest, RoundToIsBitExact) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  std::vector<float> values(4096);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto bits = static_cast<std::uint32_t>(mix64(seed_, i));
    std::memcpy(&values[i], &bits, sizeof bits);
  }
  const float specials[] = {0.0f,     -0.0f,    1.0f,         65504.0f,      65520.0f,  -65520.0f, 1e-8f,
                            6.0e-8f,  3.0e-8f,  1.00048828125f, 1.0009765625f, 448.0f,    464.0f,    57344.0f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                            3.4e38f, -1.17549435e-38f};
  std::copy(std::begin(specials), std::end(specials), values.begin());
  for (num::Format format : {num::Format::fp32, num::Format::tf32, num::Format::fp16, num::Format::bf16,
                             num::Format::e4m3, num::Format::e5m2}) {
    OpsArray<float> x = on_gpu(values);
    gpu_->round_to(x.data(), x.size(), format);
    const std::vector<float> rounded = x.download();
    std::size_t misses = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float expected = round_to_format(values[i], format);
      if (std::memcmp(&expected, &rounded[i], sizeof expected) != 0 && ++misses <= 5) {
        ADD_FAILURE() << num::format_info(format).name << ": " << values[i] << " rounds to " << expected
                      << " on the host, " << rounded[i] << " on the GPU";
      }
    }
    EXPECT_EQ(misses, 0u) << num::format_info(format).name;
  }
}

TEST_F(CudaOpsTest, OutOfMemoryIsReported) {
  const std::size_t huge = std::size_t{1} << 50;  // 1 PiB
  try {
    OpsArray<float> array(*gpu_, huge / sizeof(float));
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.requested_bytes(), huge);
    EXPECT_NE(std::string(e.what()).find("free of"), std::string::npos) << e.what();
  }
  // The failure leaves nothing pending: the ops still work.
  OpsArray<float> a = on_gpu(std::vector<float>{1.0f, 2.0f}), b = on_gpu(std::vector<float>{3.0f, 4.0f});
  OpsArray<float> sum(*gpu_, 2);
  gpu_->residual_forward(sum.data(), a.data(), b.data(), 2);
  EXPECT_EQ(sum.download(), (std::vector<float>{4.0f, 6.0f}));
}

TEST_F(CudaOpsTest, DescribesItselfAndRefusesWhatItCannotRun) {
  EXPECT_NE(gpu_->implementation().find("cuBLASLt"), std::string::npos) << gpu_->implementation();
  EXPECT_FALSE(gpu_->unsupported(GemmPrecision::fp32).has_value());
  ASSERT_TRUE(gpu_->unsupported(GemmPrecision::fp8_e4m3).has_value());
  EXPECT_TRUE(gpu_->unsupported(GemmPrecision::fp16_acc16).has_value());
  EXPECT_THROW(gpu_->set_matmul_precision({GemmPrecision::fp8_e4m3, num::Format::fp32}), UsageError);
  // Ranges nest and close (NVTX has no observable effect without a tool attached).
  gpu_->begin_op("c_attn", 3, Phase::forward);
  gpu_->begin_op("embedding", -1, Phase::backward);
  gpu_->end_op();
  gpu_->end_op();
}

TEST_F(CudaOpsTest, EncoderForwardAndBackward) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int B = 3, T = 5, C = 11, V = 7;  // few tokens: repeated rows exercise the atomics
  const auto wte = random_floats(V * C, seed_), wpe = random_floats(T * C, seed_ + 1);
  const auto tokens = random_tokens(B * T, V, seed_ + 2);
  const auto dout = random_floats(B * T * C, seed_ + 3);
  const auto dwte0 = random_floats(V * C, seed_ + 4), dwpe0 = random_floats(T * C, seed_ + 5);

  std::vector<float> out(B * T * C), dwte = dwte0, dwpe = dwpe0;
  ref_.encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  ref_.encoder_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);

  OpsArray<float> g_wte = on_gpu(wte), g_wpe = on_gpu(wpe), g_out(*gpu_, out.size()), g_dout = on_gpu(dout);
  OpsArray<float> g_dwte = on_gpu(dwte0), g_dwpe = on_gpu(dwpe0);
  OpsArray<std::int32_t> g_tokens = on_gpu(tokens);
  gpu_->encoder_forward(g_out.data(), g_tokens.data(), g_wte.data(), g_wpe.data(), B, T, C);
  gpu_->encoder_backward(g_dwte.data(), g_dwpe.data(), g_dout.data(), g_tokens.data(), B, T, C);
  // One fp32 addition per output; the backward sums at most B*T terms in another order.
  expect_close(g_out.download(), out, 0, 0x1p-23, "out");
  expect_close(g_dwte.download(), dwte, 1e-6, 1e-6, "dwte");
  expect_close(g_dwpe.download(), dwpe, 1e-6, 1e-6, "dwpe");
}

TEST_F(CudaOpsTest, LayerNormForwardAndBackward) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int N = 13, C = 37;
  auto inp = random_floats(N * C, seed_, -2.0, 3.0);  // off-centre rows
  const auto weight = random_floats(C, seed_ + 1, 0.5, 1.5), bias = random_floats(C, seed_ + 2);
  const auto dout = random_floats(N * C, seed_ + 3);
  const auto dinp0 = random_floats(N * C, seed_ + 4), dweight0 = random_floats(C, seed_ + 5),
             dbias0 = random_floats(C, seed_ + 6);

  std::vector<float> out(N * C), mean(N), rstd(N), dinp = dinp0, dweight = dweight0, dbias = dbias0;
  ref_.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C);
  ref_.layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(),
                          mean.data(), rstd.data(), N, C);

  OpsArray<float> g_inp = on_gpu(inp), g_weight = on_gpu(weight), g_bias = on_gpu(bias), g_dout = on_gpu(dout);
  OpsArray<float> g_out(*gpu_, out.size()), g_mean(*gpu_, N), g_rstd(*gpu_, N);
  OpsArray<float> g_dinp = on_gpu(dinp0), g_dweight = on_gpu(dweight0), g_dbias = on_gpu(dbias0);
  gpu_->layernorm_forward(g_out.data(), g_mean.data(), g_rstd.data(), g_inp.data(), g_weight.data(), g_bias.data(),
                          N, C);
  // The backward reads the reference's saved statistics, so it is checked on its own.
  OpsArray<float> r_mean = on_gpu(mean), r_rstd = on_gpu(rstd);
  gpu_->layernorm_backward(g_dinp.data(), g_dweight.data(), g_dbias.data(), g_dout.data(), g_inp.data(),
                           g_weight.data(), r_mean.data(), r_rstd.data(), N, C);
  // fp32 sums over C = 37 (or N = 13) terms of size up to a few: a few 1e-6 at most.
  expect_close(g_mean.download(), mean, 1e-6, 1e-5, "mean");
  expect_close(g_rstd.download(), rstd, 0, 1e-5, "rstd");
  expect_close(g_out.download(), out, 1e-5, 1e-5, "out");
  expect_close(g_dinp.download(), dinp, 1e-5, 1e-5, "dinp");
  expect_close(g_dweight.download(), dweight, 1e-5, 1e-5, "dweight");
  expect_close(g_dbias.download(), dbias, 1e-5, 1e-5, "dbias");
}

TEST_F(CudaOpsTest, GeluAndResidualForwardAndBackward) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const std::size_t n = 1037;
  const auto x = random_floats(n, seed_, -6.0, 6.0), y = random_floats(n, seed_ + 1);
  const auto dout = random_floats(n, seed_ + 2), init_a = random_floats(n, seed_ + 3), init_b = random_floats(n, seed_ + 4);
  std::vector<float> gelu_out(n), dgelu = init_a, sum(n), da = init_a, db = init_b;
  ref_.gelu_forward(gelu_out.data(), x.data(), n);
  ref_.gelu_backward(dgelu.data(), dout.data(), x.data(), n);
  ref_.residual_forward(sum.data(), x.data(), y.data(), n);
  ref_.residual_backward(da.data(), db.data(), dout.data(), n);

  OpsArray<float> g_x = on_gpu(x), g_y = on_gpu(y), g_dout = on_gpu(dout);
  OpsArray<float> g_gelu(*gpu_, n), g_dgelu = on_gpu(init_a), g_sum(*gpu_, n), g_da = on_gpu(init_a),
                  g_db = on_gpu(init_b);
  gpu_->gelu_forward(g_gelu.data(), g_x.data(), n);
  gpu_->gelu_backward(g_dgelu.data(), g_dout.data(), g_x.data(), n);
  gpu_->residual_forward(g_sum.data(), g_x.data(), g_y.data(), n);
  gpu_->residual_backward(g_da.data(), g_db.data(), g_dout.data(), n);
  // fp32 GELU (tanhf within 2 ulp) against double: a few fp32 units.
  expect_close(g_gelu.download(), gelu_out, 1e-6, 1e-5, "gelu");
  expect_close(g_dgelu.download(), dgelu, 1e-6, 1e-5, "dgelu");
  expect_close(g_sum.download(), sum, 0, 0x1p-23, "residual");
  EXPECT_EQ(g_da.download(), da);  // the same fp32 additions on both sides
  EXPECT_EQ(g_db.download(), db);
}

TEST_F(CudaOpsTest, SoftmaxCrossEntropyOverPaddedVocab) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int N = 7, V = 29, Vp = 32;
  const auto logits = random_floats(N * Vp, seed_, -4.0, 4.0);
  const auto targets = random_tokens(N, V, seed_ + 1);
  const auto dlosses = random_floats(N, seed_ + 2, 0.1, 1.0);
  const auto dlogits0 = random_floats(N * Vp, seed_ + 3);
  std::vector<float> losses(N), probs(N * Vp), dlogits = dlogits0;
  ref_.softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp);
  ref_.softmax_crossentropy_backward(dlogits.data(), dlosses.data(), probs.data(), targets.data(), N, V, Vp);

  OpsArray<float> g_logits = on_gpu(logits), g_dlosses = on_gpu(dlosses), g_dlogits = on_gpu(dlogits0);
  OpsArray<float> g_losses(*gpu_, N), g_probs(*gpu_, probs.size());
  OpsArray<std::int32_t> g_targets = on_gpu(targets);
  gpu_->softmax_crossentropy_forward(g_losses.data(), g_probs.data(), g_logits.data(), g_targets.data(), N, V, Vp);
  OpsArray<float> r_probs = on_gpu(probs);
  gpu_->softmax_crossentropy_backward(g_dlogits.data(), g_dlosses.data(), r_probs.data(), g_targets.data(), N, V,
                                      Vp);
  const std::vector<float> gpu_probs = g_probs.download(), gpu_dlogits = g_dlogits.download();
  expect_close(g_losses.download(), losses, 1e-5, 1e-5, "losses");
  expect_close(gpu_probs, probs, 1e-7, 1e-5, "probs");
  expect_close(gpu_dlogits, dlogits, 1e-6, 1e-6, "dlogits");
  for (int n = 0; n < N; ++n) {
    for (int v = V; v < Vp; ++v) {
      EXPECT_EQ(gpu_probs[n * Vp + v], 0.0f) << "padding probability, row " << n;
      EXPECT_EQ(gpu_dlogits[n * Vp + v], dlogits0[n * Vp + v]) << "padding gradient, row " << n;
    }
  }
}

TEST_F(CudaOpsTest, AdamWCopyAndGlobalNorm) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const std::size_t n = 1001;
  const auto params0 = random_floats(n, seed_), grads = random_floats(n, seed_ + 1, -3.0, 3.0);
  std::vector<float> params = params0, m(n, 0.0f), v(n, 0.0f);
  OpsArray<float> g_params = on_gpu(params0), g_grads = on_gpu(grads), g_m(*gpu_, n), g_v(*gpu_, n);
  for (int t = 1; t <= 2; ++t) {
    const AdamWStep step{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, t};
    ref_.adamw_update(params.data(), grads.data(), m.data(), v.data(), n, step);
    gpu_->adamw_update(g_params.data(), g_grads.data(), g_m.data(), g_v.data(), n, step);
  }
  // fp32 against double: each update term within a few fp32 units of itself.
  expect_close(g_params.download(), params, 1e-7, 1e-6, "params");
  expect_close(g_m.download(), m, 1e-7, 1e-6, "m");
  expect_close(g_v.download(), v, 1e-7, 1e-6, "v");

  OpsArray<float> copied(*gpu_, n);
  gpu_->copy(copied.data(), g_grads.data(), n);
  EXPECT_EQ(copied.download(), grads);

  // Squares of floats are exact in double; only the order of the double sums differs.
  const std::vector<float> many = random_floats(100003, seed_ + 2, -2.0, 2.0);
  OpsArray<float> g_many = on_gpu(many);
  const double expected = ref_.global_norm(many.data(), many.size());
  EXPECT_NEAR(gpu_->global_norm(g_many.data(), many.size()), expected, 1e-12 * expected);
  EXPECT_EQ(gpu_->global_norm(g_many.data(), 0), 0.0);
  std::vector<float> bad = many;
  bad[77777] = std::numeric_limits<float>::infinity();
  g_many.upload(bad);
  EXPECT_EQ(gpu_->global_norm(g_many.data(), bad.size()), std::numeric_limits<double>::infinity());
  bad[77777] = std::numeric_limits<float>::quiet_NaN();
  g_many.upload(bad);
  EXPECT_TRUE(std::isnan(gpu_->global_norm(g_many.data(), bad.size())));
}

TEST_P(CudaOpsPrecision, MatmulForwardAndBackward) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const GemmPrecision precision = GetParam();
  const int N = 13, C = 37, OC = 19;
  const auto inp = random_floats(N * C, seed_), weight = random_floats(OC * C, seed_ + 1),
             bias = random_floats(OC, seed_ + 2), dout = random_floats(N * OC, seed_ + 3);
  const auto dinp0 = random_floats(N * C, seed_ + 4), dweight0 = random_floats(OC * C, seed_ + 5),
             dbias0 = random_floats(OC, seed_ + 6);
  // sum |a b| of each result, the scale of its accumulation error (the added value included).
  std::vector<double> s_out(N * OC), s_dinp(N * C), s_dweight(OC * C), s_dbias(OC);
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < OC; ++o) {
      double s = std::abs(bias[o]);
      for (int c = 0; c < C; ++c) s += std::abs(double(inp[n * C + c]) * weight[o * C + c]);
      s_out[n * OC + o] = s;
    }
    for (int c = 0; c < C; ++c) {
      double s = std::abs(dinp0[n * C + c]);
      for (int o = 0; o < OC; ++o) s += std::abs(double(dout[n * OC + o]) * weight[o * C + c]);
      s_dinp[n * C + c] = s;
    }
  }
  for (int o = 0; o < OC; ++o) {
    for (int c = 0; c < C; ++c) {
      double s = std::abs(dweight0[o * C + c]);
      for (int n = 0; n < N; ++n) s += std::abs(double(dout[n * OC + o]) * inp[n * C + c]);
      s_dweight[o * C + c] = s;
    }
    double s = std::abs(dbias0[o]);
    for (int n = 0; n < N; ++n) s += std::abs(dout[n * OC + o]);
    s_dbias[o] = s;
  }

  std::vector<num::Format> outputs{num::Format::fp32};
  if (input() == num::Format::fp16 || input() == num::Format::bf16) outputs.push_back(input());
  for (num::Format output : outputs) {
    SCOPED_TRACE(std::string("output ") + std::string(num::format_info(output).name));
    const MatmulPrecision mp{precision, output};
    ref_.set_matmul_precision(mp);
    gpu_->set_matmul_precision(mp);
    std::vector<float> out(N * OC), dinp = dinp0, dweight = dweight0, dbias = dbias0;
    ref_.matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
    ref_.matmul_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), N, C, OC);

    // The weight one float into its buffer, as the model's weights sit at arbitrary offsets.
    std::vector<float> shifted(1, 0.0f);
    shifted.insert(shifted.end(), weight.begin(), weight.end());
    OpsArray<float> g_weight_buffer = on_gpu(shifted);
    const float* g_weight = g_weight_buffer.data() + 1;
    OpsArray<float> g_inp = on_gpu(inp), g_bias = on_gpu(bias), g_dout = on_gpu(dout), g_out(*gpu_, out.size());
    OpsArray<float> g_dinp = on_gpu(dinp0), g_dweight = on_gpu(dweight0), g_dbias = on_gpu(dbias0);
    gpu_->matmul_forward(g_out.data(), g_inp.data(), g_weight, g_bias.data(), N, C, OC);
    gpu_->matmul_backward(g_dinp.data(), g_dweight.data(), g_dbias.data(), g_dout.data(), g_inp.data(), g_weight, N,
                          C, OC);

    // The rounding to the output format applies to the GEMM result, before it is added: one unit
    // of it at the size of what was added.
    const auto bound = [&](const std::vector<double>& s, const std::vector<float>& ref, const std::vector<float>* init,
                           int K) {
      return [&output, &precision, sums = &s, ref = &ref, init, K](std::size_t i) {
        const double added = (*ref)[i] - (init != nullptr ? (*init)[i] : 0.0f);
        const double rounding = output == num::Format::fp32 ? 0.0 : ulp(1.001 * added, output);
        return gemm_tolerance(precision, K) * (*sums)[i] + rounding;
      };
    };
    expect_within(g_out.download(), out, bound(s_out, out, nullptr, C), "out");
    expect_within(g_dinp.download(), dinp, bound(s_dinp, dinp, &dinp0, OC), "dinp");
    expect_within(g_dweight.download(), dweight, bound(s_dweight, dweight, &dweight0, N), "dweight");
    // The bias gradient is a plain fp32 column sum in every precision.
    expect_within(g_dbias.download(), dbias, bound(s_dbias, dbias, &dbias0, N), "dbias");

    // No bias: the output is the GEMM alone (rounded).
    std::vector<float> plain(N * OC);
    ref_.matmul_forward(plain.data(), inp.data(), weight.data(), nullptr, N, C, OC);
    gpu_->matmul_forward(g_out.data(), g_inp.data(), g_weight, nullptr, N, C, OC);
    expect_within(g_out.download(), plain, bound(s_out, plain, nullptr, C), "out without bias");
  }
}

// Half activations: inp and dout as fp16/bf16 codes read in place by the GEMMs, out written in
// blocks of 128 rows through the fp32 buffer (the buffer limited to force three blocks), dinp
// added into in its storage. Against the reference on the decoded values, as above.
TEST_P(CudaOpsPrecision, MatmulOnHalfActivationsInBlocks) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const GemmPrecision precision = GetParam();
  const num::Format format = input();
  const Storage storage = half_storage(format);
  if (storage == Storage::real) GTEST_SKIP() << "half storage is for fp16 and bf16 GEMMs";
  const int N = 300, C = 40, OC = 24;
  const auto rounded = [&](std::vector<float> v) {
    for (float& x : v) x = round_to_format(x, format);
    return v;
  };
  const auto codes = [&](const std::vector<float>& v) { return half_codes(v, storage); };
  const auto values = [&](const std::vector<std::uint16_t>& c) { return half_values(c, storage); };
  const auto inp = rounded(random_floats(N * C, seed_)), dout = rounded(random_floats(N * OC, seed_ + 1));
  const auto dinp0 = rounded(random_floats(N * C, seed_ + 2));
  const auto weight = random_floats(OC * C, seed_ + 3), bias = random_floats(OC, seed_ + 4);
  const MatmulPrecision mp{precision, format};
  ref_.set_matmul_precision(mp);
  gpu_->set_matmul_precision(mp);
  gpu_->limit_half_output_buffer(128 * OC * sizeof(float));
  std::vector<float> out(N * OC), dinp = dinp0, dweight(OC * C), dbias(OC);
  ref_.matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
  ref_.matmul_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), N, C, OC);
  std::vector<double> added(dinp.size());  // the rounded GEMM result the sum took in
  for (std::size_t i = 0; i < dinp.size(); ++i) added[i] = double(dinp[i]) - dinp0[i];
  for (float& x : dinp) x = round_to_format(x, format);  // the sum, stored in the half type

  OpsArray<std::uint16_t> g_inp = on_gpu(codes(inp)), g_dout = on_gpu(codes(dout)), g_dinp = on_gpu(codes(dinp0));
  OpsArray<std::uint16_t> g_out(*gpu_, out.size());
  OpsArray<float> g_weight = on_gpu(weight), g_bias = on_gpu(bias), g_dweight(*gpu_, dweight.size()),
                  g_dbias(*gpu_, dbias.size());
  gpu_->matmul_forward(Tensor<float>(g_out.data(), storage), ConstTensor<float>(g_inp.data(), storage),
                       g_weight.data(), g_bias.data(), N, C, OC);
  gpu_->matmul_backward(Tensor<float>(g_dinp.data(), storage), g_dweight.data(), g_dbias.data(),
                        ConstTensor<float>(g_dout.data(), storage), ConstTensor<float>(g_inp.data(), storage),
                        g_weight.data(), N, C, OC);
  // A GEMM's accumulation error, then a flip of the half type at the size of the value.
  const auto bound = [&](const std::vector<float>& ref, int K) {
    return [&ref, &format, precision, K](std::size_t i) {
      return gemm_tolerance(precision, K) * (std::abs(ref[i]) + 1.0) * K + 2 * ulp(1.001 * ref[i], format);
    };
  };
  expect_within(values(g_out.download()), out, bound(out, C), "out");
  // dinp is rounded twice, round(dinp0 + round(GEMM)): a flip of the GEMM's own rounding is a unit at
  // the GEMM result's size, larger than the sum's where dinp0 cancels it.
  expect_within(values(g_dinp.download()), dinp, [&](std::size_t i) {
    return gemm_tolerance(precision, OC) * (std::abs(added[i]) + 1.0) * OC + ulp(1.001 * added[i], format) +
           2 * ulp(1.001 * dinp[i], format);
  }, "dinp");
  expect_within(g_dweight.download(), dweight, bound(dweight, N), "dweight");
  expect_within(g_dbias.download(), dbias, bound(dbias, N), "dbias");
}

// The unfused attention on fp16/bf16 activations (qkv, out, dout, dqkv in the GEMM input type)
// against the reference given the same half tensors: the bounds of the test below, plus the
// storage's own rounding of out and dqkv (a flip of the largest value).
TEST_P(CudaOpsPrecision, AttentionOnHalfActivations) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const Storage storage = half_storage(input());
  if (storage == Storage::real) GTEST_SKIP() << "half storage is for fp16 and bf16 GEMMs";
  const int B = 2, T = 9, NH = 3, hs = 8, C = NH * hs;
  const MatmulPrecision mp{GetParam(), num::Format::fp32};
  ref_.set_matmul_precision(mp);
  gpu_->set_matmul_precision(mp);
  const auto codes = [&](const std::vector<float>& v) { return half_codes(v, storage); };
  const auto values = [&](const std::vector<std::uint16_t>& c) { return half_values(c, storage); };
  const auto qkv = codes(random_floats(B * T * 3 * C, seed_)), dout = codes(random_floats(B * T * C, seed_ + 1));
  const auto dqkv0 = codes(random_floats(qkv.size(), seed_ + 2));
  std::vector<std::uint16_t> out(B * T * C), dqkv = dqkv0;
  std::vector<float> att(B * NH * T * T);
  const auto half = [&](std::vector<std::uint16_t>& v) { return Tensor<float>(v.data(), storage); };
  const auto half_in = [&](const std::vector<std::uint16_t>& v) { return ConstTensor<float>(v.data(), storage); };
  ref_.attention_forward(half(out), att.data(), half_in(qkv), B, T, C, NH);
  ref_.attention_backward(half(dqkv), half_in(dout), half_in(qkv), att.data(), B, T, C, NH);

  OpsArray<std::uint16_t> g_qkv = on_gpu(qkv), g_dout = on_gpu(dout), g_dqkv = on_gpu(dqkv0), g_out(*gpu_, out.size());
  OpsArray<float> g_att(*gpu_, att.size()), r_att = on_gpu(att);
  gpu_->attention_forward(Tensor<float>(g_out.data(), storage), g_att.data(), ConstTensor<float>(g_qkv.data(), storage),
                          B, T, C, NH);
  gpu_->attention_backward(Tensor<float>(g_dqkv.data(), storage), ConstTensor<float>(g_dout.data(), storage),
                           ConstTensor<float>(g_qkv.data(), storage), r_att.data(), B, T, C, NH);
  expect_close(g_att.download(), att, 1e-6, 1e-5, "att");
  const std::vector<float> qkv_values = values(qkv), ref_out = values(out), ref_dqkv = values(dqkv);
  double max_v = 0;
  for (int row = 0; row < B * T; ++row)
    for (int c = 0; c < C; ++c) max_v = std::max(max_v, double(std::abs(qkv_values[row * 3 * C + 2 * C + c])));
  expect_close(values(g_out.download()), ref_out, (T * 1e-5 + 3 * flip()) * max_v, 0, "out");
  const std::vector<float> initial = values(dqkv0);
  std::vector<float> added(ref_dqkv.size());
  for (std::size_t i = 0; i < added.size(); ++i) added[i] = ref_dqkv[i] - initial[i];
  expect_close(values(g_dqkv.download()), ref_dqkv,
               (1e-4 + 8 * flip()) * max_abs(added) + 2 * flip() * max_abs(ref_dqkv), 0, "dqkv");
}

TEST_P(CudaOpsPrecision, AttentionForwardAndBackward) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int B = 2, T = 9, NH = 3, hs = 5, C = NH * hs;
  const MatmulPrecision mp{GetParam(), num::Format::fp32};
  ref_.set_matmul_precision(mp);
  gpu_->set_matmul_precision(mp);
  const auto qkv = random_floats(B * T * 3 * C, seed_), dout = random_floats(B * T * C, seed_ + 1);
  const auto dqkv0 = random_floats(qkv.size(), seed_ + 2);
  std::vector<float> out(B * T * C), att(B * NH * T * T), dqkv = dqkv0;
  ref_.attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  ref_.attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);

  OpsArray<float> g_qkv = on_gpu(qkv), g_dout = on_gpu(dout), g_out(*gpu_, out.size()), g_att(*gpu_, att.size());
  OpsArray<float> g_dqkv = on_gpu(dqkv0);
  gpu_->attention_forward(g_out.data(), g_att.data(), g_qkv.data(), B, T, C, NH);
  // The backward reads the reference's probabilities, so it is checked on its own.
  OpsArray<float> r_att = on_gpu(att);
  gpu_->attention_backward(g_dqkv.data(), g_dout.data(), g_qkv.data(), r_att.data(), B, T, C, NH);

  // Both sides read the same operands (tf32 ones rounded to nearest here too), so the scores
  // differ by fp32 accumulation over hs terms and the fp32 softmax by a few units of 2^-24.
  const std::vector<float> gpu_att = g_att.download();
  expect_close(gpu_att, att, 1e-6, 1e-5, "att");
  for (int bh = 0; bh < B * NH; ++bh) {
    for (int t = 0; t < T; ++t) {
      for (int t2 = t + 1; t2 < T; ++t2) ASSERT_EQ(gpu_att[(bh * T + t) * T + t2], 0.0f) << "above the diagonal";
    }
  }
  // out = att v: the probabilities, converted to the input format, may each flip by one unit of it
  // (relative), and the rows of att sum to 1, so out moves by at most 2 flips of max |v| (plus the
  // fp32 differences of att, T * 1e-5 of it).
  double max_v = 0;
  for (int row = 0; row < B * T; ++row)
    for (int c = 0; c < C; ++c) max_v = std::max(max_v, double(std::abs(qkv[row * 3 * C + 2 * C + c])));
  expect_close(g_out.download(), out, (T * 1e-5 + 2 * flip()) * max_v, 0, "out");
  // The backward chains four products and the softmax gradient, whose result is rounded to the
  // input format before two of them: 8 flips of the largest gradient, and 1e-4 of it for the fp32
  // differences (the softmax gradient subtracts nearly equal numbers).
  std::vector<float> added(dqkv.size());
  for (std::size_t i = 0; i < added.size(); ++i) added[i] = dqkv[i] - dqkv0[i];
  expect_close(g_dqkv.download(), dqkv, (1e-4 + 8 * flip()) * max_abs(added), 0, "dqkv");
}

// cuDNN's fused attention against the reference's unfused arithmetic on the same rounded operands.
// The softmax statistics are checked against log-sum-exp computed here in double. The fused kernels
// round the unnormalised probabilities (not the normalised ones) to the input format before the
// product with v, and round out itself: a few flips of max |v| apart. The backward recomputes the
// probabilities and rounds its softmax gradient: a few more flips of the largest gradient.
TEST_P(CudaOpsPrecision, FusedAttentionMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int B = 2, T = 37, NH = 3, hs = 16, C = NH * hs;
  if (const auto why = gpu_->attention_unsupported(AttentionKernels::fused, GetParam(), {hs, T})) GTEST_SKIP() << *why;
  const MatmulPrecision mp{GetParam(), num::Format::fp32};
  ref_.set_matmul_precision(mp);
  gpu_->set_matmul_precision(mp);
  gpu_->set_attention(AttentionKernels::fused, {hs, T});
  const auto qkv = random_floats(B * T * 3 * C, seed_, -2, 2), dout = random_floats(B * T * C, seed_ + 1);
  const auto dqkv0 = random_floats(qkv.size(), seed_ + 2);
  std::vector<float> out(B * T * C), att(B * NH * T * T), dqkv = dqkv0;
  ref_.attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  ref_.attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);

  const std::size_t saved = attention_saved_elements(AttentionKernels::fused, B, T, C, NH);
  ASSERT_LT(saved, att.size()) << "fused attention saves less than the probabilities";
  OpsArray<float> g_qkv = on_gpu(qkv), g_dout = on_gpu(dout), g_out(*gpu_, out.size()), g_saved(*gpu_, saved);
  OpsArray<float> g_dqkv = on_gpu(dqkv0);
  gpu_->attention_forward(g_out.data(), g_saved.data(), g_qkv.data(), B, T, C, NH);
  gpu_->attention_backward(g_dqkv.data(), g_dout.data(), g_qkv.data(), g_saved.data(), B, T, C, NH);

  const std::vector<float> stats = g_saved.download();
  const double scale = 1.0 / std::sqrt(double(hs));
  const auto operand = [&](int b, int t, int part, int h, int d) {
    return double(round_to_format(qkv[(std::size_t(b) * T + t) * 3 * C + part * C + h * hs + d], input()));
  };
  std::vector<float> lse;
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        std::vector<double> scores;
        for (int t2 = 0; t2 <= t; ++t2) {
          double dot = 0;
          for (int d = 0; d < hs; ++d) dot += operand(b, t, 0, h, d) * operand(b, t2, 1, h, d);
          scores.push_back(scale * dot);
        }
        const double top = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double x : scores) sum += std::exp(x - top);
        lse.push_back(static_cast<float>(top + std::log(sum)));
      }
    }
  }
  expect_close(std::vector<float>(stats.begin(), stats.begin() + lse.size()), lse, 1e-4, 1e-5, "softmax statistics");

  double max_v = 0;
  for (int row = 0; row < B * T; ++row)
    for (int c = 0; c < C; ++c) max_v = std::max(max_v, double(std::abs(qkv[row * 3 * C + 2 * C + c])));
  expect_close(g_out.download(), out, 6 * flip() * max_v, 0, "out");
  std::vector<float> added(dqkv.size());
  for (std::size_t i = 0; i < added.size(); ++i) added[i] = dqkv[i] - dqkv0[i];
  expect_close(g_dqkv.download(), dqkv, (1e-3 + 16 * flip()) * max_abs(added), 0, "dqkv");
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaOpsPrecision,
                         ::testing::Values(GemmPrecision::fp32, GemmPrecision::tf32, GemmPrecision::fp16,
                                           GemmPrecision::bf16),
                         [](const ::testing::TestParamInfo<GemmPrecision>& info) {
                           return std::string(gemm_precision_info(info.param).name);
                         });

// The tiny model's loss and every parameter gradient against the reference model's, per mode.
// Both read the same weights and tokens and round the same outputs to the same formats; they part
// only by fp32 accumulation order until a value lands on the other side of a rounding boundary of
// a storage format (one unit: 2^-11 in fp16, 2^-8 in bf16), and in tf32 by the Tensor Cores'
// truncation (up to 2^-10 per operand) against the reference's rounding. Such differences stay a
// small fraction of a gradient's norm: the bounds below are several times what those units give.
struct ModeCase {
  amp::Mode mode;
  double loss_tolerance;      // relative
  double gradient_tolerance;  // of each tensor's gradient norm
};

// One forward and backward of the tiny model on `gpu` (its activations held as `storage` says) and
// on `ref`, compared as described above.
void expect_model_matches_reference(CudaTransformerOps& gpu, ReferenceOps<float>& ref, const ModeCase& mode,
                                    std::uint64_t seed, AttentionKernels attention = AttentionKernels::unfused,
                                    ActivationStorage storage = ActivationStorage::half) {
  const GptConfig config = config_by_name("tiny");
  const int B = 2, T = 7;
  Gpt2Model<float> reference(config, B, T, ref, mode.mode), model(config, B, T, gpu, mode.mode, attention, storage);
  EXPECT_EQ(model.activation_storage(), activation_storage_for(storage, true, mode.mode));
  reference.init(seed);
  // Move every parameter off GPT-2's special starting values (zero biases, unit norms); the padded
  // vocabulary rows stay 0.
  const auto noise = random_floats(reference.parameter_count(), seed + 1, -0.02, 0.02);
  const std::size_t first_pad = static_cast<std::size_t>(config.vocab) * config.channels;
  const std::size_t end_pad = static_cast<std::size_t>(config.padded_vocab()) * config.channels;
  for (std::size_t i = 0; i < noise.size(); ++i) {
    if (i < first_pad || i >= end_pad) reference.params()[i] += noise[i];
  }
  model.upload_params(reference.download_params());
  const auto inputs = random_tokens(B * T, config.vocab, seed + 2);
  const auto targets = random_tokens(B * T, config.vocab, seed + 3);

  reference.zero_grad();
  model.zero_grad();
  const double ref_loss = reference.forward(inputs.data(), targets.data());
  const double loss = model.forward(inputs.data(), targets.data());
  EXPECT_NEAR(loss, ref_loss, mode.loss_tolerance * ref_loss);
  reference.backward();
  model.backward();
  const std::vector<float> ref_grads = reference.download_grads(), grads = model.download_grads();
  ASSERT_EQ(grads.size(), ref_grads.size());
  for (const ParameterTensor& tensor : model.tensors()) {
    double difference = 0, norm = 0;
    for (std::size_t i = tensor.offset; i < tensor.offset + tensor.size; ++i) {
      ASSERT_TRUE(std::isfinite(grads[i])) << tensor.name << " element " << i - tensor.offset;
      difference += (double(grads[i]) - ref_grads[i]) * (double(grads[i]) - ref_grads[i]);
      norm += double(ref_grads[i]) * ref_grads[i];
    }
    EXPECT_LE(std::sqrt(difference), mode.gradient_tolerance * std::sqrt(norm))
        << tensor.name << ": |GPU - reference| " << std::sqrt(difference) << ", |reference| " << std::sqrt(norm);
  }
  for (std::size_t i = first_pad; i < end_pad; ++i) ASSERT_EQ(grads[i], 0.0f) << "padded row of wte, element " << i;
}

// "amp_bf16" for amp-bf16: a test name.
std::string mode_case_name(const ::testing::TestParamInfo<ModeCase>& info) {
  std::string name(amp::mode_name(info.param.mode));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

class CudaModelModes : public CudaOpsTest, public ::testing::WithParamInterface<ModeCase> {};

TEST_P(CudaModelModes, LossAndGradientsMatchTheReferenceModel) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const ModeCase mode = GetParam();
  if (const auto why = gpu_->unsupported(gemm_precision(mode.mode))) GTEST_SKIP() << *why;
  expect_model_matches_reference(*gpu_, ref_, mode, seed_);
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaModelModes,
                         ::testing::Values(ModeCase{amp::Mode::fp32, 1e-5, 1e-4},
                                           ModeCase{amp::Mode::tf32, 2e-3, 2e-2},
                                           ModeCase{amp::Mode::amp_fp16, 2e-3, 2e-2},
                                           ModeCase{amp::Mode::amp_bf16, 1e-2, 5e-2},
                                           ModeCase{amp::Mode::bf16, 1e-2, 5e-2}),
                         mode_case_name);

// The emulation (fp32 buffers rounded after each op) against the same reference: the half-storage
// kernels above and the rounding passes here must both give the reference's numbers.
class CudaEmulatedModelModes : public CudaOpsTest, public ::testing::WithParamInterface<ModeCase> {};

TEST_P(CudaEmulatedModelModes, LossAndGradientsMatchTheReferenceModel) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const ModeCase mode = GetParam();
  if (const auto why = gpu_->unsupported(gemm_precision(mode.mode))) GTEST_SKIP() << *why;
  expect_model_matches_reference(*gpu_, ref_, mode, seed_, AttentionKernels::unfused, ActivationStorage::emulated);
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaEmulatedModelModes,
                         ::testing::Values(ModeCase{amp::Mode::amp_fp16, 2e-3, 2e-2},
                                           ModeCase{amp::Mode::amp_bf16, 1e-2, 5e-2},
                                           ModeCase{amp::Mode::bf16, 1e-2, 5e-2}),
                         mode_case_name);

// On the GPU too, half storage computes what the emulation computes: the same kernels and GEMM
// plans on the same values (the tiny model's GEMMs fit in one block), so the same bits, except in
// the embedding gradients, which encoder_backward sums with atomics in no fixed order.
class CudaHalfStorageModes : public CudaOpsTest, public ::testing::WithParamInterface<amp::Mode> {};

TEST_P(CudaHalfStorageModes, ComputesExactlyWhatTheEmulationComputes) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const amp::Mode mode = GetParam();
  if (const auto why = gpu_->unsupported(gemm_precision(mode))) GTEST_SKIP() << *why;
  const GptConfig config = config_by_name("tiny");
  const int B = 2, T = 7;
  Gpt2Model<float> half(config, B, T, *gpu_, mode, AttentionKernels::unfused, ActivationStorage::half);
  Gpt2Model<float> emulated(config, B, T, *gpu_, mode, AttentionKernels::unfused, ActivationStorage::emulated);
  ASSERT_EQ(half.activation_storage(), ActivationStorage::half);
  half.init(seed_);
  emulated.upload_params(half.download_params());
  const auto inputs = random_tokens(B * T, config.vocab, seed_ + 2);
  const auto targets = random_tokens(B * T, config.vocab, seed_ + 3);
  half.zero_grad();
  emulated.zero_grad();
  EXPECT_EQ(half.forward(inputs.data(), targets.data()), emulated.forward(inputs.data(), targets.data()));
  EXPECT_EQ(half.download_probs(), emulated.download_probs());
  half.backward();
  emulated.backward();
  const std::vector<float> half_grads = half.download_grads(), emulated_grads = emulated.download_grads();
  for (const ParameterTensor& tensor : half.tensors()) {
    double difference = 0, norm = 0;
    std::size_t different = 0;
    for (std::size_t i = tensor.offset; i < tensor.offset + tensor.size; ++i) {
      difference += (double(half_grads[i]) - emulated_grads[i]) * (double(half_grads[i]) - emulated_grads[i]);
      norm += double(emulated_grads[i]) * emulated_grads[i];
      different += half_grads[i] != emulated_grads[i] ? 1 : 0;
    }
    if (tensor.name == "wte.weight" || tensor.name == "wpe.weight") {
      EXPECT_LE(std::sqrt(difference), 1e-5 * std::sqrt(norm)) << tensor.name;
    } else {
      EXPECT_EQ(different, 0u) << tensor.name << ": elements that differ, relative difference "
                               << std::sqrt(difference / std::max(norm, 1e-300));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaHalfStorageModes,
                         ::testing::Values(amp::Mode::amp_fp16, amp::Mode::amp_bf16, amp::Mode::bf16),
                         [](const auto& info) {
                           std::string name(amp::mode_name(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// With cuDNN's fused attention the model departs from the reference (which keeps the unfused
// arithmetic) by the fused kernels' own rounding of the probabilities and of their gradient: the
// mode's bounds, doubled.
class CudaFusedModelModes : public CudaOpsTest, public ::testing::WithParamInterface<ModeCase> {};

TEST_P(CudaFusedModelModes, LossAndGradientsMatchTheReferenceModel) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModeCase mode = GetParam();
  if (const auto why = gpu_->attention_unsupported(AttentionKernels::fused, gemm_precision(mode.mode),
                                                   {config_by_name("tiny").head_size(), 7}))
    GTEST_SKIP() << *why;
  mode.loss_tolerance *= 2;
  mode.gradient_tolerance *= 2;
  expect_model_matches_reference(*gpu_, ref_, mode, seed_, AttentionKernels::fused);
  EXPECT_NE(gpu_->implementation().find("cuDNN"), std::string::npos) << gpu_->implementation();
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaFusedModelModes,
                         ::testing::Values(ModeCase{amp::Mode::amp_fp16, 2e-3, 2e-2},
                                           ModeCase{amp::Mode::amp_bf16, 1e-2, 5e-2},
                                           ModeCase{amp::Mode::bf16, 1e-2, 5e-2}),
                         mode_case_name);

TEST_F(CudaOpsTest, FusedAttentionRefusesShapesCudnnCannotTrain) {
  if (const auto why = gpu_->attention_unsupported(AttentionKernels::fused, GemmPrecision::bf16, {64, 64}))
    GTEST_SKIP() << *why;
  for (int head_size : {12, 264}) {
    const auto why = gpu_->attention_unsupported(AttentionKernels::fused, GemmPrecision::bf16, {head_size, 64});
    ASSERT_TRUE(why.has_value()) << head_size;
    EXPECT_NE(why->find("multiple of 8"), std::string::npos) << *why;
    EXPECT_THROW(gpu_->set_attention(AttentionKernels::fused, {head_size, 64}), UsageError);
  }
  const auto why = gpu_->attention_unsupported(AttentionKernels::fused, GemmPrecision::bf16, {64, 1});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("sequences of 1 token"), std::string::npos) << *why;
  EXPECT_THROW(gpu_->set_attention(AttentionKernels::fused, {64, 1}), UsageError);
}

TEST_F(CudaOpsTest, FusedAttentionRefusesFp32AndTf32) {
  for (GemmPrecision precision : {GemmPrecision::fp32, GemmPrecision::tf32}) {
    const auto why = gpu_->attention_unsupported(AttentionKernels::fused, precision, {64, 64});
    ASSERT_TRUE(why.has_value()) << gemm_precision_info(precision).name;
    EXPECT_NE(why->find("fp16 or bf16"), std::string::npos) << *why;
  }
  // Asked anyway, the op names the problem instead of computing something else.
  const int B = 1, T = 8, NH = 1, C = 16;
  if (const auto why = gpu_->attention_unsupported(AttentionKernels::fused, GemmPrecision::bf16, {C, T})) GTEST_SKIP() << *why;
  gpu_->set_matmul_precision({GemmPrecision::fp32, num::Format::fp32});
  gpu_->set_attention(AttentionKernels::fused, {C, T});
  OpsArray<float> qkv = on_gpu(random_floats(B * T * 3 * C, seed_)), out(*gpu_, B * T * C),
                  att(*gpu_, attention_saved_elements(AttentionKernels::fused, B, T, C, NH));
  EXPECT_THROW(gpu_->attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH), BackendError);
}

// --tensor-cores off and batched-off: every GEMM the policy keeps off Tensor Cores ran an algorithm
// whose numerical implementation flags have no Tensor Core op type, and the model still matches the
// reference within the mode's bounds (CUDA-core fp32 accumulation only tightens them).
struct PolicyCase {
  TensorCorePolicy policy;
  ModeCase mode;
};

class CudaTensorCorePolicy : public CudaOpsTest, public ::testing::WithParamInterface<PolicyCase> {};

TEST_P(CudaTensorCorePolicy, KeptOffTensorCoresAndStillMatchesTheReference) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const PolicyCase c = GetParam();
  if (const auto why = gpu_->unsupported(gemm_precision(c.mode.mode))) GTEST_SKIP() << *why;
  gpu_->set_tensor_core_policy(c.policy);
  EXPECT_NE(gpu_->implementation().find("off Tensor Cores"), std::string::npos) << gpu_->implementation();
  expect_model_matches_reference(*gpu_, ref_, c.mode, seed_);
  const std::vector<GemmAlgorithm> choices = gpu_->gemm_algorithms();
  std::size_t batched = 0, single = 0;
  for (const GemmAlgorithm& choice : choices) {
    ++(choice.batched ? batched : single);
    EXPECT_EQ(choice.precision, gemm_precision(c.mode.mode)) << choice.gemm << " (" << choice.problem << ")";
    if (c.policy == TensorCorePolicy::off || choice.batched) {
      EXPECT_FALSE(choice.tensor_cores) << choice.gemm << " (" << choice.problem << ", " << choice.compute_type
                                        << "): numerical implementation flags 0x" << std::hex
                                        << choice.numerical_impl_flags;
    }
  }
  // The six attention products share plans where their problems coincide: q k^T with dy v^T, att v
  // with dscore k, att^T dy with dscore^T q; three distinct ones at least.
  EXPECT_GE(batched, 3u) << "the attention products";
  EXPECT_GT(single, 0u) << "the matmuls";
}

INSTANTIATE_TEST_SUITE_P(Policies, CudaTensorCorePolicy,
                         ::testing::Values(PolicyCase{TensorCorePolicy::off, {amp::Mode::tf32, 2e-3, 2e-2}},
                                           PolicyCase{TensorCorePolicy::off, {amp::Mode::amp_fp16, 2e-3, 2e-2}},
                                           PolicyCase{TensorCorePolicy::off, {amp::Mode::amp_bf16, 1e-2, 5e-2}},
                                           PolicyCase{TensorCorePolicy::batched_off, {amp::Mode::amp_fp16, 2e-3, 2e-2}}),
                         [](const ::testing::TestParamInfo<PolicyCase>& info) {
                           std::string name = std::string(tensor_core_policy_name(info.param.policy)) + "_" +
                                              std::string(amp::mode_name(info.param.mode.mode));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_F(CudaOpsTest, AmpFp16TrainingLowersTheLoss) {
  const GptConfig config = config_by_name("tiny");
  TrainOptions options;
  options.batch = 4;
  options.seq_len = 16;
  options.steps = 30;
  options.warmup_steps = 5;
  options.max_lr = 1e-2f;
  options.min_lr = 1e-3f;
  options.seed = 3;
  const MarkovChain chain = MarkovChain::random(config.vocab, 3, 11);
  MarkovTokenStream data(chain, 1);
  const std::vector<StepRecord> curve = train(config, options, data, *gpu_, amp::Mode::amp_fp16);
  ASSERT_EQ(curve.size(), 30u);
  for (const StepRecord& r : curve) EXPECT_TRUE(std::isfinite(r.loss)) << "step " << r.step;
  double end = 0;
  for (std::size_t i = curve.size() - 5; i < curve.size(); ++i) end += curve[i].loss / 5;
  EXPECT_NEAR(curve.front().loss, std::log(config.vocab), 0.2);
  EXPECT_LT(end, curve.front().loss - 0.3) << "first " << curve.front().loss << ", mean of the last five " << end;
}

}  // namespace
}  // namespace mpbench::workloads
