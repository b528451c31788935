// Hugging Face checkpoints: the safetensors bytes against a hand-computed file, the round trip of
// the tiny model with a batch and its gradients, and every malformed file giving a UsageError.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tests/workloads/gradient_check.hpp"
#include "workloads/checkpoint.hpp"
#include "workloads/reference_ops.hpp"

namespace mpbench::workloads {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh, empty folder under gtest's temporary folder (TEST_TMPDIR when set), named after the test.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("mpbench_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

void write_file(const fs::path& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

std::string le64(std::uint64_t n) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return bytes;
}

std::string float_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::uint64_t header_length(const std::string& file) {
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t{static_cast<unsigned char>(file[i])} << (8 * i);
  return n;
}

json header_of(const fs::path& path) {
  const std::string file = read_file(path);
  return json::parse(file.substr(8, header_length(file)));
}

// Replaces the header of safetensors file `path` by edit(header), keeping the data.
void edit_header(const fs::path& path, const std::function<void(json&)>& edit) {
  const std::string file = read_file(path);
  const std::uint64_t n = header_length(file);
  json header = json::parse(file.substr(8, n));
  edit(header);
  const std::string text = header.dump();
  write_file(path, le64(text.size()) + text + file.substr(8 + n));
}

void edit_json(const fs::path& path, const std::function<void(json&)>& edit) {
  json doc = json::parse(read_file(path));
  edit(doc);
  write_file(path, doc.dump());
}

// The tiny model from a fresh seed, evaluated on a Markov batch of the full sequence length.
struct TinyRun {
  std::uint64_t seed = testing::fresh_seed();
  GptConfig config = config_by_name("tiny");
  std::vector<ParameterTensor> tensors;
  std::vector<float> params;
  CheckpointBatch batch;

  TinyRun() {
    const int B = 2, T = config.max_seq;
    ReferenceOps<float> ops;
    Gpt2Model<float> model(config, B, T, ops);
    model.init(seed);
    MarkovTokenStream stream(MarkovChain::random(config.vocab, 4, seed), seed + 1);
    batch = evaluate_batch(model, stream.next_batch(B, T));
    tensors = model.tensors();
    params = model.download_params();
  }

  void write(const fs::path& dir) const {
    write_checkpoint(dir, config, tensors, params, batch, {{"seed", seed}});
  }
};

TEST(CheckpointFile, SafetensorsBytesMatchAHandComputedFile) {
  // One layer of width 2: c_attn.weight is [3C, C] = [6, 2] in the buffer, value = its index, and
  // Hugging Face's Conv1D stores its transpose [2, 6]; ln_1.weight follows it in the buffer.
  const GptConfig config{"hand", 3, 1, 2, 1, 1, 2};
  const std::vector<ParameterTensor> tensors{{"h.0.attn.c_attn.weight", 0, 12, true}, {"h.0.ln_1.weight", 12, 2, false}};
  std::vector<float> params(14);
  for (int i = 0; i < 14; ++i) params[i] = static_cast<float>(i);
  const CheckpointBatch batch{1, 2, {0, 1}, {1, 2}, 1.25, {}, "", 0, {}};  // no in-mode evaluation
  const fs::path dir = fresh_dir("hand");
  write_checkpoint(dir, config, tensors, params, batch, json::object());

  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("h.0.attn.c_attn.weight":{"data_offsets":[0,48],"dtype":"F32","shape":[2,6]},)"
      R"("h.0.ln_1.weight":{"data_offsets":[48,56],"dtype":"F32","shape":[2]}})";
  ASSERT_EQ(header.size(), 178u);
  const std::string padded = header + std::string(6, ' ');  // the data starts 8-byte aligned
  // Row i of the transpose is column i of the buffer's matrix: elements i, i+2, ..., i+10.
  const std::vector<float> data{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11, 12, 13};
  const std::string expected = std::string("\xb8\0\0\0\0\0\0\0", 8) + padded + float_bytes(data);
  EXPECT_EQ(read_file(dir / "model.safetensors"), expected);
  EXPECT_FALSE(fs::exists(dir / "grads.safetensors"));

  const json batch_doc = json::parse(read_file(dir / "batch.json"));
  EXPECT_EQ(batch_doc, json::parse(R"({"batch":1,"seq_len":2,"inputs":[[0,1]],"targets":[[1,2]],"loss":1.25})"));
  fs::remove_all(dir);
}

TEST(CheckpointFile, ConfigIsAHuggingFaceGpt2Config) {
  TinyRun run;
  const fs::path dir = fresh_dir("config");
  run.write(dir);
  const json config = json::parse(read_file(dir / "config.json"));
  EXPECT_EQ(config["model_type"], "gpt2");
  EXPECT_EQ(config["architectures"], json::array({"GPT2LMHeadModel"}));
  EXPECT_EQ(config["vocab_size"], 60);
  EXPECT_EQ(config["n_positions"], 16);
  EXPECT_EQ(config["n_embd"], 32);
  EXPECT_EQ(config["n_layer"], 2);
  EXPECT_EQ(config["n_head"], 2);
  EXPECT_EQ(config["activation_function"], "gelu_new");
  EXPECT_EQ(config["layer_norm_epsilon"], 1e-5);
  for (const char* dropout : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) EXPECT_EQ(config[dropout], 0.0) << dropout;
  EXPECT_EQ(config["tie_word_embeddings"], true);
  EXPECT_EQ(config["mpbench"], json({{"config", "tiny"}, {"vocab_pad", 64}, {"info", {{"seed", run.seed}}}}));

  // The real model's file: wte cut to the 60 real rows, Conv1D weights [in, out], no LM head.
  const json header = header_of(dir / "model.safetensors");
  EXPECT_EQ(header["wte.weight"]["shape"], json::array({60, 32}));
  EXPECT_EQ(header["h.1.attn.c_attn.weight"]["shape"], json::array({32, 96}));
  EXPECT_EQ(header["h.1.mlp.c_fc.weight"]["shape"], json::array({32, 128}));
  EXPECT_EQ(header["h.1.mlp.c_proj.weight"]["shape"], json::array({128, 32}));
  EXPECT_EQ(header.size(), 1 + run.tensors.size());  // __metadata__ and every tensor
  EXPECT_EQ(header_of(dir / "grads.safetensors"), header);
  fs::remove_all(dir);
}

// Also the writer of the checkpoint scripts/check_against_pytorch.py is tried on: the folder is
// left in place (TEST_TMPDIR picks where) and its path printed.
TEST(CheckpointFile, RoundTripsTheTinyModelWithItsBatch) {
  TinyRun run;
  SCOPED_TRACE("seed " + std::to_string(run.seed));
  const fs::path dir = fs::path(::testing::TempDir()) / "mpbench_tiny_checkpoint";
  // The padded rows of wte are not written: whatever they hold comes back as 0.
  std::vector<float> written = run.params;
  const std::size_t real = static_cast<std::size_t>(run.config.vocab) * run.config.channels;
  const std::size_t padded = static_cast<std::size_t>(run.config.padded_vocab()) * run.config.channels;
  ASSERT_LT(real, padded);
  for (std::size_t i = real; i < padded; ++i) written[i] = 7.0f;
  write_checkpoint(dir, run.config, run.tensors, written, run.batch, {{"seed", run.seed}});
  std::cout << "checkpoint written to " << dir.string() << "\n";

  const Checkpoint checkpoint = read_checkpoint(dir);
  EXPECT_EQ(checkpoint.config.name, "tiny");
  EXPECT_EQ(checkpoint.config.vocab_pad, run.config.vocab_pad);
  EXPECT_EQ(checkpoint.config.padded_vocab(), run.config.padded_vocab());
  EXPECT_EQ(checkpoint.info, json({{"seed", run.seed}}));
  ASSERT_EQ(checkpoint.params.size(), run.params.size());
  for (std::size_t i = 0; i < run.params.size(); ++i) {
    ASSERT_EQ(checkpoint.params[i], i < padded ? (i < real ? run.params[i] : 0.0f) : run.params[i]) << "param " << i;
  }
  ASSERT_TRUE(checkpoint.batch.has_value());
  const CheckpointBatch& batch = *checkpoint.batch;
  EXPECT_EQ(batch.batch, run.batch.batch);
  EXPECT_EQ(batch.seq_len, run.batch.seq_len);
  EXPECT_EQ(batch.inputs, run.batch.inputs);
  EXPECT_EQ(batch.targets, run.batch.targets);
  EXPECT_EQ(batch.loss, run.batch.loss);
  EXPECT_EQ(batch.grads, run.batch.grads);  // the padded rows of wte get no gradient

  // The weights read back give the model the loss that was written.
  ReferenceOps<float> ops;
  Gpt2Model<float> model(checkpoint.config, batch.batch, batch.seq_len, ops);
  model.upload_params(checkpoint.params);
  EXPECT_EQ(model.forward(batch.inputs.data(), batch.targets.data()), batch.loss);
}

TEST(CheckpointFile, EvaluateBatchStartsFromZeroGradients) {
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const GptConfig config = config_by_name("tiny");
  ReferenceOps<float> ops;
  Gpt2Model<float> model(config, 2, 8, ops);
  model.init(seed);
  MarkovTokenStream stream(MarkovChain::random(config.vocab, 4, seed), seed);
  const TokenBatch tokens = stream.next_batch(2, 8);
  const CheckpointBatch first = evaluate_batch(model, tokens);
  const CheckpointBatch second = evaluate_batch(model, tokens);  // would be doubled without the zeroing
  EXPECT_EQ(first.loss, second.loss);
  EXPECT_EQ(first.grads, second.grads);
  EXPECT_GT(first.loss, 0.0);
  EXPECT_TRUE(std::any_of(first.grads.begin(), first.grads.end(), [](float g) { return g != 0.0f; }));
  EXPECT_THROW(evaluate_batch(model, TokenBatch{2, 8, tokens.inputs, {}}), UsageError);
}

TEST(CheckpointFile, WritingWithoutGradientsRemovesStaleOnes) {
  TinyRun run;
  const fs::path dir = fresh_dir("stale");
  run.write(dir);
  ASSERT_TRUE(fs::exists(dir / "grads.safetensors"));
  CheckpointBatch without = run.batch;
  without.grads.clear();
  write_checkpoint(dir, run.config, run.tensors, run.params, without, json::object());
  EXPECT_FALSE(fs::exists(dir / "grads.safetensors"));
  EXPECT_TRUE(read_checkpoint(dir).batch->grads.empty());
  fs::remove_all(dir);
}

// `action` throws a UsageError whose message contains every one of `parts`.
void expect_usage_error(const std::function<void()>& action, const std::vector<std::string>& parts) {
  try {
    action();
    ADD_FAILURE() << "no UsageError; expected one mentioning " << parts.front();
  } catch (const UsageError& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "expected " << part << " in " << e.what();
  }
}

TEST(CheckpointFile, WriteErrorsAreUsageErrors) {
  TinyRun run;
  const fs::path dir = fresh_dir("write_errors");
  fs::create_directories(dir.parent_path());
  write_file(dir, "a file where the folder should be");
  expect_usage_error([&] { run.write(dir); }, {"a file of that name is in the way", dir.string()});
  fs::remove(dir);

  CheckpointBatch short_grads = run.batch;
  short_grads.grads.pop_back();
  expect_usage_error([&] { write_checkpoint(dir, run.config, run.tensors, run.params, short_grads, {}); },
                     {"gradients"});
  CheckpointBatch bad_token = run.batch;
  bad_token.targets[3] = run.config.vocab;
  expect_usage_error([&] { write_checkpoint(dir, run.config, run.tensors, run.params, bad_token, {}); },
                     {"vocabulary"});
  std::vector<ParameterTensor> wrong_size = run.tensors;
  wrong_size[1].size -= 1;
  expect_usage_error([&] { write_checkpoint(dir, run.config, wrong_size, run.params, run.batch, {}); },
                     {"wpe.weight"});
  EXPECT_FALSE(fs::exists(dir));  // nothing is written before the inputs are checked
}

// Each case breaks one thing in a valid checkpoint; reading must name the file and the problem.
struct Corruption {
  const char* name;
  const char* file;
  std::function<void(const fs::path&)> apply;
  std::string message;
  const char* named = nullptr;  // the file the message names, when not the broken one
};

// Sets element `index` (in the file's order) of tensor `name` in safetensors file `path` to `value`.
void poke(const fs::path& path, const std::string& name, std::size_t index, float value) {
  std::string file = read_file(path);
  const std::uint64_t n = header_length(file);
  const json header = json::parse(file.substr(8, n));
  const std::uint64_t at = 8 + n + header[name]["data_offsets"][0].get<std::uint64_t>() + index * sizeof(float);
  std::memcpy(file.data() + at, &value, sizeof value);
  write_file(path, file);
}

// Puts a NUL byte into the header of safetensors file `path`, inside its first key.
void nul_in_header(const fs::path& path) {
  const std::string file = read_file(path);
  const std::uint64_t n = header_length(file);
  std::string text = file.substr(8, n);
  text.insert(2, 1, '\0');
  write_file(path, le64(text.size()) + text + file.substr(8 + n));
}

// config.json of a config mpbench does not know (no mpbench section), with `edit` applied.
std::function<void(const fs::path&)> unknown_config(std::function<void(json&)> edit) {
  return [edit](const fs::path& path) {
    edit_json(path, [&](json& j) {
      j.erase("mpbench");
      edit(j);
    });
  };
}

TEST(CheckpointFile, MalformedFilesAreUsageErrors) {
  TinyRun run;
  const auto header = [](std::function<void(json&)> edit) {
    return [edit](const fs::path& path) { edit_header(path, edit); };
  };
  const auto doc = [](std::function<void(json&)> edit) {
    return [edit](const fs::path& path) { edit_json(path, edit); };
  };
  const std::vector<Corruption> cases{
      {"missing model", "model.safetensors", [](const fs::path& p) { fs::remove(p); }, "is missing"},
      {"missing config", "config.json", [](const fs::path& p) { fs::remove(p); }, "is missing"},
      {"config not JSON", "config.json", [](const fs::path& p) { write_file(p, "{\"n_embd\": 32,"); }, "not valid JSON"},
      {"config without n_embd", "config.json", doc([](json& j) { j.erase("n_embd"); }), "n_embd"},
      {"config shape differs from tiny", "config.json", doc([](json& j) { j["n_layer"] = 3; }), "n_layer is 3"},
      {"other activation", "config.json", doc([](json& j) { j["activation_function"] = "gelu"; }),
       "activation_function"},
      // Its size is checked against config.json's first: a file too small is not read.
      {"too short", "model.safetensors", [](const fs::path& p) { write_file(p, "abc"); }, "has 3 bytes, but"},
      {"header length too large", "model.safetensors",
       [](const fs::path& p) {
         const std::string file = read_file(p);
         write_file(p, le64(file.size()) + file.substr(8));
       },
       "exceeds"},
      {"header not JSON", "model.safetensors",
       [](const fs::path& p) {
         const std::string file = read_file(p);
         std::string text = "{\"wte.weight\":";
         text.resize(header_length(file), ' ');
         write_file(p, file.substr(0, 8) + text + file.substr(8 + text.size()));
       },
       "not valid JSON"},
      {"fp16 tensor", "model.safetensors", header([](json& h) { h["ln_f.bias"]["dtype"] = "F16"; }), "dtype \"F16\""},
      {"untransposed Conv1D", "model.safetensors",
       header([](json& h) { h["h.0.attn.c_attn.weight"]["shape"] = {96, 32}; }), "expected [32, 96]"},
      {"padded wte", "model.safetensors", header([](json& h) { h["wte.weight"]["shape"] = {64, 32}; }),
       "expected [60, 32]"},
      {"unknown tensor", "model.safetensors",
       header([](json& h) { h["lm_head.weight"] = h["wte.weight"]; }), "unknown tensor 'lm_head.weight'"},
      {"missing tensor", "model.safetensors", header([](json& h) { h.erase("ln_f.bias"); }),
       "tensor 'ln_f.bias' is missing"},
      {"data beyond the file", "model.safetensors",
       header([](json& h) { h["ln_f.bias"]["data_offsets"] = {1u << 30, (1u << 30) + 128}; }), "data_offsets"},
      {"grads in fp16", "grads.safetensors", header([](json& h) { h["wpe.weight"]["dtype"] = "F16"; }), "dtype"},
      {"batch not JSON", "batch.json", [](const fs::path& p) { write_file(p, "[1, 2"); }, "not valid JSON"},
      {"batch row too short", "batch.json", doc([](json& j) { j["inputs"][1].erase(0); }), "inputs"},
      {"token outside the vocabulary", "batch.json", doc([](json& j) { j["targets"][0][0] = 60; }), "targets"},
      {"batch without loss", "batch.json", doc([](json& j) { j.erase("loss"); }), "loss"},
      {"gradients without a batch", "batch.json", [](const fs::path& p) { fs::remove(p); }, "no batch.json",
       "grads.safetensors"},
      // A NUL ends the JSON library's input: what follows it would go unread.
      {"NUL after the config", "config.json",
       [](const fs::path& p) { write_file(p, read_file(p) + std::string(1, '\0') + "{\"n_layer\": 99}"); }, "NUL byte"},
      {"NUL in the safetensors header", "model.safetensors", nul_in_header, "NUL byte at byte 2"},
      {"NUL in the batch", "batch.json", [](const fs::path& p) { write_file(p, std::string(1, '\0') + read_file(p)); },
       "NUL byte at byte 0"},
      // Sizes of a config mpbench does not know: bounded before anything is allocated, and their
      // parameter count (in 64 bits) checked against the weights file before it is read.
      {"unknown config with a vocabulary beyond 64 bits", "config.json",
       unknown_config([](json& j) { j["vocab_size"] = std::uint64_t{1} << 63; }),
       "field 'vocab_size' is 9223372036854775808, not an integer from 1 to 16777216"},
      {"unknown config with 2^31 - 1 channels", "config.json", unknown_config([](json& j) { j["n_embd"] = 2147483647; }),
       "field 'n_embd' is 2147483647, not an integer from 1 to 65536"},
      {"unknown config with negative layers", "config.json", unknown_config([](json& j) { j["n_layer"] = -1; }),
       "field 'n_layer' is -1"},
      {"unknown config with fractional positions", "config.json", unknown_config([](json& j) { j["n_positions"] = 16.5; }),
       "field 'n_positions' is 16.5"},
      {"unknown config with more heads than channels", "config.json", unknown_config([](json& j) { j["n_head"] = 33; }),
       "field 'n_head' is 33, not an integer from 1 to 32"},
      // JSON reads 0 as unsigned: the lower bounds hold for it too (n_head 0 divided by zero).
      {"unknown config with no heads", "config.json", unknown_config([](json& j) { j["n_head"] = 0; }),
       "field 'n_head' is 0, not an integer from 1 to 32"},
      {"unknown config with no channels", "config.json", unknown_config([](json& j) { j["n_embd"] = 0; }),
       "field 'n_embd' is 0, not an integer from 1 to 65536"},
      {"unknown config with an empty vocabulary", "config.json", unknown_config([](json& j) { j["vocab_size"] = 0; }),
       "field 'vocab_size' is 0, not an integer from 1 to 16777216"},
      {"vocab_pad 0", "config.json", doc([](json& j) { j["mpbench"]["vocab_pad"] = 0; }), "field 'vocab_pad' is 0"},
      {"unknown config at every size's bound", "config.json",
       unknown_config([](json& j) {
         j["vocab_size"] = 1 << 24;
         j["n_positions"] = 1 << 20;
         j["n_embd"] = 1 << 16;
         j["n_layer"] = 1 << 12;
         j["n_head"] = 1;
       }),
       "n_layer 4096) make 212277953429504 parameters", "model.safetensors"},
      {"unknown config one layer larger than its weights", "config.json", unknown_config([](json& j) { j["n_layer"] = 3; }),
       "the files do not belong together", "model.safetensors"},
      {"unknown config one token smaller than its weights", "config.json",
       unknown_config([](json& j) { j["vocab_size"] = 59; }), "do not belong together", "model.safetensors"},
      {"vocab_pad beyond its bound", "config.json", doc([](json& j) { j["mpbench"]["vocab_pad"] = 1 << 20; }),
       "field 'vocab_pad' is 1048576, not an integer from 1 to 65536"},
      {"vocab_pad that is not a number", "config.json", doc([](json& j) { j["mpbench"]["vocab_pad"] = "64"; }),
       "field 'vocab_pad' is \"64\""},
      {"unknown config padded beyond its parameters", "config.json",
       doc([](json& j) {
         j["mpbench"]["config"] = "custom";
         j["mpbench"]["vocab_pad"] = 1 << 16;
       }),
       "more padding than the checkpoint has parameters"},
      // Weights every mode can start from: finite, and within fp16's range (amp-fp16 copies them).
      {"a NaN weight", "model.safetensors",
       [&](const fs::path& p) { poke(p, "h.0.mlp.c_fc.weight", run.seed % 4096, std::nanf("")); },
       fmt::format("tensor 'h.0.mlp.c_fc.weight' element {} is nan", run.seed % 4096)},
      {"an infinite weight", "model.safetensors",
       [&](const fs::path& p) { poke(p, "wte.weight", run.seed % 1920, -INFINITY); },
       fmt::format("tensor 'wte.weight' element {} is -inf", run.seed % 1920)},
      {"a weight beyond fp16", "model.safetensors", [&](const fs::path& p) { poke(p, "ln_f.bias", run.seed % 32, 1e6f); },
       fmt::format("tensor 'ln_f.bias' element {} is 1000000: values must be finite and at most 65504", run.seed % 32)},
      {"a NaN gradient", "grads.safetensors", [&](const fs::path& p) { poke(p, "wpe.weight", run.seed % 512, NAN); },
       fmt::format("tensor 'wpe.weight' element {} is nan: values must be finite", run.seed % 512)},
      {"two tensors at one offset", "model.safetensors",
       header([](json& h) { h["ln_f.bias"]["data_offsets"] = h["h.1.ln_1.bias"]["data_offsets"]; }), "overlap"},
      {"two tensors at one offset, named", "model.safetensors",
       header([](json& h) { h["h.0.ln_2.bias"]["data_offsets"] = h["h.0.ln_1.bias"]["data_offsets"]; }),
       "both start at byte"},
  };
  for (const Corruption& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path dir = fresh_dir("malformed");
    run.write(dir);
    ASSERT_NO_THROW(read_checkpoint(dir));
    c.apply(dir / c.file);
    expect_usage_error([&] { read_checkpoint(dir); }, {(dir / (c.named ? c.named : c.file)).string(), c.message});
    fs::remove_all(dir);
  }
}

TEST(CheckpointFile, ReadsACheckpointOfAConfigItDoesNotKnow) {
  // Without a known mpbench config name the shape comes from the GPT2Config fields alone.
  const GptConfig config{"custom", 10, 4, 4, 1, 2, 8};
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  ReferenceOps<float> ops;
  Gpt2Model<float> model(config, 1, 4, ops);
  model.init(seed);
  const CheckpointBatch batch = evaluate_batch(model, TokenBatch{1, 4, {1, 2, 3, 4}, {2, 3, 4, 5}});
  const fs::path dir = fresh_dir("custom");
  write_checkpoint(dir, config, model.tensors(), model.download_params(), batch, json::object());
  edit_json(dir / "config.json", [](json& j) { j.erase("mpbench"); });
  const Checkpoint checkpoint = read_checkpoint(dir);
  EXPECT_EQ(checkpoint.config.vocab, 10);
  EXPECT_EQ(checkpoint.config.vocab_pad, 1);  // no padding recorded: none assumed
  EXPECT_EQ(checkpoint.config.max_seq, 4);
  EXPECT_EQ(checkpoint.config.layers, 1);
  EXPECT_EQ(checkpoint.config.heads, 2);
  EXPECT_EQ(checkpoint.config.channels, 8);
  // The 10 real rows of wte come back; the file has no padding rows.
  const std::vector<float> params = model.download_params();
  ASSERT_EQ(checkpoint.params.size(), params.size() - 2 * 8);
  const std::size_t wte_padding = 2 * 8;
  for (std::size_t i = 0; i < checkpoint.params.size(); ++i) {
    ASSERT_EQ(checkpoint.params[i], params[i < 80 ? i : i + wte_padding]) << "param " << i;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mpbench::workloads
