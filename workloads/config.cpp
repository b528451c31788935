#include "workloads/config.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mpbench::workloads {
namespace {

constexpr int kGpt2Vocab = 50257;

struct Shape {
  const char* name;
  int vocab, max_seq, layers, heads, channels;
};

// tiny: vocab 60 so that the default padding (64) leaves padded columns for the tests to see.
// small: about 5M parameters, sized for a CPU run of a few dozen steps in about a minute.
constexpr Shape kShapes[] = {
    {"tiny", 60, 16, 2, 2, 32},
    {"small", 8192, 256, 4, 4, 256},
    {"gpt2-124m", kGpt2Vocab, 1024, 12, 12, 768},
    {"gpt2-350m", kGpt2Vocab, 1024, 24, 16, 1024},
    {"gpt2-774m", kGpt2Vocab, 1024, 36, 20, 1280},
};

}  // namespace

std::vector<std::string> config_names() {
  std::vector<std::string> names;
  for (const Shape& shape : kShapes) names.emplace_back(shape.name);
  return names;
}

GptConfig config_by_name(const std::string& name, int vocab_pad) {
  if (vocab_pad < 1 || vocab_pad > kMaxVocabPad) {
    throw UsageError("vocab padding must be between 1 (1 keeps the vocabulary unpadded) and " +
                     std::to_string(kMaxVocabPad) + ", got " + std::to_string(vocab_pad));
  }
  const auto* shape = std::find_if(std::begin(kShapes), std::end(kShapes),
                                   [&](const Shape& s) { return name == s.name; });
  if (shape == std::end(kShapes)) {
    std::string known;
    for (const std::string& n : config_names()) known += (known.empty() ? "" : ", ") + n;
    throw UsageError("unknown model config '" + name + "'; known configs: " + known);
  }
  return GptConfig{shape->name,   shape->vocab, vocab_pad,       shape->max_seq,
                   shape->layers, shape->heads, shape->channels};
}

std::int64_t parameter_count(const GptConfig& config) {
  const std::int64_t C = config.channels;
  const std::int64_t per_layer = 2 * C             // ln_1
                                 + 3 * C * C + 3 * C  // fused QKV
                                 + C * C + C          // attention projection
                                 + 2 * C              // ln_2
                                 + 4 * C * C + 4 * C  // MLP up
                                 + 4 * C * C + C;     // MLP down
  return std::int64_t{config.padded_vocab()} * C + std::int64_t{config.max_seq} * C +
         config.layers * per_layer + 2 * C;
}

double flops_per_token_llmc(const GptConfig& config, int seq_len) {
  return 6.0 * static_cast<double>(parameter_count(config)) +
         6.0 * config.layers * config.channels * seq_len;
}

double flops_per_token_palm(const GptConfig& config, int seq_len) {
  return 6.0 * static_cast<double>(parameter_count(config)) +
         12.0 * config.layers * config.channels * seq_len;
}

GemmFlopsPerToken gemm_flops_per_token(const GptConfig& config, int seq_len) {
  const double C = config.channels, L = config.layers;
  return {6.0 * (12.0 * L * C * C + double(config.padded_vocab()) * C), 12.0 * L * C * seq_len};
}

}  // namespace mpbench::workloads
