#pragma once
// Checkpoints in Hugging Face's GPT-2 format, so that transformers.GPT2LMHeadModel.from_pretrained
// loads them and scripts/check_against_pytorch.py can check mpbench's loss and gradients on a batch.
//
// A checkpoint is a folder:
//   model.safetensors  fp32 weights named as Hugging Face's GPT2Model names them (no "transformer."
//                      prefix), Conv1D weights (c_attn, c_proj, c_fc) in its [in, out] layout, wte
//                      cut to the real vocabulary; the LM head is tied to wte, so it is not stored
//   config.json        a GPT2Config, plus an "mpbench" object: config name, vocab_pad, info
//   batch.json         a batch and mpbench's mean loss on it (when one is given)
//   grads.safetensors  the gradient of that loss, named and laid out as model.safetensors
//   grads_in_mode.safetensors  (fp8 modes) the gradient of the same batch evaluated in the trained
//                      mode by a fresh model and quantizer (batch.json's loss_in_mode), same layout
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/config.hpp"
#include "workloads/data.hpp"
#include "workloads/model.hpp"

namespace mpbench::workloads {

struct CheckpointBatch {
  int batch = 0;
  int seq_len = 0;
  std::vector<std::int32_t> inputs;   // [batch, seq_len]
  std::vector<std::int32_t> targets;  // [batch, seq_len]: the next token at each position
  double loss = 0;                    // mean cross-entropy over the batch
  std::vector<float> grads;           // d loss / d params in the parameter buffer's layout; may be empty
  // The same batch evaluated in another mode (the fp8 modes' checkpoints: the trained mode, a fresh
  // model and quantizer): its name, mean loss and gradient (laid out as grads). Empty name: none.
  std::string in_mode;
  double loss_in_mode = 0;
  std::vector<float> grads_in_mode;
};

struct Checkpoint {
  GptConfig config;
  std::vector<float> params;  // the parameter buffer of parameter_layout(config), padded wte rows 0
  std::optional<CheckpointBatch> batch;
  nlohmann::json info;  // the mpbench_info it was written with
};

// The checkpoint's parameters laid out for `target`, a config of the same model with any vocab_pad:
// the file holds the real vocabulary's rows only, so the token embedding's rows are copied and the
// padding rows are 0, whatever padding wrote it.
std::vector<float> params_for(const Checkpoint& checkpoint, const GptConfig& target);

// Writes the checkpoint of `params` (laid out as `tensors`, which may be any subset of
// parameter_layout(config)) into `dir`, created if missing, as one unit: the files go into a new
// folder that then replaces `dir` whole (core/files.hpp's write_folder_atomically), so a kill leaves
// the old checkpoint or the new one, and files of an old one (a gradient) never outlive it.
// batch.grads, when not empty, is laid out as params. Throws UsageError when a file cannot be
// written or the inputs disagree in size.
void write_checkpoint(const std::filesystem::path& dir, const GptConfig& config,
                      const std::vector<ParameterTensor>& tensors, const std::vector<float>& params,
                      const CheckpointBatch& batch, const nlohmann::json& mpbench_info);

// Reads a checkpoint that holds every tensor of its config. The config is config_by_name() of the
// "mpbench" name when it names a known config (checked against the GPT2Config fields), otherwise it
// is built from those fields. Throws UsageError naming the file and the problem for anything missing
// or malformed.
Checkpoint read_checkpoint(const std::filesystem::path& dir);

// The loss of `model` on `batch` and its gradient (forward, then backward on zeroed gradients; the
// model's gradients are overwritten). The batch must have the model's B x T shape. PyTorch's fp32
// matches this only for a model in the fp32 mode.
CheckpointBatch evaluate_batch(Gpt2Model<float>& model, const TokenBatch& batch);

}  // namespace mpbench::workloads
