#include "workloads/checkpoint.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/result.hpp"

namespace mpbench::workloads {
namespace {

// safetensors stores little-endian values; the floats are copied as they lie in memory.
static_assert(std::endian::native == std::endian::little, "checkpoints assume a little-endian host");

namespace fs = std::filesystem;
using nlohmann::json;
using Shape = std::vector<std::int64_t>;

constexpr double kLayerNormEpsilon = 1e-5;  // what the ops use; the only value a checkpoint may have

// How one tensor lies in mpbench's parameter buffer and in the file.
struct Layout {
  Shape buffer;         // matrices [out, in]; wte has the padded vocabulary's rows
  Shape file;           // Conv1D weights [in, out]; wte has the real vocabulary's rows
  bool conv1d = false;  // the file holds the transpose of the buffer's matrix
};

std::int64_t count(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string shape_text(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// The layout of tensor `name` of `config`, or nothing for a name GPT-2 does not have.
std::optional<Layout> layout_of(const std::string& name, const GptConfig& config) {
  const std::int64_t C = config.channels;
  const auto vector = [](std::int64_t n) { return Layout{{n}, {n}, false}; };
  const auto conv1d = [](std::int64_t out, std::int64_t in) { return Layout{{out, in}, {in, out}, true}; };
  if (name == "wte.weight") return Layout{{config.padded_vocab(), C}, {config.vocab, C}, false};
  if (name == "wpe.weight") return Layout{{config.max_seq, C}, {config.max_seq, C}, false};
  if (name == "ln_f.weight" || name == "ln_f.bias") return vector(C);
  // h.<layer>.<rest>, the layer written without leading zeros.
  if (!name.starts_with("h.")) return std::nullopt;
  const std::size_t dot = name.find('.', 2);
  const std::string index = name.substr(2, dot == std::string::npos ? std::string::npos : dot - 2);
  if (dot == std::string::npos || index.empty() || index.size() > 6 ||
      !std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
      (index.size() > 1 && index[0] == '0') || std::stoi(index) >= config.layers) {
    return std::nullopt;
  }
  const std::string rest = name.substr(dot + 1);
  if (rest == "ln_1.weight" || rest == "ln_1.bias" || rest == "ln_2.weight" || rest == "ln_2.bias" ||
      rest == "attn.c_proj.bias" || rest == "mlp.c_proj.bias") {
    return vector(C);
  }
  if (rest == "attn.c_attn.weight") return conv1d(3 * C, C);
  if (rest == "attn.c_attn.bias") return vector(3 * C);
  if (rest == "attn.c_proj.weight") return conv1d(C, C);
  if (rest == "mlp.c_fc.weight") return conv1d(4 * C, C);
  if (rest == "mlp.c_fc.bias") return vector(4 * C);
  if (rest == "mlp.c_proj.weight") return conv1d(C, 4 * C);
  return std::nullopt;
}

// The tensor in the file's layout, from its place in the buffer, as bytes at `out` (which need not
// be aligned for floats).
void to_file(const Layout& layout, const float* buffer, char* out) {
  if (!layout.conv1d) {
    std::memcpy(out, buffer, static_cast<std::size_t>(count(layout.file)) * sizeof(float));  // wte: real rows first
    return;
  }
  const std::int64_t rows = layout.buffer[0], cols = layout.buffer[1];
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      std::memcpy(out + (c * rows + r) * sizeof(float), &buffer[r * cols + c], sizeof(float));
    }
  }
}

// The inverse of to_file, from the file's bytes (which need not be aligned for floats); buffer rows
// the file lacks (wte's padding) are left as they are.
void from_file(const Layout& layout, const char* file, float* buffer) {
  if (!layout.conv1d) {
    std::memcpy(buffer, file, static_cast<std::size_t>(count(layout.file)) * sizeof(float));
    return;
  }
  const std::int64_t rows = layout.buffer[0], cols = layout.buffer[1];
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      std::memcpy(&buffer[r * cols + c], file + (c * rows + r) * sizeof(float), sizeof(float));
    }
  }
}

Layout checked_layout(const ParameterTensor& tensor, const GptConfig& config, std::size_t buffer_size) {
  const auto layout = layout_of(tensor.name, config);
  if (!layout) {
    throw UsageError(fmt::format("cannot write a checkpoint of config '{}': GPT-2 has no tensor '{}'", config.name,
                                 tensor.name));
  }
  if (static_cast<std::int64_t>(tensor.size) != count(layout->buffer) || tensor.offset + tensor.size > buffer_size) {
    throw UsageError(fmt::format(
        "cannot write a checkpoint of config '{}': tensor '{}' has {} values at offset {} of a buffer of {}, "
        "expected {} values ({})",
        config.name, tensor.name, tensor.size, tensor.offset, buffer_size, count(layout->buffer),
        shape_text(layout->buffer)));
  }
  return *layout;
}

// A safetensors file: an 8-byte little-endian header length, the JSON header (padded with spaces
// so the data starts 8-byte aligned, as the reference implementation does), then the data. The
// offsets follow from the layouts, so the header comes first and each tensor is written once, in
// place: the file is the only copy of the values (a few GB for the largest configs).
std::string safetensors(const GptConfig& config, const std::vector<ParameterTensor>& tensors,
                        const std::vector<float>& values, const json& metadata) {
  json header = json::object();
  header["__metadata__"] = metadata;
  std::vector<Layout> layouts;
  layouts.reserve(tensors.size());
  std::uint64_t data_size = 0;
  for (const ParameterTensor& tensor : tensors) {
    const Layout& layout = layouts.emplace_back(checked_layout(tensor, config, values.size()));
    const std::uint64_t begin = data_size;
    data_size += static_cast<std::uint64_t>(count(layout.file)) * sizeof(float);
    header[tensor.name] = {{"dtype", "F32"}, {"shape", layout.file}, {"data_offsets", {begin, data_size}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8 + text.size() + data_size, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((static_cast<std::uint64_t>(text.size()) >> (8 * i)) & 0xff);
  text.copy(out.data() + 8, text.size());
  char* data = out.data() + 8 + text.size();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    to_file(layouts[i], values.data() + tensors[i].offset, data);
    data += count(layouts[i].file) * sizeof(float);
  }
  return out;
}

// A checkpoint's files: weights of the largest config in fp32 are about 3 GB; its JSON files are
// small.
constexpr std::uint64_t kMaxSafetensorsBytes = std::uint64_t{16} << 30;
constexpr std::uint64_t kMaxJsonBytes = std::uint64_t{64} << 20;

std::string read_bytes(const fs::path& path) { return read_regular_file(path, kMaxSafetensorsBytes, "checkpoint file"); }

json read_json(const fs::path& path) {
  return parse_json_file_text(read_regular_file(path, kMaxJsonBytes, "checkpoint file"), path);
}

// An int member of a JSON object within [minimum, maximum], or an error naming the file, the field
// and the value found.
int integer(const json& object, const char* field, const fs::path& path, int minimum,
            int maximum = std::numeric_limits<int>::max()) {
  const auto it = object.find(field);
  if (it == object.end()) throw UsageError(fmt::format("'{}': field '{}' is missing", path.string(), field));
  // JSON reads every integer from 0 up as unsigned: both bounds apply to both kinds.
  bool fits = false;
  if (it->is_number_unsigned()) {
    const std::uint64_t value = it->get<std::uint64_t>();
    fits = value <= std::uint64_t(maximum) && (minimum <= 0 || value >= std::uint64_t(minimum));
  } else if (it->is_number_integer()) {
    const std::int64_t value = it->get<std::int64_t>();
    fits = value >= minimum && value <= maximum;
  }
  if (!fits) {
    const std::string found = it->dump();
    throw UsageError(fmt::format("'{}': field '{}' is {}, not an integer from {} to {}", path.string(), field,
                                 found.size() > 40 ? found.substr(0, 40) + "..." : found, minimum, maximum));
  }
  return it->get<int>();
}

// What a safetensors file holds besides the data: a checkpoint's header lists a few hundred
// tensors; the reference implementation refuses headers above 100 MB.
constexpr std::uint64_t kMaxHeaderBytes = kMaxJsonBytes;

// The largest magnitude a weight may have: the largest finite fp16. Every mode must be able to
// start from a checkpoint, and amp-fp16 copies the weights to fp16, where a larger one is infinite.
constexpr double kMaxWeight = 65504.0;

// What a safetensors file must hold: its data's size (from config.json's sizes, checked before the
// file is read), what its values may be, and the words that name those sizes in an error.
struct Expected {
  std::uint64_t data_bytes = 0;
  double max_abs = 0;  // a larger magnitude, infinity or NaN is refused
  std::string sizes;   // "config.json's sizes (vocab_size 60, ...) make 12345 parameters"
};

// The file's parameters (wte with the real vocabulary's rows, as the file holds it), in 64 bits:
// the bounded fields keep every product far inside them.
std::uint64_t file_parameters(const GptConfig& config) {
  return static_cast<std::uint64_t>(parameter_count(config)) -
         static_cast<std::uint64_t>(config.padded_vocab() - config.vocab) * static_cast<std::uint64_t>(config.channels);
}

Expected expected_file(const GptConfig& config, const fs::path& config_path, double max_abs) {
  const std::uint64_t parameters = file_parameters(config);
  return {parameters * sizeof(float), max_abs,
          fmt::format("'{}' sizes (vocab_size {}, n_positions {}, n_embd {}, n_layer {}) make {} parameters",
                      config_path.string(), config.vocab, config.max_seq, config.channels, config.layers, parameters)};
}

// The bytes of safetensors file `path`, read only when its size can hold the expected data: a
// config.json that claims a larger model than the weights file holds costs no memory.
std::string read_safetensors_bytes(const fs::path& path, const Expected& expected) {
  std::error_code ec;
  const std::uintmax_t size = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
  if (!ec && size > 0 && (size < 8 + expected.data_bytes || size > 8 + kMaxHeaderBytes + expected.data_bytes)) {
    throw UsageError(fmt::format("'{}' has {} bytes, but {}: {} bytes of fp32 data after the header; the files do "
                                 "not belong together",
                                 path.string(), size, expected.sizes, expected.data_bytes));
  }
  return read_bytes(path);
}

// The first of the `n` fp32 values at `data` (in the file's order, not aligned) that is not finite
// or larger than `max_abs`, as "element 3 is nan".
std::optional<std::string> bad_value(const char* data, std::size_t n, double max_abs) {
  for (std::size_t i = 0; i < n; ++i) {
    float value;
    std::memcpy(&value, data + i * sizeof(float), sizeof(float));
    if (!(std::fabs(value) <= max_abs)) return fmt::format("element {} is {}", i, value);
  }
  return std::nullopt;
}

// The values of safetensors file `path`, which must hold exactly `tensors` of `config` in fp32, in
// the parameter buffer's layout, with the data `expected` says.
std::vector<float> read_safetensors(const fs::path& path, const GptConfig& config,
                                    const std::vector<ParameterTensor>& tensors, const Expected& expected) {
  const std::string bytes = read_safetensors_bytes(path, expected);
  const auto invalid = [&](const std::string& why) {
    return UsageError(fmt::format("'{}' is not a safetensors file of config '{}': {}", path.string(), config.name, why));
  };
  if (bytes.size() < 8) throw invalid(fmt::format("{} bytes, too short for the 8-byte header length", bytes.size()));
  std::uint64_t header_length = 0;
  for (int i = 0; i < 8; ++i) header_length |= std::uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  if (header_length > bytes.size() - 8) {
    throw invalid(fmt::format("header length {} exceeds the {} bytes that follow it", header_length, bytes.size() - 8));
  }
  if (header_length > kMaxHeaderBytes) {
    throw invalid(fmt::format("header length {} is more than the {} bytes mpbench reads", header_length, kMaxHeaderBytes));
  }
  const json header = parse_json_file_text(bytes.substr(8, header_length), path);
  if (!header.is_object()) throw invalid("header is not a JSON object");
  const char* data = bytes.data() + 8 + header_length;
  const std::uint64_t data_size = bytes.size() - 8 - header_length;
  if (data_size != expected.data_bytes) {
    throw UsageError(fmt::format("'{}' holds {} bytes of data after its header, but {}: {} bytes in fp32; the files "
                                 "do not belong together",
                                 path.string(), data_size, expected.sizes, expected.data_bytes));
  }

  std::vector<float> values(tensors.back().offset + tensors.back().size, 0.0f);
  std::set<std::string> found;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::string>> spans;  // begin -> end, tensor
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const auto tensor = std::find_if(tensors.begin(), tensors.end(), [&](const auto& t) { return t.name == name; });
    if (tensor == tensors.end()) throw invalid(fmt::format("unknown tensor '{}'", name));
    const Layout layout = *layout_of(name, config);
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets")) {
      throw invalid(fmt::format("tensor '{}' lacks dtype, shape or data_offsets", name));
    }
    if (entry["dtype"] != "F32") throw invalid(fmt::format("tensor '{}' has dtype {}, expected F32", name, entry["dtype"].dump()));
    const json& shape = entry["shape"];
    if (!shape.is_array() || !std::all_of(shape.begin(), shape.end(), [](const json& d) { return d.is_number_unsigned(); }) ||
        shape.get<Shape>() != layout.file) {
      throw invalid(fmt::format("tensor '{}' has shape {}, expected {}", name, shape.dump(), shape_text(layout.file)));
    }
    const json& offsets = entry["data_offsets"];
    const std::uint64_t expected_bytes = static_cast<std::uint64_t>(count(layout.file)) * sizeof(float);
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned() || offsets[0].get<std::uint64_t>() > offsets[1].get<std::uint64_t>() ||
        offsets[1].get<std::uint64_t>() > data_size ||
        offsets[1].get<std::uint64_t>() - offsets[0].get<std::uint64_t>() != expected_bytes) {
      throw invalid(fmt::format("tensor '{}' has data_offsets {}, expected {} bytes within the {} of data", name,
                                offsets.dump(), expected_bytes, data_size));
    }
    if (const auto bad = bad_value(data + offsets[0].get<std::uint64_t>(), static_cast<std::size_t>(count(layout.file)),
                                   expected.max_abs)) {
      throw invalid(fmt::format("tensor '{}' {}: {}", name, *bad,
                                expected.max_abs < std::numeric_limits<float>::max()
                                    ? fmt::format("values must be finite and at most {} in magnitude (fp16's largest, "
                                                  "which amp-fp16 copies the weights to)", expected.max_abs)
                                    : std::string("values must be finite")));
    }
    from_file(layout, data + offsets[0].get<std::uint64_t>(), values.data() + tensor->offset);
    found.insert(name);
    const auto [span, added] = spans.emplace(offsets[0].get<std::uint64_t>(), std::pair{offsets[1].get<std::uint64_t>(), name});
    if (!added) {
      throw invalid(fmt::format("tensors '{}' and '{}' both start at byte {} of the data: the tensors overlap",
                                span->second.second, name, span->first));
    }
  }
  for (const ParameterTensor& tensor : tensors) {
    if (!found.contains(tensor.name)) throw invalid(fmt::format("tensor '{}' is missing", tensor.name));
  }
  // The tensors' data must tile the data section: no byte read twice, none left out.
  std::uint64_t covered = 0;
  for (const auto& [begin, end_and_name] : spans) {
    if (begin != covered)
      throw invalid(fmt::format("tensor '{}' starts at byte {} of the data, where {}", end_and_name.second, begin,
                                begin < covered ? "an earlier tensor's data still runs: the tensors overlap"
                                                : fmt::format("the data from byte {} belongs to no tensor", covered)));
    covered = end_and_name.first;
  }
  if (covered != data_size)
    throw invalid(fmt::format("the data's last {} bytes belong to no tensor", data_size - covered));
  return values;
}

json config_json(const GptConfig& config, const json& info) {
  return {{"model_type", "gpt2"},
          {"architectures", {"GPT2LMHeadModel"}},
          {"vocab_size", config.vocab},
          {"n_positions", config.max_seq},
          {"n_embd", config.channels},
          {"n_layer", config.layers},
          {"n_head", config.heads},
          {"n_inner", nullptr},  // 4 * n_embd
          {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", kLayerNormEpsilon},
          {"resid_pdrop", 0.0},
          {"embd_pdrop", 0.0},
          {"attn_pdrop", 0.0},
          {"scale_attn_weights", true},
          {"tie_word_embeddings", true},
          {"bos_token_id", nullptr},  // the synthetic vocabularies have no special tokens
          {"eos_token_id", nullptr},
          {"torch_dtype", "float32"},
          {"mpbench", {{"config", config.name}, {"vocab_pad", config.vocab_pad}, {"info", info}}}};
}

GptConfig parse_config(const json& doc, const fs::path& path) {
  if (!doc.is_object()) throw UsageError(fmt::format("'{}' is not a JSON object", path.string()));
  // Settings the model cannot change: a checkpoint with other values would not be the same network.
  const std::pair<const char*, json> fixed[] = {{"model_type", "gpt2"},
                                                {"activation_function", "gelu_new"},
                                                {"layer_norm_epsilon", kLayerNormEpsilon},
                                                {"tie_word_embeddings", true}};
  for (const auto& [field, value] : fixed) {
    if (doc.contains(field) && doc[field] != value) {
      throw UsageError(fmt::format("'{}': {} is {}, mpbench's GPT-2 needs {}", path.string(), field, doc[field].dump(),
                                   value.dump()));
    }
  }
  // Each size far beyond the largest GPT-2 (50257 tokens, 1024 positions, 1600 channels, 48
  // layers), and small enough that the parameter count stays exact in 64 bits.
  const int vocab = integer(doc, "vocab_size", path, 1, 1 << 24);
  const int positions = integer(doc, "n_positions", path, 1, 1 << 20);
  const int channels = integer(doc, "n_embd", path, 1, 1 << 16);
  const int layers = integer(doc, "n_layer", path, 0, 1 << 12);
  const int heads = integer(doc, "n_head", path, 1, channels);
  const json mpbench = doc.value("mpbench", json::object());
  if (!mpbench.is_object()) throw UsageError(fmt::format("'{}': field 'mpbench' is not an object", path.string()));
  const int vocab_pad = mpbench.contains("vocab_pad") ? integer(mpbench, "vocab_pad", path, 1, kMaxVocabPad) : 1;
  const json name = mpbench.value("config", json("hf"));
  if (!name.is_string()) throw UsageError(fmt::format("'{}': mpbench.config is not a string", path.string()));
  GptConfig config{name.get<std::string>(), vocab, vocab_pad, positions, layers, heads, channels};
  const auto names = config_names();
  if (std::find(names.begin(), names.end(), config.name) != names.end()) {
    const GptConfig known = config_by_name(config.name, vocab_pad);
    const std::pair<const char*, std::pair<int, int>> fields[] = {{"vocab_size", {vocab, known.vocab}},
                                                                  {"n_positions", {positions, known.max_seq}},
                                                                  {"n_embd", {channels, known.channels}},
                                                                  {"n_layer", {layers, known.layers}},
                                                                  {"n_head", {heads, known.heads}}};
    for (const auto& [field, values] : fields) {
      if (values.first != values.second) {
        throw UsageError(fmt::format("'{}': {} is {} but config '{}' has {}", path.string(), field, values.first,
                                     config.name, values.second));
      }
    }
    return known;
  }
  if (channels % heads != 0) {
    throw UsageError(fmt::format("'{}': n_embd {} is not a multiple of n_head {}", path.string(), channels, heads));
  }
  // The padding rows are memory the file does not pay for: no more of them than the file holds values.
  const std::uint64_t padding = static_cast<std::uint64_t>(config.padded_vocab() - vocab) * channels;
  if (padding > file_parameters(config)) {
    throw UsageError(fmt::format("'{}': mpbench.vocab_pad {} pads the {} tokens to {} rows, more padding than the "
                                 "checkpoint has parameters",
                                 path.string(), vocab_pad, vocab, config.padded_vocab()));
  }
  return config;
}

json batch_json(const CheckpointBatch& batch) {
  json inputs = json::array(), targets = json::array();
  for (int b = 0; b < batch.batch; ++b) {
    const auto row = static_cast<std::ptrdiff_t>(b) * batch.seq_len;
    inputs.push_back(std::vector<std::int32_t>(batch.inputs.begin() + row, batch.inputs.begin() + row + batch.seq_len));
    targets.push_back(
        std::vector<std::int32_t>(batch.targets.begin() + row, batch.targets.begin() + row + batch.seq_len));
  }
  json doc = {{"batch", batch.batch}, {"seq_len", batch.seq_len}, {"inputs", inputs}, {"targets", targets},
              {"loss", batch.loss}};
  if (!batch.in_mode.empty()) {
    doc["in_mode"] = batch.in_mode;
    doc["loss_in_mode"] = batch.loss_in_mode;
  }
  return doc;
}

// [batch][seq_len] tokens in [0, vocab), flattened; `field` of batch.json.
std::vector<std::int32_t> token_rows(const json& doc, const char* field, int batch, int seq_len, int vocab,
                                     const fs::path& path) {
  const auto it = doc.find(field);
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("'{}': {} {}", path.string(), field, why));
  };
  if (it == doc.end() || !it->is_array() || it->size() != static_cast<std::size_t>(batch)) {
    throw bad(fmt::format("is not a list of {} rows", batch));
  }
  std::vector<std::int32_t> tokens;
  for (const json& row : *it) {
    if (!row.is_array() || row.size() != static_cast<std::size_t>(seq_len)) {
      throw bad(fmt::format("has a row that is not a list of {} tokens", seq_len));
    }
    for (const json& token : row) {
      if (!token.is_number_integer() || token.get<std::int64_t>() < 0 || token.get<std::int64_t>() >= vocab) {
        throw bad(fmt::format("holds {}, not a token in [0, {})", token.dump(), vocab));
      }
      tokens.push_back(token.get<std::int32_t>());
    }
  }
  return tokens;
}

CheckpointBatch parse_batch(const json& doc, const GptConfig& config, const fs::path& path) {
  if (!doc.is_object()) throw UsageError(fmt::format("'{}' is not a JSON object", path.string()));
  CheckpointBatch batch;
  batch.batch = integer(doc, "batch", path, 1);
  batch.seq_len = integer(doc, "seq_len", path, 1);
  if (batch.seq_len > config.max_seq) {
    throw UsageError(fmt::format("'{}': seq_len {} exceeds n_positions {}", path.string(), batch.seq_len, config.max_seq));
  }
  batch.inputs = token_rows(doc, "inputs", batch.batch, batch.seq_len, config.vocab, path);
  batch.targets = token_rows(doc, "targets", batch.batch, batch.seq_len, config.vocab, path);
  const auto loss = doc.find("loss");
  if (loss == doc.end() || !loss->is_number() || !std::isfinite(loss->get<double>())) {
    throw UsageError(fmt::format("'{}': field 'loss' is missing or not a finite number", path.string()));
  }
  batch.loss = loss->get<double>();
  return batch;
}

void check_batch(const CheckpointBatch& batch, const GptConfig& config, std::size_t parameters) {
  const auto bad = [](const std::string& why) { return UsageError("cannot write a checkpoint's batch: " + why); };
  const std::size_t n = static_cast<std::size_t>(std::max(batch.batch, 0)) * std::max(batch.seq_len, 0);
  if (batch.batch < 1 || batch.seq_len < 1 || batch.seq_len > config.max_seq) {
    throw bad(fmt::format("batch {} x seq_len {} is empty or longer than the config's {} positions", batch.batch,
                          batch.seq_len, config.max_seq));
  }
  if (batch.inputs.size() != n || batch.targets.size() != n) {
    throw bad(fmt::format("{} inputs and {} targets for {} x {} tokens", batch.inputs.size(), batch.targets.size(),
                          batch.batch, batch.seq_len));
  }
  const auto outside = [&](std::int32_t t) { return t < 0 || t >= config.vocab; };
  if (std::any_of(batch.inputs.begin(), batch.inputs.end(), outside) ||
      std::any_of(batch.targets.begin(), batch.targets.end(), outside)) {
    throw bad(fmt::format("a token is outside the vocabulary of {}", config.vocab));
  }
  if (!std::isfinite(batch.loss)) throw bad(fmt::format("the loss is {}", batch.loss));
  if (!batch.grads.empty() && batch.grads.size() != parameters) {
    throw bad(fmt::format("{} gradients for {} parameters", batch.grads.size(), parameters));
  }
  if (!batch.in_mode.empty() && !std::isfinite(batch.loss_in_mode))
    throw bad(fmt::format("the loss in {} is {}", batch.in_mode, batch.loss_in_mode));
  if (!batch.grads_in_mode.empty() && (batch.in_mode.empty() || batch.grads_in_mode.size() != parameters)) {
    throw bad(fmt::format("{} gradients in mode '{}' for {} parameters", batch.grads_in_mode.size(), batch.in_mode,
                          parameters));
  }
}

}  // namespace

void write_checkpoint(const fs::path& dir, const GptConfig& config, const std::vector<ParameterTensor>& tensors,
                      const std::vector<float>& params, const CheckpointBatch& batch, const json& mpbench_info) {
  check_batch(batch, config, params.size());
  const std::string model = safetensors(config, tensors, params, {{"format", "pt"}});
  // One unit: a kill midway must not leave new weights beside an old config or gradient.
  write_folder_atomically(dir, [&](const fs::path& fresh) {
    write_file_atomically(fresh / "model.safetensors", model);
    write_file_atomically(fresh / "config.json", config_json(config, mpbench_info).dump(2) + "\n");
    write_file_atomically(fresh / "batch.json", batch_json(batch).dump() + "\n");
    if (!batch.grads.empty())
      write_file_atomically(fresh / "grads.safetensors", safetensors(config, tensors, batch.grads, {{"format", "pt"}}));
    if (!batch.grads_in_mode.empty())
      write_file_atomically(fresh / "grads_in_mode.safetensors",
                            safetensors(config, tensors, batch.grads_in_mode, {{"format", "pt"}}));
  });
}

Checkpoint read_checkpoint(const fs::path& dir) {
  Checkpoint checkpoint;
  const fs::path config_path = dir / "config.json";
  const json config = read_json(config_path);
  checkpoint.config = parse_config(config, config_path);
  checkpoint.info = config.value("mpbench", json::object()).value("info", json());
  const std::vector<ParameterTensor> tensors = parameter_layout(checkpoint.config);
  checkpoint.params = read_safetensors(dir / "model.safetensors", checkpoint.config, tensors,
                                       expected_file(checkpoint.config, config_path, kMaxWeight));
  const fs::path batch_path = dir / "batch.json", grads_path = dir / "grads.safetensors";
  std::error_code ec;
  if (fs::exists(batch_path, ec)) {
    checkpoint.batch = parse_batch(read_json(batch_path), checkpoint.config, batch_path);
    if (fs::exists(grads_path, ec))
      checkpoint.batch->grads = read_safetensors(grads_path, checkpoint.config, tensors,
                                                 expected_file(checkpoint.config, config_path,
                                                               std::numeric_limits<float>::max()));
  } else if (fs::exists(grads_path, ec)) {
    throw UsageError(fmt::format("'{}' has no batch.json beside it to say what loss it is the gradient of",
                                 grads_path.string()));
  }
  return checkpoint;
}

std::vector<float> params_for(const Checkpoint& checkpoint, const GptConfig& target) {
  const auto from = parameter_layout(checkpoint.config), to = parameter_layout(target);
  if (from.size() != to.size() || checkpoint.config.vocab != target.vocab ||
      checkpoint.config.channels != target.channels)
    throw UsageError(fmt::format("a {} checkpoint cannot start a {} model", checkpoint.config.name, target.name));
  std::vector<float> params(static_cast<std::size_t>(parameter_count(target)), 0.0f);
  for (std::size_t i = 0; i < from.size(); ++i) {
    // The real rows of a padded tensor (the token embedding), every element of the others.
    const std::size_t real = from[i].name == "wte.weight"
                                 ? static_cast<std::size_t>(target.vocab) * target.channels
                                 : std::min(from[i].size, to[i].size);
    std::copy_n(checkpoint.params.begin() + static_cast<std::ptrdiff_t>(from[i].offset), real,
                params.begin() + static_cast<std::ptrdiff_t>(to[i].offset));
  }
  return params;
}

CheckpointBatch evaluate_batch(Gpt2Model<float>& model, const TokenBatch& batch) {
  const std::size_t n = static_cast<std::size_t>(std::max(batch.batch, 0)) * std::max(batch.seq_len, 0);
  if (n == 0 || batch.inputs.size() != n || batch.targets.size() != n) {
    throw UsageError(fmt::format("cannot evaluate a batch of {} x {} tokens with {} inputs and {} targets", batch.batch,
                                 batch.seq_len, batch.inputs.size(), batch.targets.size()));
  }
  CheckpointBatch out{batch.batch, batch.seq_len, batch.inputs, batch.targets, 0.0, {}, {}, 0.0, {}};
  model.zero_grad();
  out.loss = model.forward(batch.inputs.data(), batch.targets.data());
  model.backward(1.0);
  out.grads = model.download_grads();
  return out;
}

}  // namespace mpbench::workloads
