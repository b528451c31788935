#include "workloads/data.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <new>
#include <set>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/random.hpp"

namespace mpbench::workloads {
namespace {

// Uniform in [0, 1) with 53 random bits.
double uniform01(std::uint64_t seed, std::uint64_t index) {
  return static_cast<double>(mix64(seed, index) >> 11) * 0x1.0p-53;
}

}  // namespace

MarkovChain::MarkovChain(std::vector<std::vector<Transition>> rows) : rows_(std::move(rows)) {
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    double total = 0;
    for (const Transition& t : rows_[i]) {
      if (t.next < 0 || t.next >= vocab() || t.probability < 0) {
        throw UsageError("Markov chain row " + std::to_string(i) + " has an invalid transition");
      }
      total += t.probability;
    }
    if (std::abs(total - 1.0) > 1e-9) {
      throw UsageError("Markov chain row " + std::to_string(i) + " sums to " + std::to_string(total) + ", not 1");
    }
  }
}

MarkovChain MarkovChain::random(int vocab, int successors, std::uint64_t seed) {
  if (vocab < 2 || successors < 1 || successors > vocab) {
    throw UsageError("a Markov chain needs vocab >= 2 and 1 <= successors <= vocab");
  }
  std::vector<std::vector<Transition>> rows(vocab);
  std::uint64_t draw = 0;
  for (int i = 0; i < vocab; ++i) {
    std::set<std::int32_t> next{static_cast<std::int32_t>((i + 1) % vocab)};
    while (static_cast<int>(next.size()) < successors) {
      next.insert(static_cast<std::int32_t>(mix64(seed, draw++) % static_cast<std::uint64_t>(vocab)));
    }
    // Weights u^3 spread the probabilities out, so rows are far from uniform.
    double total = 0;
    for (std::int32_t j : next) {
      const double u = 0.05 + uniform01(seed, draw++);
      rows[i].push_back({j, u * u * u});
      total += u * u * u;
    }
    for (Transition& t : rows[i]) t.probability /= total;
  }
  return MarkovChain(std::move(rows));
}

double MarkovChain::probability(int current, int next) const {
  for (const Transition& t : rows_[current]) {
    if (t.next == next) return t.probability;
  }
  return 0.0;
}

std::vector<double> MarkovChain::stationary() const {
  std::vector<double> pi(vocab(), 1.0 / vocab());
  std::vector<double> next(vocab());
  for (int iteration = 0; iteration < 100000; ++iteration) {
    std::fill(next.begin(), next.end(), 0.0);
    for (int i = 0; i < vocab(); ++i) {
      next[i] += 0.5 * pi[i];
      for (const Transition& t : rows_[i]) next[t.next] += 0.5 * pi[i] * t.probability;
    }
    double change = 0;
    for (int i = 0; i < vocab(); ++i) change += std::abs(next[i] - pi[i]);
    pi.swap(next);
    if (change < 1e-14) break;
  }
  return pi;
}

double MarkovChain::entropy_rate() const {
  const std::vector<double> pi = stationary();
  double entropy = 0;
  for (int i = 0; i < vocab(); ++i) {
    for (const Transition& t : rows_[i]) {
      if (t.probability > 0) entropy -= pi[i] * t.probability * std::log(t.probability);
    }
  }
  return entropy;
}

MarkovTokenStream::MarkovTokenStream(const MarkovChain& chain, std::uint64_t seed)
    : chain_(chain), seed_(seed), current_(static_cast<std::int32_t>(mix64(seed, ~0ull) % chain.vocab())) {}

std::int32_t MarkovTokenStream::next_token() {
  const std::int32_t emitted = current_;
  const double u = uniform01(seed_, draws_++);
  const auto& row = chain_.row(current_);
  double cumulative = 0;
  current_ = row.back().next;  // when rounding leaves u above the last cumulative sum
  for (const MarkovChain::Transition& t : row) {
    cumulative += t.probability;
    if (u < cumulative) {
      current_ = t.next;
      break;
    }
  }
  return emitted;
}

TokenBatch MarkovTokenStream::next_batch(int batch, int seq_len) {
  TokenBatch out{batch, seq_len, {}, {}};
  const std::size_t n = static_cast<std::size_t>(batch) * seq_len;
  out.inputs.resize(n);
  out.targets.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.inputs[i] = next_token();
    if (i > 0) out.targets[i - 1] = out.inputs[i];
  }
  out.targets[n - 1] = current_;  // the first token of the next batch
  return out;
}

// 2^31 tokens: more than any run of a few hundred steps reads, and within the host's memory twice
// over (the file's bytes, then the tokens).
constexpr std::uint64_t kMaxTokenFileBytes = std::uint64_t{4} << 30;

namespace {

// Files of tokens in another layout would read as uint16 tokens that are all in the vocabulary
// (GPT-2's ids fit 16 bits), training on nonsense without a word: llm.c's .bin files (a header of
// 256 int32 beginning with its magic number) and 32-bit tokens (every high half zero).
void check_not_another_format(const std::string& path, const std::string& bytes) {
  const auto word = [&](std::size_t i) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(bytes[2 * i]) |
                                      static_cast<unsigned char>(bytes[2 * i + 1]) << 8);
  };
  constexpr std::uint32_t kLlmcMagic = 20240520;
  if (bytes.size() >= 1024 && (word(0) | std::uint32_t{word(1)} << 16) == kLlmcMagic) {
    throw UsageError("token file '" + path + "' starts with llm.c's header (magic 20240520): mpbench reads bare "
                     "little-endian uint16 tokens; strip the 1024-byte header, e.g. tail -c +1025 FILE > TOKENS");
  }
  const std::size_t words = bytes.size() / 2;
  constexpr std::size_t kEnoughToTell = 16;
  if (words < kEnoughToTell || words % 2 != 0) return;
  bool high_halves_zero = true, low_halves_zero = true;
  for (std::size_t i = 0; i < words && high_halves_zero; i += 2) {
    high_halves_zero = word(i + 1) == 0;
    low_halves_zero = low_halves_zero && word(i) == 0;
  }
  if (high_halves_zero && !low_halves_zero) {
    throw UsageError("token file '" + path + "' looks like 32-bit tokens (every second 16-bit word is 0): mpbench "
                     "reads little-endian uint16 tokens; convert it, e.g. numpy.fromfile(FILE, numpy.uint32)"
                     ".astype(numpy.uint16).tofile(TOKENS)");
  }
}

}  // namespace

std::vector<std::uint16_t> read_token_file(const std::string& path, int vocab) {
  const std::string bytes = read_regular_file(path, kMaxTokenFileBytes, "token file");
  if (bytes.empty()) throw UsageError("token file '" + path + "' is empty");
  if (bytes.size() % 2 != 0) {
    throw UsageError("token file '" + path + "' has " + std::to_string(bytes.size()) +
                     " bytes, an odd count: it must hold little-endian uint16 tokens");
  }
  check_not_another_format(path, bytes);
  std::vector<std::uint16_t> tokens;
  try {
    tokens.resize(bytes.size() / 2);
  } catch (const std::bad_alloc&) {
    throw UsageError("token file '" + path + "' has " + std::to_string(bytes.size()) +
                     " bytes: not enough memory for its tokens beside them (twice the file's size)");
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<std::uint16_t>(static_cast<unsigned char>(bytes[2 * i]) |
                                           static_cast<unsigned char>(bytes[2 * i + 1]) << 8);
    if (tokens[i] >= vocab) {
      throw UsageError("token file '" + path + "' holds token " + std::to_string(tokens[i]) + " at position " +
                       std::to_string(i) + ", outside the model's vocabulary of " + std::to_string(vocab));
    }
  }
  return tokens;
}

FileTokenSource::FileTokenSource(const std::string& path, int vocab)
    : path_(path), tokens_(read_token_file(path, vocab)) {}

void FileTokenSource::require_batch(int batch, int seq_len) const {
  const std::size_t n = static_cast<std::size_t>(batch) * seq_len;
  if (tokens_.size() < n + 1) {
    throw UsageError("token file '" + path_ + "' has " + std::to_string(tokens_.size()) +
                     " tokens; a batch of " + std::to_string(batch) + "x" + std::to_string(seq_len) +
                     " needs at least " + std::to_string(n + 1));
  }
}

TokenBatch FileTokenSource::next_batch(int batch, int seq_len) {
  require_batch(batch, seq_len);
  const std::size_t n = static_cast<std::size_t>(batch) * seq_len;
  if (position_ + n + 1 > tokens_.size()) position_ = 0;
  TokenBatch out{batch, seq_len, std::vector<std::int32_t>(n), std::vector<std::int32_t>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    out.inputs[i] = tokens_[position_ + i];
    out.targets[i] = tokens_[position_ + i + 1];
  }
  position_ += n;
  return out;
}

}  // namespace mpbench::workloads
