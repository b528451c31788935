#include "compare/sides.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "core/error.hpp"

namespace mpbench::compare {

std::string CaseKey::label() const { return fmt::format("{}/{}/{}/{}", suite, name, backend, precision); }

CaseKey key_of(const CaseResult& c) { return {c.suite, c.name, c.backend, c.precision}; }

CaseKeyView view_of(const CaseResult& c) { return {c.suite, c.name, c.backend, c.precision}; }

CaseKey to_key(const CaseKeyView& v) {
  return {std::string(v.suite), std::string(v.name), std::string(v.backend), std::string(v.precision)};
}

namespace {

// The case as a side keeps it (Run::params).
void keep_params_as_text(CaseResult& c, std::vector<std::string>& params) {
  params.push_back(c.params.dump());
  c.params = nullptr;
  if (c.details.empty()) c.details = nullptr;
}

void keep_params_as_text(Run& run) {
  if (run.params.size() == run.document.cases.size()) return;  // read so (load_side)
  run.params.clear();
  for (CaseResult& c : run.document.cases) keep_params_as_text(c, run.params);
}

Run read_run(const std::filesystem::path& path) {
  Run run(path.string(), {});
  run.document = load_result(path, [&run](CaseResult& c) { keep_params_as_text(c, run.params); });
  return run;
}

std::string string_at(const nlohmann::json& j, const std::string& pointer) {
  const nlohmann::json::json_pointer p(pointer);
  return j.contains(p) && j.at(p).is_string() ? j.at(p).get<std::string>() : "";
}

bool ran_on_gpu(const ResultDocument& doc) {
  if (doc.run.contains("device") && doc.run["device"].is_string())
    return doc.run["device"].get<std::string>().rfind("cuda", 0) == 0;
  return std::any_of(doc.cases.begin(), doc.cases.end(), [](const CaseResult& c) { return c.backend == "cuda"; });
}

std::string gpu_machine(const ResultDocument& doc) {
  std::string name = string_at(doc.env, "/device/name");
  if (name.empty()) name = string_at(doc.env, "/gpus/0/name");
  return fmt::format("GPU {}, CUDA {}", name.empty() ? "?" : name, string_at(doc.env, "/cuda/runtime"));
}

std::vector<std::string> cpu_flags_present(const nlohmann::json& env) {
  std::vector<std::string> present;
  const nlohmann::json::json_pointer p("/cpu/flags");
  if (!env.contains(p) || !env.at(p).is_object()) return present;
  for (const auto& [flag, has] : env.at(p).items())
    if (has.is_boolean() && has.get<bool>()) present.push_back(flag);
  return present;
}

// --cpu-isa, else oneDNN's own environment variable, else none.
std::string isa_limit(const ResultDocument& doc) {
  for (const std::string& limit : {string_at(doc.run, "/cpu_isa"), string_at(doc.env, "/onednn/max_isa_env")})
    if (!limit.empty()) return limit;
  return "none";
}

std::string cpu_hardware(const ResultDocument& doc) {
  const std::string model = string_at(doc.env, "/cpu/model");
  return fmt::format("CPU {}, ISA {}", model.empty() ? "?" : model, fmt::join(cpu_flags_present(doc.env), " "));
}

std::string cpu_machine(const ResultDocument& doc) {
  return fmt::format("{}, ISA limit {}", cpu_hardware(doc), isa_limit(doc));
}

// Every result document of a folder, sorted by name; other JSON goes to `ignored`.
std::vector<Run> load_folder(const std::filesystem::path& folder, std::vector<std::string>& ignored) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<Run> runs;
  for (const auto& file : files) {
    const auto j = read_document_json(file);
    // Google Benchmark's JSON and other tools' files may sit beside the results.
    if (!j.is_object() || !j.contains("schema")) {
      ignored.push_back(file.string());
      continue;
    }
    runs.push_back({file.string(), result_from_json(file, j)});
  }
  if (runs.empty())
    throw UsageError(fmt::format("folder '{}' holds no mpbench result document (*.json with \"schema\": \"{}\")",
                                 folder.string(), kResultSchema));
  return runs;
}

void check_one_selection(const Side& side) {
  const Run& first = side.runs.front();
  for (const Run& run : side.runs)
    if (suites_of(run.document) != suites_of(first.document))
      throw UsageError(fmt::format("{}: documents of different suites on one side: '{}' has {}, '{}' has {}; a side "
                                   "holds repeated runs of one `mpbench run --suite` selection",
                                   side.name, first.source, fmt::join(suites_of(first.document), ","), run.source,
                                   fmt::join(suites_of(run.document), ",")));
}

void check_one_machine(const Side& side) {
  const Run& first = side.runs.front();
  for (const Run& run : side.runs)
    if (machine_of(run.document) != machine_of(first.document))
      throw UsageError(fmt::format("{}: documents of different machines on one side: '{}' ran on {}; '{}' on {}; "
                                   "compare one machine per side",
                                   side.name, first.source, machine_of(first.document), run.source,
                                   machine_of(run.document)));
}

// PyTorch's runs are no repetitions of mpbench's: each tool goes on a side of its own.
void check_one_tool(const Side& side) {
  const Run& first = side.runs.front();
  for (const Run& run : side.runs)
    if (is_torch_document(run.document) != is_torch_document(first.document)) {
      const bool first_torch = is_torch_document(first.document);
      throw UsageError(fmt::format("{}: '{}' is {}'s document and '{}' {}'s: a side holds runs of one tool; put "
                                   "mpbench's on one side and PyTorch's on the other",
                                   side.name, printable(first.source), first_torch ? "PyTorch" : "mpbench",
                                   printable(run.source), first_torch ? "mpbench" : "PyTorch"));
    }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;  // an in-memory run's source names no file
  return std::filesystem::equivalent(a, b, error);
}

// A run given twice (the same file, through two paths or a folder and a file in it, or a copy of
// it) would count as two repetitions that agree perfectly, and narrow the interval on nothing.
// What tells runs apart in practice, cheap to hash: when it was made, where, what was asked and how
// many cases; documents that agree on it are compared whole. (Serializing every document to hash
// it took a fifth of a compare of 10k cases.)
std::size_t fingerprint(const ResultDocument& doc) {
  const std::string summary = fmt::format("{}\n{}\n{}\n{}", doc.created, doc.env.dump(), doc.run.dump(), doc.cases.size());
  return std::hash<std::string>{}(summary);
}

void check_each_run_once(const Side& side) {
  std::unordered_multimap<std::size_t, std::size_t> seen;  // fingerprint of a document -> its run
  for (std::size_t i = 0; i < side.runs.size(); ++i) {
    const Run& run = side.runs[i];
    const std::size_t hash = fingerprint(run.document);
    const auto [begin, end] = seen.equal_range(hash);
    for (auto it = begin; it != end; ++it) {
      const Run& earlier = side.runs[it->second];
      if (earlier.params != run.params || earlier.document.to_json() != run.document.to_json()) continue;
      throw UsageError(fmt::format("{}: '{}' and '{}' {}: a run given twice would count as two agreeing "
                                   "repetitions; give each run once",
                                   side.name, printable(earlier.source), printable(run.source),
                                   same_file(earlier.source, run.source) ? "are the same file"
                                                                         : "hold the same run (identical documents)"));
    }
    seen.emplace(hash, i);
  }
}

}  // namespace

bool is_torch_backend(std::string_view backend) { return backend == "torch" || backend == "torch-compile"; }

bool is_torch_document(const ResultDocument& doc) {
  return !doc.cases.empty() &&
         std::all_of(doc.cases.begin(), doc.cases.end(), [](const CaseResult& c) { return is_torch_backend(c.backend); });
}

std::string machine_of(const ResultDocument& doc) { return ran_on_gpu(doc) ? gpu_machine(doc) : cpu_machine(doc); }

std::string hardware_of(const ResultDocument& doc) { return ran_on_gpu(doc) ? gpu_machine(doc) : cpu_hardware(doc); }

std::set<std::string> suites_of(const ResultDocument& doc) {
  std::set<std::string> suites;
  if (doc.run.contains("suites") && doc.run["suites"].is_array())
    for (const auto& s : doc.run["suites"])
      if (s.is_string()) suites.insert(s.get<std::string>());
  if (suites.empty())
    for (const auto& c : doc.cases) suites.insert(c.suite);
  return suites;
}

std::vector<std::string> Side::sources() const {
  std::vector<std::string> out;
  for (const auto& run : runs) out.push_back(run.source);
  return out;
}

std::string Side::machine() const { return runs.empty() ? "" : machine_of(runs.front().document); }

std::set<CaseKey> Side::case_keys() const {
  std::set<CaseKey> keys;
  for (const auto& run : runs)
    for (const auto& c : run.document.cases) keys.insert(key_of(c));
  return keys;
}

Side make_side(std::string name, std::vector<Run> runs, std::vector<std::string> ignored_files) {
  for (Run& run : runs) keep_params_as_text(run);
  Side side{std::move(name), std::move(runs), std::move(ignored_files)};
  if (side.runs.empty()) throw UsageError(fmt::format("{}: no result document given", side.name));
  check_each_run_once(side);
  check_one_tool(side);
  check_one_selection(side);
  check_one_machine(side);
  return side;
}

Side load_side(std::string name, const std::vector<std::filesystem::path>& paths) {
  std::vector<Run> runs;
  std::vector<std::string> ignored;
  for (const auto& path : paths) {
    if (!std::filesystem::exists(path))
      throw UsageError(fmt::format("cannot read '{}': no such file or folder", path.string()));
    if (std::filesystem::is_directory(path)) {
      auto from_folder = load_folder(path, ignored);
      std::move(from_folder.begin(), from_folder.end(), std::back_inserter(runs));
    } else {
      runs.push_back(read_run(path));
    }
  }
  return make_side(std::move(name), std::move(runs), std::move(ignored));
}

void require_runs(const Side& side, int min_runs) {
  if (static_cast<int>(side.runs.size()) >= min_runs) return;
  throw UsageError(fmt::format("{}: {} run{} ({}), --min-runs asks for {}: repeat the same `mpbench run` and pass "
                               "every document (or their folder)",
                               side.name, side.runs.size(), side.runs.size() == 1 ? "" : "s",
                               fmt::join(side.sources(), ", "), min_runs));
}

}  // namespace mpbench::compare
