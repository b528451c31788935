// Fp8GemmQuantizer, the fp8 modes' per-tensor scaling of GEMM operands: the values it hands the
// GEMMs are amp's quantize/dequantize with the recipe's scale, the counts are per operand kind,
// and the delayed recipe follows its amax history through a crafted spike.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "amp/block_scaling.hpp"
#include "tests/test_seed.hpp"
#include "workloads/fp8_gemm.hpp"

namespace mpbench::workloads {
namespace {

using Vec = std::vector<float>;

// n values with amax `amax` (the first one), the rest smaller.
Vec with_amax(std::size_t n, float amax) {
  Vec x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = amax * 0.99f * std::sin(float(i) + 1.0f);
  x[0] = amax;
  return x;
}

TEST(Fp8GemmQuantizer, CurrentScalingIsAmpsQuantizeAndDequantize) {
  Fp8GemmQuantizer q;
  q.configure(Fp8Recipe::current);
  q.set_range("c_fc", 0, false);
  const Vec x = with_amax(100, 3.7f);
  Vec out(x.size());
  q.quantize(Fp8Operand::input, x.data(), x.size(), out.data());
  std::vector<std::uint8_t> codes(x.size());
  const auto r = amp::quantize_current_scaling(x, num::Format::e4m3, codes);
  Vec want(x.size());
  amp::dequantize_per_tensor(codes, r.scale_inv, num::Format::e4m3, want);
  EXPECT_EQ(out, want);
  EXPECT_NE(out, x) << "e4m3 has 3 mantissa bits: some of these values must move";
  EXPECT_FLOAT_EQ(out[0], 3.7f) << "the amax maps to 448 and back";
  // Gradients in the backward: e5m2.
  q.set_range("c_fc", 0, true);
  q.quantize(Fp8Operand::grad, x.data(), x.size(), out.data());
  const auto g = amp::quantize_current_scaling(x, num::Format::e5m2, codes);
  amp::dequantize_per_tensor(codes, g.scale_inv, num::Format::e5m2, want);
  EXPECT_EQ(out, want);
  const auto details = q.take_step_details();
  EXPECT_EQ(details["by_operand"]["input"]["tensors"], 1);
  EXPECT_EQ(details["by_operand"]["grad"]["tensors"], 1);
  EXPECT_EQ(details["total"]["elements"], 200);
  EXPECT_FALSE(details.contains("scale_changes"));
  EXPECT_GT(details["quantize_seconds"].get<double>(), 0.0) << "two quantizations timed";
  EXPECT_EQ(q.step_quantize_seconds(), 0.0) << "taking the details starts the next step's time";
}

TEST(Fp8GemmQuantizer, QuantizingWithoutARecipeIsAnError) {
  Fp8GemmQuantizer q;
  Vec x(4, 1.0f);
  EXPECT_THROW(q.quantize(Fp8Operand::weight, x.data(), x.size(), x.data()), std::logic_error);
  EXPECT_TRUE(q.take_step_details().is_null());
}

// Delayed, history 4, margin 0: the scale of step s is 448 / max(amax of steps s-4..s-1); the first
// step's is 1. A spike (amax 100 where the others are 1) saturates in its own step (the scale came
// from amax 1), sets the scale for the next 4 steps, then leaves the window.
TEST(Fp8GemmQuantizer, DelayedScalesFollowTheAmaxHistoryThroughASpike) {
  Fp8GemmQuantizer q;
  q.configure(Fp8Recipe::delayed, 4, 0);
  const std::vector<float> amax = {1, 1, 1, 100, 1, 1, 1, 1, 1};
  const std::vector<float> want_scale = {1, 448, 448, 448, 4.48f, 4.48f, 4.48f, 4.48f, 448};
  Vec out(64);
  for (std::size_t step = 0; step < amax.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    q.set_range("lm_head", -1, false);
    const Vec x = with_amax(64, amax[step]);
    q.quantize(Fp8Operand::weight, x.data(), x.size(), out.data());
    const amp::DelayedScaler* s = q.scaler("lm_head weight");
    ASSERT_NE(s, nullptr);
    EXPECT_FLOAT_EQ(s->scale(), want_scale[step]);
    const std::uint64_t saturated = q.step_counts()[1].saturated;
    if (step == 3) {
      EXPECT_GT(saturated, 0u) << "the spike exceeds 448 / 448 * 1";
      EXPECT_FLOAT_EQ(out[0], 1.0f) << "clamped to 448 / scale";
    } else {
      EXPECT_EQ(saturated, 0u);
    }
    q.end_step();
    const auto details = q.take_step_details();
    const bool changes = step + 1 < want_scale.size() && want_scale[step + 1] != want_scale[step];
    EXPECT_EQ(details["scale_changes"], changes ? 1 : 0);
    EXPECT_EQ(details["scaled_tensors"], 1);
    EXPECT_EQ(details["history_length"], 4);
  }
}

TEST(Fp8GemmQuantizer, EachRangeAndRoleHasItsOwnScaler) {
  Fp8GemmQuantizer q;
  q.configure(Fp8Recipe::delayed);
  Vec x = with_amax(8, 2.0f), out(8);
  for (int layer : {0, 1}) {
    q.set_range("c_fc", layer, false);
    q.quantize(Fp8Operand::input, x.data(), x.size(), out.data());
    q.quantize(Fp8Operand::weight, x.data(), x.size(), out.data());
  }
  q.set_range("c_fc", 1, true);
  q.quantize(Fp8Operand::grad, x.data(), x.size(), out.data());
  q.quantize(Fp8Operand::weight, x.data(), x.size(), out.data());  // the forward's scaler, not counted again
  EXPECT_NE(q.scaler("c_fc L0 input"), nullptr);
  EXPECT_NE(q.scaler("c_fc L1 weight"), nullptr);
  EXPECT_NE(q.scaler("c_fc L1 grad"), nullptr);
  EXPECT_EQ(q.step_counts()[1].tensors, 2u);
  q.end_step();
  EXPECT_EQ(q.take_step_details()["scaled_tensors"], 5);
  EXPECT_FLOAT_EQ(q.scaler("c_fc L1 grad")->scale(), 57344.0f / 2.0f) << "e5m2's max over the amax";
}

// mxfp8: blocks of 32 along K. K along the rows is amp's row-blocked MX quantization as it is; K
// down the columns is the same on the transpose, transposed back. Counts per operand kind.
TEST(Fp8GemmQuantizer, MxBlocksRunAlongK) {
  Fp8GemmQuantizer q;
  q.configure(Fp8Recipe::mxfp8);
  const std::size_t rows = 5, cols = 70;  // two full blocks and a tail of 6 per row
  Vec x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i)) * std::exp2(float(int(i % 23) - 11));
  const auto mx = [](const Vec& v, std::size_t r, std::size_t c) {
    std::vector<std::uint8_t> codes(v.size()), scales(r * amp::mx_blocks_per_row(c));
    amp::mx_quantize_rows(v, r, c, num::Format::e4m3, codes, scales);
    Vec out(v.size());
    amp::mx_dequantize_rows(codes, scales, r, c, num::Format::e4m3, out);
    return out;
  };
  Vec out(x.size());
  q.quantize_matrix(Fp8Operand::input, x.data(), rows, cols, true, out.data());
  EXPECT_EQ(out, mx(x, rows, cols));
  Vec xt(x.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) xt[c * rows + r] = x[r * cols + c];
  const Vec by_columns = mx(xt, cols, rows);
  q.quantize_matrix(Fp8Operand::weight, x.data(), rows, cols, false, out.data());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) ASSERT_EQ(out[r * cols + c], by_columns[c * rows + r]) << r << " " << c;
  EXPECT_NE(by_columns, xt) << "the blocks moved some values";
  q.set_range("c_fc", 0, true);
  q.quantize_matrix(Fp8Operand::grad, x.data(), rows, cols, true, out.data());
  q.quantize_matrix(Fp8Operand::grad, x.data(), rows, cols, false, out.data(), false);  // the second copy
  const auto details = q.take_step_details();
  EXPECT_EQ(details["by_operand"]["grad"]["tensors"], 1);
  EXPECT_EQ(details["by_operand"]["input"]["tensors"], 1);
  EXPECT_EQ(details["block_size"], 32);
  EXPECT_EQ(details["formats"]["grad"], "fp8-e4m3");
}

// The forward's fp8 copies: in the backward, reuse_forward_copy hands back exactly what quantizing
// the same tensor again would (a second quantizer that keeps none is the check), for inputs and
// weights of the per-tensor recipes, and only for the same range, role, address and size within
// the step. Fresh random values over several binades; delayed over three steps, so that the copy
// of a step with a history-based scale is reused too.
TEST(Fp8GemmQuantizer, TheBackwardReusesTheForwardsCopiesBitForBit) {
  const std::uint32_t seed = testing_support::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (MPB_TEST_SEED)");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1, 1), binade(-12, 4);
  const auto fresh = [&](std::size_t n) {
    Vec v(n);
    for (float& x : v) x = mantissa(rng) * std::exp2(binade(rng));
    return v;
  };
  const auto bits = [](const Vec& v) {
    std::vector<std::uint32_t> b(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) b[i] = std::bit_cast<std::uint32_t>(v[i]);
    return b;
  };
  for (Fp8Recipe recipe : {Fp8Recipe::current, Fp8Recipe::delayed}) {
    SCOPED_TRACE(std::string(fp8_recipe_name(recipe)));
    Fp8GemmQuantizer keeping, requantizing;
    keeping.configure(recipe, 4, 0, amp::MxScaleRounding::down, true);
    requantizing.configure(recipe, 4, 0, amp::MxScaleRounding::down, false);
    ASSERT_TRUE(keeping.keeps_forward_copies());
    ASSERT_FALSE(requantizing.keeps_forward_copies());
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const Vec input = fresh(300), weight = fresh(120), other = fresh(120);
      Vec out(300), want(300);
      for (Fp8GemmQuantizer* q : {&keeping, &requantizing}) {
        q->set_range("c_fc", 2, false);
        q->quantize_matrix(Fp8Operand::input, input.data(), 10, 30, true, out.data(), true, input.data());
        q->quantize_matrix(Fp8Operand::weight, weight.data(), 4, 30, true, out.data(), true, weight.data());
        q->set_range("c_fc", 2, true);
      }
      EXPECT_FALSE(requantizing.reuse_forward_copy(Fp8Operand::input, input.data(), input.size(), out.data()));
      for (auto [role, values] : {std::pair{Fp8Operand::input, &input}, std::pair{Fp8Operand::weight, &weight}}) {
        const std::size_t n = values->size();
        Vec reused(n, -1.0f), again(n);
        ASSERT_TRUE(keeping.reuse_forward_copy(role, values->data(), n, reused.data()));
        requantizing.quantize_matrix(role, values->data(), 1, n, false, again.data(), true, values->data());
        EXPECT_EQ(bits(reused), bits(again));
        EXPECT_NE(reused, *values) << "e4m3 moved some values";
        // Not this tensor: another address, size, role or range.
        EXPECT_FALSE(keeping.reuse_forward_copy(role, other.data(), n, reused.data()));
        EXPECT_FALSE(keeping.reuse_forward_copy(role, values->data(), n - 1, reused.data()));
      }
      EXPECT_FALSE(keeping.reuse_forward_copy(Fp8Operand::grad, input.data(), input.size(), out.data()));
      keeping.set_range("c_proj", 2, true);
      EXPECT_FALSE(keeping.reuse_forward_copy(Fp8Operand::input, input.data(), input.size(), out.data()));
      keeping.set_range("c_fc", 2, false);
      EXPECT_FALSE(keeping.reuse_forward_copy(Fp8Operand::input, input.data(), input.size(), out.data()))
          << "only the backward reuses";
      // The same counts (inputs and weights in the forward only) and the same scales; the copies'
      // bytes are their codes and scales.
      for (std::size_t kind = 0; kind < kFp8OperandKinds; ++kind) {
        EXPECT_EQ(keeping.step_counts()[kind].elements, requantizing.step_counts()[kind].elements) << kind;
        EXPECT_EQ(keeping.step_counts()[kind].saturated, requantizing.step_counts()[kind].saturated) << kind;
      }
      EXPECT_EQ(keeping.step_copies_reused(), 2u);
      EXPECT_EQ(keeping.kept_copy_bytes(), 300u + 120u + 2 * sizeof(float));
      keeping.end_step();
      requantizing.end_step();
      keeping.set_range("c_fc", 2, true);
      EXPECT_FALSE(keeping.reuse_forward_copy(Fp8Operand::weight, weight.data(), weight.size(), out.data()))
          << "the optimizer step ends the copies' step";
      const nlohmann::json kept = keeping.take_step_details(), requantized = requantizing.take_step_details();
      EXPECT_EQ(kept["forward_copies"]["reused"], 2);
      EXPECT_EQ(kept["forward_copies"]["kept"], true);
      EXPECT_EQ(requantized["forward_copies"]["reused"], 0);
      EXPECT_EQ(requantized["forward_copies"]["bytes"], 0);
      EXPECT_EQ(kept["total"], requantized["total"]);
      if (recipe == Fp8Recipe::delayed) {
        EXPECT_EQ(keeping.scaler("c_fc L2 input")->scale(), requantizing.scaler("c_fc L2 input")->scale());
        EXPECT_EQ(kept["scale_changes"], requantized["scale_changes"]);
      }
    }
  }
}

// Held weights (an optimizer step's micro-batches): a later forward reuses a weight's copy, not an
// input's; the next hold, weights_changed and end_step drop the copies.
TEST(Fp8GemmQuantizer, HeldWeightsAreQuantizedOncePerStep) {
  Fp8GemmQuantizer q;
  q.configure(Fp8Recipe::current);
  const Vec x = with_amax(64, 2.5f), w = with_amax(32, 0.3f);
  Vec out(64), again(64);
  const auto forward = [&] {
    q.set_range("c_fc", 1, false);
    q.quantize_matrix(Fp8Operand::input, x.data(), 2, 32, true, out.data(), true, x.data());
    q.quantize_matrix(Fp8Operand::weight, w.data(), 1, 32, true, out.data(), true, w.data());
  };
  q.hold_weights();
  forward();
  EXPECT_TRUE(q.reuse_forward_copy(Fp8Operand::weight, w.data(), w.size(), again.data()));
  EXPECT_EQ(Vec(again.begin(), again.begin() + 32), Vec(out.begin(), out.begin() + 32));
  EXPECT_FALSE(q.reuse_forward_copy(Fp8Operand::input, x.data(), x.size(), again.data())) << "inputs change";
  for (const auto drop : {&Fp8GemmQuantizer::hold_weights, &Fp8GemmQuantizer::weights_changed,
                          &Fp8GemmQuantizer::end_step}) {
    q.hold_weights();
    forward();
    q.set_range("c_fc", 1, true);
    ASSERT_TRUE(q.reuse_forward_copy(Fp8Operand::weight, w.data(), w.size(), again.data()));
    (q.*drop)();
    EXPECT_FALSE(q.reuse_forward_copy(Fp8Operand::weight, w.data(), w.size(), again.data())) << "not even the backward";
  }
  q.weights_changed();
  forward();
  EXPECT_FALSE(q.reuse_forward_copy(Fp8Operand::weight, w.data(), w.size(), again.data()))
      << "without a hold, a forward quantizes its weights";
}

// mxfp8 keeps no copies: the backward blocks its operands along another dimension.
TEST(Fp8GemmQuantizer, MxKeepsNoForwardCopies) {
  Fp8GemmQuantizer q;
  q.configure(Fp8Recipe::mxfp8);
  EXPECT_FALSE(q.keeps_forward_copies());
  const Vec x = with_amax(64, 2.0f);
  Vec out(x.size());
  q.set_range("c_fc", 0, false);
  q.quantize_matrix(Fp8Operand::weight, x.data(), 2, 32, true, out.data(), true, x.data());
  q.set_range("c_fc", 0, true);
  EXPECT_FALSE(q.reuse_forward_copy(Fp8Operand::weight, x.data(), x.size(), out.data()));
  EXPECT_EQ(q.kept_copy_bytes(), 0u);
  EXPECT_FALSE(q.take_step_details().contains("forward_copies"));
}

}  // namespace
}  // namespace mpbench::workloads
