#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.hpp"
#include "workloads/data.hpp"

namespace mpbench::workloads {
namespace {

MarkovChain two_state_chain(double a, double b) {
  return MarkovChain({{{0, 1 - a}, {1, a}}, {{0, b}, {1, 1 - b}}});
}

TEST(MarkovChain, TwoStateStationaryAndEntropyByHand) {
  const double a = 0.3, b = 0.1;
  const MarkovChain chain = two_state_chain(a, b);
  // pi = (b, a) / (a + b); H = pi_0 h(a) + pi_1 h(b), h the binary entropy in nats.
  const auto h = [](double p) { return -p * std::log(p) - (1 - p) * std::log(1 - p); };
  const auto pi = chain.stationary();
  EXPECT_NEAR(pi[0], 0.25, 1e-12);
  EXPECT_NEAR(pi[1], 0.75, 1e-12);
  EXPECT_NEAR(chain.entropy_rate(), 0.25 * h(a) + 0.75 * h(b), 1e-12);
}

TEST(MarkovChain, PeriodicChainStillConverges) {
  const MarkovChain alternating({{{1, 1.0}}, {{0, 1.0}}});
  const auto pi = alternating.stationary();
  EXPECT_NEAR(pi[0], 0.5, 1e-12);
  EXPECT_NEAR(alternating.entropy_rate(), 0.0, 1e-15);
}

TEST(MarkovChain, RejectsRowsThatDoNotSumToOne) {
  EXPECT_THROW(MarkovChain({{{0, 0.5}, {1, 0.4}}, {{0, 1.0}}}), UsageError);
  EXPECT_THROW(MarkovChain({{{2, 1.0}}, {{0, 1.0}}}), UsageError);
}

TEST(MarkovChain, RandomChainIsSparseAndBelowUniformEntropy) {
  const MarkovChain chain = MarkovChain::random(50, 4, 7);
  for (int i = 0; i < chain.vocab(); ++i) {
    EXPECT_EQ(chain.row(i).size(), 4u);
    EXPECT_GT(chain.probability(i, (i + 1) % 50), 0.0);
  }
  const double entropy = chain.entropy_rate();
  EXPECT_GT(entropy, 0.0);
  EXPECT_LT(entropy, std::log(4.0));
  const MarkovChain same = MarkovChain::random(50, 4, 7);
  EXPECT_EQ(same.entropy_rate(), entropy);
  EXPECT_NE(MarkovChain::random(50, 4, 8).entropy_rate(), entropy);
}

TEST(MarkovTokenStream, EmpiricalTransitionsApproachTheChain) {
  const int vocab = 12;
  const MarkovChain chain = MarkovChain::random(vocab, 3, 42);
  MarkovTokenStream stream(chain, 5);
  std::vector<std::vector<double>> counts(vocab, std::vector<double>(vocab, 0.0));
  std::vector<double> visits(vocab, 0.0);
  const int n = 600000;
  int previous = stream.next_token();
  for (int i = 0; i < n; ++i) {
    const int next = stream.next_token();
    counts[previous][next] += 1;
    visits[previous] += 1;
    previous = next;
  }
  const auto pi = chain.stationary();
  for (int i = 0; i < vocab; ++i) {
    EXPECT_NEAR(visits[i] / n, pi[i], 0.01) << "token " << i;
    for (int j = 0; j < vocab; ++j) {
      // At least ~10^4 visits per row: a binomial standard deviation below 0.005.
      EXPECT_NEAR(counts[i][j] / visits[i], chain.probability(i, j), 0.025) << i << " -> " << j;
    }
  }
}

TEST(MarkovTokenStream, BatchTargetsAreTheNextTokens) {
  const MarkovChain chain = MarkovChain::random(20, 3, 1);
  MarkovTokenStream stream(chain, 9);
  const TokenBatch first = stream.next_batch(3, 5);
  const TokenBatch second = stream.next_batch(3, 5);
  ASSERT_EQ(first.inputs.size(), 15u);
  for (std::size_t i = 0; i + 1 < first.inputs.size(); ++i) {
    EXPECT_EQ(first.targets[i], first.inputs[i + 1]);
    EXPECT_GT(chain.probability(first.inputs[i], first.targets[i]), 0.0);
  }
  EXPECT_EQ(first.targets.back(), second.inputs.front());
  MarkovTokenStream replay(chain, 9);
  EXPECT_EQ(replay.next_batch(3, 5).inputs, first.inputs);
}

class TokenFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::vector<unsigned char>& bytes) {
    const auto path = std::filesystem::temp_directory_path() / ("mpbench_test_" + name);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                 static_cast<std::streamsize>(bytes.size()));
    written_.push_back(path);
    return path.string();
  }
  void TearDown() override {
    for (const auto& path : written_) std::filesystem::remove(path);
  }
  std::vector<std::filesystem::path> written_;
};

TEST_F(TokenFile, ReadsLittleEndianUint16) {
  const std::string path = write("good.bin", {1, 0, 0x2c, 0x01, 7, 0, 3, 0});  // 1, 300, 7, 3
  EXPECT_EQ(read_token_file(path, 301), (std::vector<std::uint16_t>{1, 300, 7, 3}));
  FileTokenSource source(path, 301);
  const TokenBatch batch = source.next_batch(1, 3);
  EXPECT_EQ(batch.inputs, (std::vector<std::int32_t>{1, 300, 7}));
  EXPECT_EQ(batch.targets, (std::vector<std::int32_t>{300, 7, 3}));
  EXPECT_THROW(source.next_batch(2, 2), UsageError);  // needs 5 tokens, the file has 4
}

TEST_F(TokenFile, BadFilesAreUsageErrors) {
  EXPECT_THROW(read_token_file("/nonexistent/mpbench/tokens.bin", 10), UsageError);
  EXPECT_THROW(read_token_file(write("odd.bin", {1, 0, 2}), 10), UsageError);
  EXPECT_THROW(read_token_file(write("empty.bin", {}), 10), UsageError);
  try {
    read_token_file(write("big.bin", {1, 0, 10, 0}), 10);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("token 10"), std::string::npos) << e.what();
  }
}

// Random GPT-2 token ids written in another layout than uint16: each is refused, named, never
// read as uint16 tokens (which would all be within the vocabulary); the same ids as uint16 read.
TEST_F(TokenFile, TokensOfAnotherLayoutAreRefused) {
  std::mt19937 rng(std::random_device{}());
  std::vector<std::uint32_t> ids(64);
  for (auto& id : ids) id = 1 + rng() % 50256;
  const auto as_bytes = [&](int width) {
    std::vector<unsigned char> bytes;
    for (std::uint32_t id : ids)
      for (int b = 0; b < width; ++b) bytes.push_back(static_cast<unsigned char>(id >> (8 * b)));
    return bytes;
  };
  const auto error_of = [](const std::string& path) {
    try {
      read_token_file(path, 50257);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(read_token_file(write("ids16.bin", as_bytes(2)), 50257).size(), ids.size());
  EXPECT_NE(error_of(write("ids32.bin", as_bytes(4))).find("looks like 32-bit tokens"), std::string::npos);
  std::vector<unsigned char> llmc(1024, 0);
  for (int b = 0; b < 4; ++b) llmc[b] = static_cast<unsigned char>(20240520u >> (8 * b));
  const auto tokens = as_bytes(2);
  llmc.insert(llmc.end(), tokens.begin(), tokens.end());
  EXPECT_NE(error_of(write("llmc.bin", llmc)).find("llm.c's header"), std::string::npos);
}

}  // namespace
}  // namespace mpbench::workloads
