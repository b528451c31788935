// The whole tiny model: gradients against finite differences of the loss, initialisation, and
// gradient accumulation.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "tests/workloads/gradient_check.hpp"
#include "workloads/model.hpp"
#include "workloads/reference_ops.hpp"

namespace mpbench::workloads {
namespace {

using testing::random_tokens;

TEST(Gpt2Model, GradientsMatchFiniteDifferences) {
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const GptConfig config = config_by_name("tiny");
  const int B = 2, T = 5;
  ReferenceOps<double> ops;
  Gpt2Model<double> model(config, B, T, ops);
  model.init(seed);
  // Move every parameter off GPT-2's special starting values (zero biases, unit norms).
  const auto noise = testing::random_values(model.parameter_count(), seed + 1, -0.05, 0.05);
  for (std::size_t i = 0; i < noise.size(); ++i) model.params()[i] += noise[i];
  const auto inputs = random_tokens(B * T, config.vocab, seed + 2);
  const auto targets = random_tokens(B * T, config.vocab, seed + 3);

  model.zero_grad();
  model.forward(inputs.data(), targets.data());
  model.backward();
  const std::vector<double> analytic = model.download_grads();
  auto loss = [&] { return model.forward(inputs.data(), targets.data()); };

  for (const ParameterTensor& tensor : model.tensors()) {
    for (int sample = 0; sample < 4; ++sample) {
      const std::size_t i = tensor.offset + mix64(seed + 4, tensor.offset + sample) % tensor.size;
      const double numeric = testing::central_difference(model.params(), i, loss);
      EXPECT_NEAR(analytic[i], numeric, 1e-8 + 1e-6 * std::abs(numeric))
          << tensor.name << " element " << i - tensor.offset;
    }
  }
  // The rows of wte that tokens use get a gradient from both the embedding and the LM head.
  const std::size_t used_row = static_cast<std::size_t>(inputs[0]) * config.channels;
  const double numeric = testing::central_difference(model.params(), used_row, loss);
  EXPECT_NEAR(analytic[used_row], numeric, 1e-8 + 1e-6 * std::abs(numeric));
}

TEST(Gpt2Model, PaddedVocabRowsStayOutOfTheLoss) {
  const GptConfig config = config_by_name("tiny");
  ASSERT_GT(config.padded_vocab(), config.vocab);
  ReferenceOps<double> ops;
  Gpt2Model<double> model(config, 1, 4, ops);
  model.init(3);
  const std::size_t first_pad = static_cast<std::size_t>(config.vocab) * config.channels;
  const std::size_t end_pad = static_cast<std::size_t>(config.padded_vocab()) * config.channels;
  for (std::size_t i = first_pad; i < end_pad; ++i) EXPECT_EQ(model.params()[i], 0.0);
  const auto tokens = random_tokens(4, config.vocab, 11);
  model.zero_grad();
  model.forward(tokens.data(), tokens.data());
  model.backward();
  const auto grads = model.download_grads();
  for (std::size_t i = first_pad; i < end_pad; ++i) EXPECT_EQ(grads[i], 0.0);
  const auto probs = model.download_probs();
  for (int n = 0; n < 4; ++n) {
    for (int v = config.vocab; v < config.padded_vocab(); ++v) {
      EXPECT_EQ(probs[n * config.padded_vocab() + v], 0.0);
    }
  }
}

TEST(Gpt2Model, InitialisationFollowsGpt2) {
  const GptConfig config = config_by_name("small");
  ReferenceOps<float> ops;
  Gpt2Model<float> model(config, 1, 1, ops);
  model.init(5);
  auto stddev = [&](const std::string& name) {
    const ParameterTensor& t = model.tensor(name);
    double sum = 0, squares = 0;
    for (std::size_t i = 0; i < t.size; ++i) {
      sum += model.params()[t.offset + i];
      squares += double(model.params()[t.offset + i]) * model.params()[t.offset + i];
    }
    return std::sqrt(squares / t.size - (sum / t.size) * (sum / t.size));
  };
  EXPECT_NEAR(stddev("h.0.mlp.c_fc.weight"), 0.02, 0.0005);
  EXPECT_NEAR(stddev("wpe.weight"), 0.02, 0.001);
  EXPECT_NEAR(stddev("h.1.mlp.c_proj.weight"), 0.02 / std::sqrt(2.0 * config.layers), 0.0005);
  EXPECT_NEAR(stddev("h.1.attn.c_proj.weight"), 0.02 / std::sqrt(2.0 * config.layers), 0.0005);
  EXPECT_EQ(model.params()[model.tensor("h.0.ln_1.weight").offset], 1.0f);
  EXPECT_EQ(model.params()[model.tensor("h.0.attn.c_attn.bias").offset], 0.0f);
  EXPECT_FALSE(model.tensor("ln_f.bias").is_matrix);
  EXPECT_TRUE(model.tensor("wte.weight").is_matrix);
}

TEST(Gpt2Model, InitialLossIsNearLogVocab) {
  const GptConfig config = config_by_name("tiny");
  ReferenceOps<float> ops;
  Gpt2Model<float> model(config, 2, 16, ops);
  model.init(1);
  const auto tokens = random_tokens(32, config.vocab, 2);
  const auto targets = random_tokens(32, config.vocab, 3);
  EXPECT_NEAR(model.forward(tokens.data(), targets.data()), std::log(config.vocab), 0.1);
}

TEST(Gpt2Model, AccumulatedMicroBatchesEqualOneBatch) {
  const GptConfig config = config_by_name("tiny");
  const int T = 6;
  const auto inputs = random_tokens(4 * T, config.vocab, 21);
  const auto targets = random_tokens(4 * T, config.vocab, 22);
  ReferenceOps<double> ops;
  Gpt2Model<double> whole(config, 4, T, ops), halves(config, 2, T, ops);
  whole.init(9);
  halves.init(9);
  whole.zero_grad();
  whole.forward(inputs.data(), targets.data());
  whole.backward();
  halves.zero_grad();
  for (int half = 0; half < 2; ++half) {
    halves.forward(inputs.data() + half * 2 * T, targets.data() + half * 2 * T);
    halves.backward(0.5);
  }
  const auto whole_grads = whole.download_grads(), halves_grads = halves.download_grads();
  for (std::size_t i = 0; i < whole_grads.size(); ++i) {
    ASSERT_NEAR(whole_grads[i], halves_grads[i], 1e-12 + 1e-9 * std::abs(whole_grads[i])) << i;
  }
}

// The backward pass says when each range of gradients is final (what data parallelism's buckets
// start on): offsets from the end of the buffer down to 0, each tensor boundary, and nothing in a
// range told final changes afterwards (wte, which the LM head and the embedding both add to, is
// final only with offset 0). The bf16 mode rounds the gradients per range: the same values.
TEST(Gpt2Model, BackwardTellsWhichGradientsAreFinalAndLeavesThemAlone) {
  const GptConfig config = config_by_name("tiny");
  const auto inputs = random_tokens(2 * 8, config.vocab, 31);
  const auto targets = random_tokens(2 * 8, config.vocab, 32);
  for (const amp::Mode mode : {amp::Mode::fp32, amp::Mode::bf16}) {
    SCOPED_TRACE(std::string(amp::mode_name(mode)));
    ReferenceOps<float> ops;
    Gpt2Model<float> model(config, 2, 8, ops, mode);
    model.init(5);
    model.zero_grad();
    model.forward(inputs.data(), targets.data());
    std::vector<std::size_t> told;
    std::vector<std::vector<float>> snapshots;  // grads[offset, end) when told
    model.backward(1.0, [&](std::size_t offset) {
      told.push_back(offset);
      const auto grads = model.download_grads();
      snapshots.emplace_back(grads.begin() + static_cast<std::ptrdiff_t>(offset), grads.end());
    });
    ASSERT_FALSE(told.empty());
    EXPECT_EQ(told.back(), 0u);
    EXPECT_EQ(told.front(), model.tensor("ln_f.weight").offset);
    EXPECT_EQ(told[told.size() - 2], model.tensor("h.0.ln_1.weight").offset) << "wte and wpe come last";
    EXPECT_EQ(told.size(), 2 + 6 * static_cast<std::size_t>(config.layers));
    for (std::size_t i = 1; i < told.size(); ++i) EXPECT_LT(told[i], told[i - 1]);
    const auto final_grads = model.download_grads();
    for (std::size_t k = 0; k < told.size(); ++k)
      for (std::size_t i = 0; i < snapshots[k].size(); ++i)
        ASSERT_EQ(snapshots[k][i], final_grads[told[k] + i]) << "gradient " << told[k] + i << " changed after offset "
                                                              << told[k] << " was told final";
    // The same gradients as a backward told nothing.
    Gpt2Model<float> plain(config, 2, 8, ops, mode);
    plain.init(5);
    plain.zero_grad();
    plain.forward(inputs.data(), targets.data());
    plain.backward(1.0);
    EXPECT_EQ(plain.download_grads(), final_grads);
  }
}

TEST(Gpt2Model, BadShapesAndTokensAreUsageErrors) {
  const GptConfig config = config_by_name("tiny");
  ReferenceOps<float> ops;
  EXPECT_THROW(Gpt2Model<float>(config, 1, config.max_seq + 1, ops), UsageError);
  Gpt2Model<float> model(config, 1, 2, ops);
  const std::int32_t bad[] = {0, config.vocab};
  EXPECT_THROW(model.forward(bad, bad), UsageError);
}

TEST(AttentionKernels, NamesAndWhatEachSaves) {
  for (AttentionKernels kernels : {AttentionKernels::unfused, AttentionKernels::fused})
    EXPECT_EQ(parse_attention_kernels(attention_kernels_name(kernels)), kernels);
  EXPECT_THROW(parse_attention_kernels("flash"), UsageError);
  // Unfused: the probabilities [B,NH,T,T]. Fused: the statistics [B,NH,T], padded to 64 elements
  // (256 bytes, so that the output after them is aligned for cuDNN), and the 16-bit output [B,T,C],
  // two to an element, rounded up.
  EXPECT_EQ(attention_saved_elements(AttentionKernels::unfused, 2, 3, 6, 2), 2u * 2 * 3 * 3);
  EXPECT_EQ(attention_saved_elements(AttentionKernels::fused, 2, 3, 6, 2), 64u + 18);
  EXPECT_EQ(attention_saved_elements(AttentionKernels::fused, 1, 3, 3, 1), 64u + 5);
  EXPECT_EQ(attention_saved_elements(AttentionKernels::fused, 1, 128, 2, 1), 128u + 128);
}

TEST(AttentionKernels, OpsWithoutFusedAttentionRefuseIt) {
  const GptConfig config = config_by_name("tiny");
  ReferenceOps<float> ops;
  EXPECT_EQ(ops.attention_unsupported(AttentionKernels::unfused, GemmPrecision::fp32, {64, 16}), std::nullopt);
  const auto why = ops.attention_unsupported(AttentionKernels::fused, GemmPrecision::bf16, {64, 16});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("CUDA"), std::string::npos) << *why;
  EXPECT_THROW(ops.set_attention(AttentionKernels::fused, {64, 16}), UsageError);
  EXPECT_EQ(ops.attention(), AttentionKernels::unfused);
  EXPECT_THROW(Gpt2Model<float>(config, 1, 4, ops, amp::Mode::amp_bf16, AttentionKernels::fused), UsageError);
}

TEST(AttentionKernels, FusedAttentionShrinksTheActivationEstimate) {
  const GptConfig config = config_by_name("gpt2-124m");
  const int B = 8, T = 1024, C = config.channels, NH = config.heads;
  const std::size_t unfused = activation_bytes_estimate(config, B, T, AttentionKernels::unfused);
  const std::size_t fused = activation_bytes_estimate(config, B, T, AttentionKernels::fused);
  const std::size_t per_layer = std::size_t(B) * NH * T * T - (std::size_t(B) * NH * T + std::size_t(B) * T * C / 2);
  EXPECT_EQ(unfused - fused, config.layers * per_layer * sizeof(float));
  // The unfused model allocates exactly the estimate.
  const GptConfig tiny = config_by_name("tiny");
  ReferenceOps<float> ops;
  const Gpt2Model<float> model(tiny, 2, 8, ops);
  EXPECT_EQ(model.activation_bytes() + 2 * 2 * 8 * sizeof(std::int32_t), activation_bytes_estimate(tiny, 2, 8));
}

}  // namespace
}  // namespace mpbench::workloads
