#include <gtest/gtest.h>

#include "core/error.hpp"
#include "workloads/config.hpp"
#include "workloads/model.hpp"

namespace mpbench::workloads {
namespace {

TEST(Config, Gpt2SmallMatchesLlmc) {
  const GptConfig config = config_by_name("gpt2-124m");
  EXPECT_EQ(config.layers, 12);
  EXPECT_EQ(config.channels, 768);
  EXPECT_EQ(config.heads, 12);
  EXPECT_EQ(config.max_seq, 1024);
  EXPECT_EQ(config.vocab, 50257);
  EXPECT_EQ(config.padded_vocab(), 50304);
  // llm.c: 124,475,904 with the padded vocabulary, 124,439,808 without.
  EXPECT_EQ(parameter_count(config), 124475904);
  EXPECT_EQ(parameter_count(config_by_name("gpt2-124m", 1)), 124439808);
}

TEST(Config, VocabPadding) {
  EXPECT_EQ(config_by_name("gpt2-124m", 1).padded_vocab(), 50257);
  EXPECT_EQ(config_by_name("gpt2-124m", 128).padded_vocab(), 50304);
  EXPECT_EQ(config_by_name("gpt2-124m", 256).padded_vocab(), 50432);
  EXPECT_GT(config_by_name("tiny").padded_vocab(), config_by_name("tiny").vocab);  // the tests see padding
  EXPECT_THROW(config_by_name("tiny", 0), UsageError);
}

TEST(Config, LargerGpt2Sizes) {
  // GPT-2 medium and large as Hugging Face counts them (unpadded vocabulary).
  EXPECT_EQ(parameter_count(config_by_name("gpt2-350m", 1)), 354823168);
  EXPECT_EQ(parameter_count(config_by_name("gpt2-774m", 1)), 774030080);
}

TEST(Config, EveryNamedConfigIsConsistent) {
  for (const std::string& name : config_names()) {
    const GptConfig config = config_by_name(name);
    EXPECT_EQ(config.name, name);
    EXPECT_EQ(config.channels % config.heads, 0) << name;
    const auto layout = parameter_layout(config);
    EXPECT_EQ(static_cast<std::int64_t>(layout.back().offset + layout.back().size), parameter_count(config))
        << name;
  }
}

TEST(Config, UnknownNameListsTheKnownOnes) {
  try {
    config_by_name("gpt5");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("gpt5"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("gpt2-124m"), std::string::npos);
  }
}

TEST(Config, FlopsPerTokenBothConventions) {
  const GptConfig config = config_by_name("gpt2-124m");
  const double attention = 12.0 * 768 * 1024;  // L C T
  EXPECT_DOUBLE_EQ(flops_per_token_llmc(config, 1024), 6.0 * 124475904 + 6 * attention);
  EXPECT_DOUBLE_EQ(flops_per_token_palm(config, 1024), 6.0 * 124475904 + 12 * attention);
  EXPECT_NEAR(flops_per_token_llmc(config, 1024) / 1e6, 803.5, 0.1);  // research notes: 803.5 MFLOP
}

// gpt2-124m by hand: per layer c_attn 768x2304, attn.c_proj 768x768, c_fc 768x3072, mlp.c_proj
// 3072x768; the LM head 50304x768. Forward 2 FLOPs per weight and token, backward 4.
TEST(Config, GemmFlopsSplitIntoLinearAndAttention) {
  const GptConfig config = config_by_name("gpt2-124m");
  const double per_layer = 768.0 * 2304 + 768.0 * 768 + 768.0 * 3072 + 3072.0 * 768;
  const GemmFlopsPerToken flops = gemm_flops_per_token(config, 1024);
  EXPECT_DOUBLE_EQ(flops.linear, 6 * (12 * per_layer + 50304.0 * 768));
  // q k^T [T,hs]x[hs,T] and att v per head, forward 2 GEMMs and backward 4: 6 x 2 T hs per query
  // token and head, 12 heads, 12 layers.
  EXPECT_DOUBLE_EQ(flops.attention, 12 * 12 * (6 * 2.0 * 1024 * 64));
  // Every GEMM FLOP of PaLM's count but those of the non-GEMM parameters (embeddings of wpe,
  // layernorms, biases).
  const double non_gemm_parameters = 124475904.0 - 12 * per_layer - 50304.0 * 768;
  EXPECT_DOUBLE_EQ(flops.linear + flops.attention, flops_per_token_palm(config, 1024) - 6 * non_gemm_parameters);
}

}  // namespace
}  // namespace mpbench::workloads
