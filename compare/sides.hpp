#pragma once
// The two sides of a comparison. A side is one or more runs (result documents): repetitions of
// one `mpbench run`, or a baseline's history. Every run of a side must cover the same suites on
// the same machine, so that the runs of a case differ only by noise.
#include <compare>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace mpbench::compare {

struct CaseKey {
  std::string suite, name, backend, precision;
  auto operator<=>(const CaseKey&) const = default;
  std::string label() const;  // suite/name/backend/precision
};
CaseKey key_of(const CaseResult& c);

// A case's identity as views of its strings, for indexes over a million cases (a CaseKey is four
// strings of its own). Ordered as CaseKey is.
struct CaseKeyView {
  std::string_view suite, name, backend, precision;
  auto operator<=>(const CaseKeyView&) const = default;
};
CaseKeyView view_of(const CaseResult& c);
CaseKey to_key(const CaseKeyView& view);

struct Run {
  Run(std::string source_file, ResultDocument doc) : source(std::move(source_file)), document(std::move(doc)) {}
  std::string source;  // the file it came from, for messages
  ResultDocument document;
  // A side keeps each case's params as JSON text, here, one per case in order, and the case's
  // own params null (and empty details null): compare reads params only to list those that
  // changed, and as objects they were half the memory of a million cases. make_side fills it.
  std::vector<std::string> params;
};

struct Side {
  std::string name;  // "base" or "new"
  std::vector<Run> runs;
  std::vector<std::string> ignored_files;  // JSON in a folder that is not an mpbench result

  std::vector<std::string> sources() const;
  std::string machine() const;  // machine_of() of its runs (one, checked)
  std::set<CaseKey> case_keys() const;
};

// PyTorch's backends in documents of scripts/torch_baseline.py: torch, torch-compile.
bool is_torch_backend(std::string_view backend);
// Every case of the document is PyTorch's (and it has one).
bool is_torch_document(const ResultDocument& doc);

// The machine a run measured: "CPU <model>, ISA <flags it has>, ISA limit <--cpu-isa or none>",
// or "GPU <name>, CUDA <runtime>" for a run on a GPU.
std::string machine_of(const ResultDocument& doc);
// The hardware alone: machine_of() without the ISA limit, which is a setting of the run (another
// tool's documents, PyTorch's, record none).
std::string hardware_of(const ResultDocument& doc);
// run.suites, or the suites of its cases for a document without them.
std::set<std::string> suites_of(const ResultDocument& doc);

// Files and folders (every *.json in a folder whose top level has a "schema" field; Google
// Benchmark's JSON beside them is listed as ignored). Throws UsageError, on one line, for a
// missing path, malformed JSON, another schema version, a folder without a result document, or
// runs of different suites or machines, or of mpbench and PyTorch, on the side.
Side load_side(std::string name, const std::vector<std::filesystem::path>& paths);
// The same checks on documents already in memory.
Side make_side(std::string name, std::vector<Run> runs, std::vector<std::string> ignored_files = {});
// Throws UsageError when the side has fewer than `min_runs` runs.
void require_runs(const Side& side, int min_runs);

}  // namespace mpbench::compare
