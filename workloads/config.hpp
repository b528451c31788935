#pragma once
// GPT-2 model configurations and the FLOP counts used for tokens/s and MFU.
#include <cstdint>
#include <string>
#include <vector>

namespace mpbench::workloads {

struct GptConfig {
  std::string name;
  int vocab = 0;      // real vocabulary: token ids are in [0, vocab)
  int vocab_pad = 1;  // the LM head has padded_vocab() rows, a multiple of this
  int max_seq = 0;    // T: rows of the position embedding
  int layers = 0;     // L
  int heads = 0;      // NH; channels must be a multiple of it
  int channels = 0;   // C

  int padded_vocab() const { return (vocab + vocab_pad - 1) / vocab_pad * vocab_pad; }
  int head_size() const { return channels / heads; }
};

// The names config_by_name() knows, smallest first.
std::vector<std::string> config_names();

// The largest vocab_pad: padding beyond any vocabulary's size pads nothing useful, and within it
// padded_vocab() stays far inside an int.
inline constexpr int kMaxVocabPad = 1 << 16;

// `tiny` (tests), `small` (CPU runs), `gpt2-124m`, `gpt2-350m`, `gpt2-774m`. The GPT-2 sizes use
// the 50257-token vocabulary padded to a multiple of vocab_pad (64 gives llm.c's 50304; 1 keeps
// the odd size). Throws UsageError for an unknown name or a vocab_pad outside [1, kMaxVocabPad].
GptConfig config_by_name(const std::string& name, int vocab_pad = 64);

// Every parameter, the padded rows of the token embedding included (as llm.c counts them).
std::int64_t parameter_count(const GptConfig& config);

// Training FLOPs per token at sequence length T: 6N for the weights (forward 2N, backward 4N) plus
// attention's QK^T and PV. llm.c counts the attention as 6LCT, PaLM and nanoGPT as 12LCT.
double flops_per_token_llmc(const GptConfig& config, int seq_len);
double flops_per_token_palm(const GptConfig& config, int seq_len);

// The training GEMMs' FLOPs per token as the ops run them, split by the GEMMs the fp8 modes
// quantize and those they leave in bf16. linear: the blocks' four weight GEMMs (12C^2 weights a
// layer) and the LM head over the padded vocabulary (Vp C), forward x W^T and backward dx and dW:
// 6 FLOPs per weight. attention: the batched q k^T and att v forward and their four backward
// GEMMs over the whole T x T scores (the unfused path computes the masked half too): 12 L C T.
struct GemmFlopsPerToken {
  double linear = 0;
  double attention = 0;
};
GemmFlopsPerToken gemm_flops_per_token(const GptConfig& config, int seq_len);

}  // namespace mpbench::workloads
