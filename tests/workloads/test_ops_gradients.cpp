// Every op's backward against central finite differences of its forward, in double, on random
// inputs drawn from a fresh seed each run.
#include <gtest/gtest.h>

#include "tests/workloads/gradient_check.hpp"
#include "workloads/reference_ops.hpp"

namespace mpbench::workloads {
namespace {

using testing::expect_gradient;
using testing::fresh_seed;
using testing::random_values;
using testing::weighted_sum;
using Vec = std::vector<double>;

class OpGradients : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = fresh_seed();
    trace_ = std::make_unique<::testing::ScopedTrace>(__FILE__, __LINE__, "seed " + std::to_string(seed_));
  }
  Vec random(std::size_t n, double lo = -1.0, double hi = 1.0) { return random_values(n, seed_ + draws_++, lo, hi); }
  std::vector<std::int32_t> random_tokens(std::size_t n, int vocab) {
    std::vector<std::int32_t> tokens(n);
    for (std::size_t i = 0; i < n; ++i) tokens[i] = static_cast<std::int32_t>(mix64(seed_ + 1000, i) % vocab);
    return tokens;
  }

  ReferenceOps<double> ops_;
  std::uint64_t seed_ = 0;
  std::uint64_t draws_ = 0;
  std::unique_ptr<::testing::ScopedTrace> trace_;
};

TEST_F(OpGradients, Encoder) {
  const int B = 2, T = 4, C = 3, V = 3;  // few tokens, so rows of wte collect several gradients
  const auto tokens = random_tokens(B * T, V);
  Vec wte = random(V * C), wpe = random(T * C), w = random(B * T * C), out(B * T * C);
  auto loss = [&] {
    ops_.encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return weighted_sum(out, w);
  };
  Vec dwte(wte.size()), dwpe(wpe.size());
  ops_.encoder_backward(dwte.data(), dwpe.data(), w.data(), tokens.data(), B, T, C);
  expect_gradient(wte, dwte, loss);
  expect_gradient(wpe, dwpe, loss);
}

TEST_F(OpGradients, LayerNorm) {
  const int N = 3, C = 7;
  Vec inp = random(N * C, -2, 2), weight = random(C), bias = random(C), w = random(N * C);
  Vec out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    ops_.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C);
    return weighted_sum(out, w);
  };
  loss();
  Vec dinp(inp.size()), dweight(C), dbias(C);
  ops_.layernorm_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(), weight.data(),
                          mean.data(), rstd.data(), N, C);
  expect_gradient(inp, dinp, loss);
  expect_gradient(weight, dweight, loss);
  expect_gradient(bias, dbias, loss);
}

TEST_F(OpGradients, LayerNormNormalisesEachRow) {
  const int N = 2, C = 9;
  Vec inp = random(N * C, -3, 5), ones(C, 1.0), zeros(C, 0.0), out(N * C), mean(N), rstd(N);
  ops_.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), ones.data(), zeros.data(), N, C);
  for (int n = 0; n < N; ++n) {
    double sum = 0, squares = 0;
    for (int c = 0; c < C; ++c) sum += out[n * C + c];
    for (int c = 0; c < C; ++c) squares += out[n * C + c] * out[n * C + c];
    EXPECT_NEAR(sum / C, 0.0, 1e-12);
    EXPECT_NEAR(squares / C, 1.0, 1e-3);  // 1 up to the 1e-5 in the denominator
  }
}

TEST_F(OpGradients, MatmulWithBias) {
  const int N = 3, C = 4, OC = 5;
  Vec inp = random(N * C), weight = random(OC * C), bias = random(OC), w = random(N * OC), out(N * OC);
  auto loss = [&] {
    ops_.matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
    return weighted_sum(out, w);
  };
  Vec dinp(inp.size()), dweight(weight.size()), dbias(OC);
  ops_.matmul_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(), weight.data(), N, C, OC);
  expect_gradient(inp, dinp, loss);
  expect_gradient(weight, dweight, loss);
  expect_gradient(bias, dbias, loss);
}

TEST_F(OpGradients, MatmulWithoutBias) {
  const int N = 2, C = 3, OC = 4;
  Vec inp = random(N * C), weight = random(OC * C), w = random(N * OC), out(N * OC);
  auto loss = [&] {
    ops_.matmul_forward(out.data(), inp.data(), weight.data(), nullptr, N, C, OC);
    return weighted_sum(out, w);
  };
  Vec dinp(inp.size()), dweight(weight.size());
  ops_.matmul_backward(dinp.data(), dweight.data(), nullptr, w.data(), inp.data(), weight.data(), N, C, OC);
  expect_gradient(inp, dinp, loss);
  expect_gradient(weight, dweight, loss);
}

TEST_F(OpGradients, CausalAttention) {
  const int B = 2, T = 4, C = 6, NH = 2;
  Vec qkv = random(B * T * 3 * C, -2, 2), w = random(B * T * C), out(B * T * C), att(B * NH * T * T);
  auto loss = [&] {
    ops_.attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    return weighted_sum(out, w);
  };
  loss();
  Vec dqkv(qkv.size());
  ops_.attention_backward(dqkv.data(), w.data(), qkv.data(), att.data(), B, T, C, NH);
  expect_gradient(qkv, dqkv, loss);
}

TEST_F(OpGradients, AttentionIsCausalAndNormalised) {
  const int B = 1, T = 5, C = 4, NH = 2;
  Vec qkv = random(B * T * 3 * C), out(B * T * C), att(B * NH * T * T);
  ops_.attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  for (int h = 0; h < NH; ++h) {
    for (int t = 0; t < T; ++t) {
      double total = 0;
      for (int t2 = 0; t2 < T; ++t2) {
        const double a = att[(h * T + t) * T + t2];
        if (t2 > t) {
          EXPECT_EQ(a, 0.0) << "position " << t << " attends to the future " << t2;
        }
        total += a;
      }
      EXPECT_NEAR(total, 1.0, 1e-12);
    }
  }
  // The first position can only attend to itself: its output is its own value vector.
  for (int h = 0; h < NH; ++h) {
    for (int i = 0; i < C / NH; ++i) EXPECT_NEAR(out[h * (C / NH) + i], qkv[2 * C + h * (C / NH) + i], 1e-12);
  }
}

TEST_F(OpGradients, Gelu) {
  const std::size_t n = 11;
  Vec inp = random(n, -4, 4), w = random(n), out(n);
  auto loss = [&] {
    ops_.gelu_forward(out.data(), inp.data(), n);
    return weighted_sum(out, w);
  };
  Vec dinp(n);
  ops_.gelu_backward(dinp.data(), w.data(), inp.data(), n);
  expect_gradient(inp, dinp, loss);
}

TEST_F(OpGradients, GeluMatchesTheTanhFormula) {
  EXPECT_DOUBLE_EQ(gelu(0.0), 0.0);
  EXPECT_NEAR(gelu(1.0), 0.8411919906082768, 1e-15);  // 0.5 (1 + tanh(sqrt(2/pi) 1.044715))
  EXPECT_NEAR(gelu(-1.0), -0.15880800939172324, 1e-15);
  EXPECT_NEAR(gelu(1.0f), 0.84119199f, 1e-6f);
}

TEST_F(OpGradients, Residual) {
  const std::size_t n = 6;
  Vec a = random(n), b = random(n), w = random(n), out(n);
  auto loss = [&] {
    ops_.residual_forward(out.data(), a.data(), b.data(), n);
    return weighted_sum(out, w);
  };
  Vec da(n), db(n);
  ops_.residual_backward(da.data(), db.data(), w.data(), n);
  expect_gradient(a, da, loss);
  expect_gradient(b, db, loss);
}

TEST_F(OpGradients, SoftmaxCrossEntropyWithPaddedVocab) {
  const int N = 3, V = 5, Vp = 8;
  const auto targets = random_tokens(N, V);
  Vec logits = random(N * Vp, -3, 3), dlosses = random(N, 0.1, 1.0), losses(N), probs(N * Vp);
  auto loss = [&] {
    ops_.softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp);
    return weighted_sum(losses, dlosses);
  };
  loss();
  Vec dlogits(logits.size());
  ops_.softmax_crossentropy_backward(dlogits.data(), dlosses.data(), probs.data(), targets.data(), N, V, Vp);
  expect_gradient(logits, dlogits, loss);
}

TEST_F(OpGradients, PaddingColumnsGetNoProbabilityAndNoGradient) {
  const int N = 4, V = 5, Vp = 8;
  const auto targets = random_tokens(N, V);
  Vec logits = random(N * Vp, -3, 3);
  for (int n = 0; n < N; ++n) {
    for (int v = V; v < Vp; ++v) logits[n * Vp + v] = 50.0;  // would dominate an unmasked softmax
  }
  Vec losses(N), probs(N * Vp), dlogits(N * Vp), dlosses(N, 1.0);
  ops_.softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, Vp);
  ops_.softmax_crossentropy_backward(dlogits.data(), dlosses.data(), probs.data(), targets.data(), N, V, Vp);
  for (int n = 0; n < N; ++n) {
    double total = 0;
    for (int v = 0; v < V; ++v) total += probs[n * Vp + v];
    EXPECT_NEAR(total, 1.0, 1e-12);
    EXPECT_NEAR(losses[n], -std::log(probs[n * Vp + targets[n]]), 1e-12);
    for (int v = V; v < Vp; ++v) {
      EXPECT_EQ(probs[n * Vp + v], 0.0);
      EXPECT_EQ(dlogits[n * Vp + v], 0.0);
    }
  }
}

TEST_F(OpGradients, GlobalNormIsTheEuclideanNorm) {
  const Vec grads{3.0, -4.0, 12.0};
  EXPECT_DOUBLE_EQ(ops_.global_norm(grads.data(), grads.size()), 13.0);
}

TEST_F(OpGradients, FloatAndDoubleOpsAgree) {
  const int N = 3, C = 5, OC = 4;
  const Vec inp = random(N * C), weight = random(OC * C), bias = random(OC);
  Vec out(N * OC);
  ops_.matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
  const std::vector<float> inp_f(inp.begin(), inp.end()), weight_f(weight.begin(), weight.end()),
      bias_f(bias.begin(), bias.end());
  std::vector<float> out_f(N * OC);
  ReferenceOps<float>().matmul_forward(out_f.data(), inp_f.data(), weight_f.data(), bias_f.data(), N, C, OC);
  for (int i = 0; i < N * OC; ++i) EXPECT_NEAR(out_f[i], out[i], 1e-6);
}

}  // namespace
}  // namespace mpbench::workloads
