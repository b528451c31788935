#pragma once
// Training data: a synthetic token stream from a seeded Markov chain whose entropy rate (the lowest
// mean loss any model can reach on it) is known exactly, and a reader for files of uint16 tokens.
#include <cstdint>
#include <string>
#include <vector>

namespace mpbench::workloads {

// One (B, T) batch: targets[i] is the token that follows inputs[i] in the stream.
struct TokenBatch {
  int batch = 0;
  int seq_len = 0;
  std::vector<std::int32_t> inputs;
  std::vector<std::int32_t> targets;
};

// A first-order Markov chain over tokens [0, vocab): row i lists the tokens that may follow i and
// their probabilities (each row sums to 1).
class MarkovChain {
 public:
  struct Transition {
    std::int32_t next;
    double probability;
  };

  explicit MarkovChain(std::vector<std::vector<Transition>> rows);

  // Each row gets `successors` distinct next tokens with random weights, one of them always
  // token i+1 (mod vocab) so every token can reach every other and the stationary distribution is
  // unique. Fewer successors mean a lower entropy rate.
  static MarkovChain random(int vocab, int successors, std::uint64_t seed);

  int vocab() const { return static_cast<int>(rows_.size()); }
  const std::vector<Transition>& row(int token) const { return rows_[token]; }
  // P(next | current), 0 for a pair the chain never emits.
  double probability(int current, int next) const;

  // The stationary distribution pi = pi P, by power iteration on the lazy chain (I + P) / 2 (same
  // pi, and it converges for periodic chains too).
  std::vector<double> stationary() const;
  // H = -sum_i pi_i sum_j P_ij log P_ij, in nats: the loss floor per predicted token.
  double entropy_rate() const;

 private:
  std::vector<std::vector<Transition>> rows_;
};

// Where batches come from.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual TokenBatch next_batch(int batch, int seq_len) = 0;
};

// Walks the chain from a seeded start; consecutive batches continue the same walk (each batch takes
// the next B*T+1 tokens and the last becomes the first of the next, as llm.c's loader does).
class MarkovTokenStream final : public TokenSource {
 public:
  MarkovTokenStream(const MarkovChain& chain, std::uint64_t seed);
  std::int32_t next_token();
  TokenBatch next_batch(int batch, int seq_len) override;

 private:
  MarkovChain chain_;
  std::uint64_t seed_;
  std::uint64_t draws_ = 0;
  std::int32_t current_;
};

// Reads a file of little-endian uint16 token ids. Throws UsageError when the file is missing or
// unreadable, has an odd number of bytes, is empty, or holds a token >= vocab.
std::vector<std::uint16_t> read_token_file(const std::string& path, int vocab);

// Batches read in order from a token file, wrapping around at its end. Needs at least B*T+1 tokens.
class FileTokenSource final : public TokenSource {
 public:
  FileTokenSource(const std::string& path, int vocab);
  TokenBatch next_batch(int batch, int seq_len) override;
  // UsageError naming the file when it holds too few tokens for one batch of batch x seq_len.
  void require_batch(int batch, int seq_len) const;

 private:
  std::string path_;
  std::vector<std::uint16_t> tokens_;
  std::size_t position_ = 0;
};

}  // namespace mpbench::workloads
