// Half activation storage: tensors of fp16/bf16 codes read and rounded as the formats say, and a
// model holding its half-type activations in 2 bytes computing exactly what the emulation (Real
// buffers rounded after each op) computes, in less memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/random.hpp"
#include "tests/workloads/gradient_check.hpp"
#include "workloads/model.hpp"
#include "workloads/reference_ops.hpp"
#include "workloads/trainer.hpp"

namespace mpbench::workloads {
namespace {

TEST(Tensor, HalfStorageHoldsTheRoundedValue) {
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<double> values = testing::random_values(4096, seed, -70000.0, 70000.0);
  for (Storage storage : {Storage::fp16, Storage::bf16}) {
    std::vector<std::uint16_t> codes(values.size());
    const Tensor<float> tensor(codes.data(), storage);
    for (std::size_t i = 0; i < values.size(); ++i) store(tensor, i, static_cast<float>(values[i] * 1e-3 * (i % 7)));
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float expected = round_to_format(static_cast<float>(values[i] * 1e-3 * (i % 7)), storage_format(storage));
      ASSERT_EQ(load<float>(tensor, i), expected) << storage_name(storage) << " element " << i;
    }
    EXPECT_EQ(load<float>(tensor.at(5), 0), load<float>(tensor, 5)) << "at() counts elements, not bytes";
    EXPECT_THROW(tensor.real("test"), BackendError);
  }
  // fp16's range ends at 65504: past it, storage gives inf, as an fp16 buffer does.
  std::uint16_t code = 0;
  store(Tensor<float>(&code, Storage::fp16), 0, 70000.0f);
  EXPECT_TRUE(std::isinf(load<float>(ConstTensor<float>(&code, Storage::fp16), 0)));
  double real = 0;
  store(Tensor<double>(&real), 0, 0.1);
  EXPECT_EQ(real, 0.1) << "real storage keeps the Real value";
}

TEST(Tensor, StorageOfEachFormat) {
  EXPECT_EQ(half_storage(num::Format::fp16), Storage::fp16);
  EXPECT_EQ(half_storage(num::Format::bf16), Storage::bf16);
  EXPECT_EQ(half_storage(num::Format::fp32), Storage::real);
  EXPECT_EQ(half_storage(num::Format::tf32), Storage::real);
  EXPECT_EQ(element_bytes<float>(Storage::bf16), 2u);
  EXPECT_EQ(element_bytes<double>(Storage::real), 8u);
  EXPECT_EQ(parse_activation_storage("emulated"), ActivationStorage::emulated);
  EXPECT_THROW(parse_activation_storage("fp8"), UsageError);
}

struct Pass {
  double loss = 0;
  std::vector<float> probs, grads;
  std::size_t activation_bytes = 0;
  ActivationStorage storage = ActivationStorage::half;
};

// One forward and backward of the tiny model on the reference ops, from weights moved off GPT-2's
// special starting values.
Pass one_pass(amp::Mode mode, ActivationStorage storage, std::uint64_t seed) {
  const GptConfig config = config_by_name("tiny");
  const int B = 3, T = 7;
  ReferenceOps<float> ops;
  Gpt2Model<float> model(config, B, T, ops, mode, AttentionKernels::unfused, storage);
  model.init(seed);
  std::vector<float> params = model.download_params();
  const auto noise = testing::random_values(params.size(), seed + 1, -0.05, 0.05);
  for (std::size_t i = 0; i < params.size(); ++i) params[i] += static_cast<float>(noise[i]);
  model.upload_params(params);
  const auto inputs = testing::random_tokens(B * T, config.vocab, seed + 2);
  const auto targets = testing::random_tokens(B * T, config.vocab, seed + 3);
  model.zero_grad();
  Pass pass;
  pass.loss = model.forward(inputs.data(), targets.data());
  model.backward(1024.0);  // a loss scale, so amp-fp16's backward is where its fp16 matters
  pass.probs = model.download_probs();
  pass.grads = model.download_grads();
  pass.activation_bytes = model.activation_bytes();
  pass.storage = model.activation_storage();
  return pass;
}

class HalfStorageModes : public ::testing::TestWithParam<amp::Mode> {};

TEST_P(HalfStorageModes, ComputesExactlyWhatTheEmulationComputes) {
  const amp::Mode mode = GetParam();
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Pass half = one_pass(mode, ActivationStorage::half, seed);
  const Pass emulated = one_pass(mode, ActivationStorage::emulated, seed);
  ASSERT_EQ(half.storage, ActivationStorage::half);
  ASSERT_EQ(emulated.storage, ActivationStorage::emulated);
  EXPECT_EQ(half.loss, emulated.loss);
  EXPECT_EQ(half.probs, emulated.probs);
  ASSERT_EQ(half.grads.size(), emulated.grads.size());
  for (std::size_t i = 0; i < half.grads.size(); ++i) ASSERT_EQ(half.grads[i], emulated.grads[i]) << "gradient " << i;
  EXPECT_LT(half.activation_bytes, emulated.activation_bytes);
}

INSTANTIATE_TEST_SUITE_P(Modes, HalfStorageModes,
                         ::testing::Values(amp::Mode::amp_fp16, amp::Mode::amp_bf16, amp::Mode::bf16),
                         testing::mode_test_name);

TEST(HalfStorage, Fp32HasNoHalfActivations) {
  const Pass fp32 = one_pass(amp::Mode::fp32, ActivationStorage::half, testing::fresh_seed());
  EXPECT_EQ(fp32.storage, ActivationStorage::emulated);
  EXPECT_EQ(activation_storage_for(ActivationStorage::half, false, amp::Mode::bf16), ActivationStorage::emulated)
      << "ops without half storage";
  EXPECT_EQ(activation_storage_for(ActivationStorage::half, true, amp::Mode::amp_bf16), ActivationStorage::half);
}

// The estimate is the model's own allocation in every mode and storage, and bf16 halves exactly
// the activations its policy keeps in bf16: all of them but the saved statistics, attention's
// probabilities, the softmax probabilities and the losses, which stay fp32.
TEST(HalfStorage, EstimateIsWhatTheModelAllocates) {
  const GptConfig config = config_by_name("tiny");
  const int B = 2, T = 8;
  for (amp::Mode mode : {amp::Mode::fp32, amp::Mode::amp_fp16, amp::Mode::amp_bf16, amp::Mode::bf16}) {
    for (ActivationStorage storage : {ActivationStorage::half, ActivationStorage::emulated}) {
      ReferenceOps<float> ops;
      const Gpt2Model<float> model(config, B, T, ops, mode, AttentionKernels::unfused, storage);
      EXPECT_EQ(model.activation_bytes() + 2 * B * T * sizeof(std::int32_t),
                activation_bytes_estimate(config, B, T, AttentionKernels::unfused, mode, model.activation_storage()))
          << amp::mode_name(mode) << " " << activation_storage_name(storage);
    }
  }
  const std::size_t N = B * T, C = config.channels, Vp = config.padded_vocab(), L = config.layers;
  const std::size_t real_only = L * (4 * N + std::size_t(B) * config.heads * T * T) + 2 * N + N * Vp + N + N;
  const std::size_t all = activation_bytes_estimate(config, B, T) / sizeof(float) - 2 * N;  // elements, less tokens
  const std::size_t half = activation_bytes_estimate(config, B, T, AttentionKernels::unfused, amp::Mode::bf16,
                                                     ActivationStorage::half) - 2 * N * sizeof(std::int32_t);
  EXPECT_EQ(half, real_only * sizeof(float) + (all - real_only) * 2) << "C " << C;
}

TEST(HalfStorage, Bf16TrainsWithHalfActivations) {
  const GptConfig config = config_by_name("tiny");
  const MarkovChain chain = MarkovChain::random(config.vocab, 3, 11);
  MarkovTokenStream data(chain, 4);
  TrainOptions options;
  options.batch = 4;
  options.seq_len = 16;
  options.steps = 20;
  options.warmup_steps = 3;
  options.max_lr = 1e-2f;
  options.min_lr = 1e-3f;
  options.seed = testing::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(options.seed));
  ReferenceOps<float> ops;
  const auto curve = train(config, options, data, ops, amp::Mode::bf16);
  EXPECT_LT(curve.back().loss, curve.front().loss - 0.5);
}

}  // namespace
}  // namespace mpbench::workloads
